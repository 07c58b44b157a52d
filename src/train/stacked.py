"""The stacked step of a pack (train.pack): K runs' parameters stacked ([K, ...], torch.func's
stack_module_state), one vmapped forward and backward over their shared batch (functional_call;
randomness="same": one dropout mask for the pack, the one each run draws alone), each run's own
loss, and AdamW per run as torch.optim.AdamW(fused=True) steps it alone: the fused kernel on each
live member's views of the stacked tensors, one call per distinct lr (the lr multiplier's groups
included); constant lr, no warm-up, no gradient clipping, as the unpacked loop. Imports only torch,
so bench/gpu.py times this very step where the pipeline's other dependencies are missing.

Exactness: it computes the reference's math (src/train/alone.AlonePath) with batched kernels
(one [K, ...] matmul in place of K matmuls), so its gradients differ from a run trained alone in
the last bits (on the CPU: logits 9e-8 apart after one step), within STACKED_LOSS_RTOL and
STACKED_CHANGE_RTOL (tests/unit/train/test_packed.py); its optimizer step is the reference's bit
for bit (tests/unit/train/test_stacked_adamw.py). On the CPU a run's numbers do not depend on its
pack mates, their order or their number, bit for bit; GPU kernels may pick another algorithm by
the pack size, so a pack keeps its size K from start to end (a member that leaves keeps its slot,
frozen: the step's kernels stay those of K runs), each run records the sizes it trained at
(RunResult.pack_sizes) and its fingerprint holds them (packed.keys_at), and which runs share a
pack is not.
"""

from __future__ import annotations

import copy
import functools
import os
import sys
import types
from typing import TYPE_CHECKING

import torch
from torch import nn
from torch.func import functional_call, stack_module_state, vmap

from src.train.device import autocast

if TYPE_CHECKING:  # annotations only
    from src.tasks.registry import TaskSpec

BETAS, EPS = (0.9, 0.999), 1e-8  # torch.optim.AdamW's defaults, which the unpacked loop uses
# StackedPath against the reference path, as tests/unit/train/test_packed.py holds it (tiny model,
# 3 members, 6 and 12 steps at lr 1e-3 and 5e-3, fp32 on the CPU; measured in brackets): each
# step's loss within this relative difference (1.1e-7), and the weights' change from their start
# within this share of its norm (2.3e-4: Adam's update is about lr wherever the gradient is
# small, so tiny differences there move a weight by up to ~lr; the change as a whole agrees).
STACKED_LOSS_RTOL, STACKED_CHANGE_RTOL = 1e-5, 1e-3


class StackedPath:
    """All members in one step: stacked parameters, one vmapped forward and backward, per-member
    AdamW. Each member's model keeps its parameters as views of its slot of the stacked tensors,
    so evaluating or measuring it reads its current weights and memory holds them once. A
    member that leaves gets its own copy of its weights; its slot stays in the stack, frozen (no
    loss, no update), so the pack's size, and with it the kernels its members step by, stays K
    until the last member leaves, and no member's leaving copies the stack."""

    def __init__(self, members: list, task: TaskSpec):  # members: src/train/loop.Member
        if any(m.settings.precision == "fp16" for m in members):
            # GradScaler skips a step for every parameter when one gradient is not finite: in a
            # pack one diverging member would stall the others.
            raise ValueError("a stacked pack trains in bf16 or fp32; fp16 loss scaling is per run")
        self.members, self.task = members, task
        self.slots = list(range(len(members)))  # member index of each slot
        models = [m.model for m in members]
        self.device = next(models[0].parameters()).device
        self.precision = members[0].settings.precision
        self.weight_decay = members[0].settings.weight_decay
        self.base = copy.deepcopy(models[0]).to("meta")  # the module structure functional_call runs
        # vmap(randomness="same") has no rule for CUDA's fused dropout kernel (nor for the dropout
        # inside fused attention): on CUDA a pack draws its one mask per dropout with torch.rand
        # of a member's shape, in eager attention. The mask is the pack's, shared by its members
        # whatever their number and order, but not the mask the fused kernel draws for a run
        # alone: a packed CUDA run is another draw of the dropout noise, not that run's bits.
        if shared_mask_for(self.device):
            _draw_shared_masks(self.base)
        self.buffers = dict(models[0].named_buffers())  # position ids: the same in every member
        self.params, _ = stack_module_state(models)
        self.exp_avg = {n: torch.zeros_like(p) for n, p in self.params.items()}
        self.exp_avg_sq = {n: torch.zeros_like(p) for n, p in self.params.items()}
        self.steps = 0
        # the step count as the fused kernel reads it (float32 on the device, as AdamW keeps it)
        self.step_count = torch.zeros((), dtype=torch.float32, device=self.device)
        self.left: set[int] = set()  # members whose slots are frozen
        # [first step, pack size] from each (re)start of this run's training: RunResult.pack_sizes
        self.sizes = [[0, len(members)]]
        self._regroup()
        self._point_members()

    def _lr(self, member, name: str) -> float:
        return member.settings.lr * (member.lr_multiplier if name in member.fresh else 1.0)

    @property
    def live(self) -> list[int]:
        return [i for i in self.slots if i not in self.left]

    def _regroup(self) -> None:
        """The live members' views of the stack grouped by their lr (one fused AdamW call each): for
        every live slot, its slice of each parameter, gradient and moment. A frozen slot is in no
        group: it is never stepped again."""
        groups: dict[float, list[tuple[int, str]]] = {}
        for slot, i in enumerate(self.slots):
            if i in self.left:
                continue
            for name in self.params:
                groups.setdefault(self._lr(self.members[i], name), []).append((slot, name))
        self.groups = list(groups.items())

    def _point_members(self) -> None:
        with torch.no_grad():
            for slot, i in enumerate(self.slots):
                for name, parameter in self.members[i].model.named_parameters():
                    parameter.data = self.params[name].detach()[slot]

    def step(self, live: list[int], batch: dict, labels: torch.Tensor) -> torch.Tensor:
        if live != self.live:
            raise RuntimeError(f"the loop's live members {live} are not the pack's {self.live}")
        _simulated_out_of_memory(len(self.slots))

        def forward(params: dict, batch: dict) -> torch.Tensor:
            return functional_call(self.base, (params, self.buffers), args=(), kwargs=batch)

        self.base.train()
        with autocast(self.precision, self.device):
            logits = vmap(forward, in_dims=(0, None), randomness="same")(self.params, batch)
            losses = torch.stack([self.task.kind.loss(logits[self.slots.index(i)], labels) for i in live])
        # The sum's gradient is each member's own: a non-finite loss of one reaches no other slot,
        # and a frozen slot's loss is not in it.
        grads = dict(zip(self.params, torch.autograd.grad(losses.sum(), list(self.params.values()))))
        with torch.no_grad():
            self._adamw(grads)
        return losses.detach()

    def _adamw(self, grads: dict) -> None:
        """torch.optim.AdamW(fused=True)'s update, the one-run path's (src/train/alone.py), on each
        member's views of the stack: the same kernel on the same tensors, so given the same
        gradients every member's weights and moments are those of its run alone, bit for bit
        (tests/unit/train/test_stacked_adamw.py). One call per distinct lr, over every slot."""
        self.steps += 1
        self.step_count.fill_(self.steps)
        for lr, views in self.groups:
            torch._fused_adamw_(
                [self.params[n].detach()[slot] for slot, n in views],
                # laid out as the parameter (autograd may hand back a transposed view, which the
                # fused kernel would read as if it were not): what AdamW's p.grad always is
                [grads[n][slot].contiguous() for slot, n in views],
                [self.exp_avg[n][slot] for slot, n in views],
                [self.exp_avg_sq[n][slot] for slot, n in views],
                [],
                [self.step_count] * len(views),
                lr=lr,
                beta1=BETAS[0],
                beta2=BETAS[1],
                weight_decay=self.weight_decay,
                eps=EPS,
                amsgrad=False,
                maximize=False,
            )

    def leave(self, i: int) -> None:
        """Member i leaves: its model gets its own copy of its weights (one run's, not the stack's),
        its slot stays, frozen: no loss, no update (it leaves every fused AdamW group)."""
        with torch.no_grad():
            for parameter in self.members[i].model.parameters():
                parameter.data = parameter.data.clone()
        self.left.add(i)
        if self.live:
            self._regroup()

    def state(self, i: int) -> dict:
        """Member i's training state, copied out of the stack (a view would save the whole pack),
        with the pack sizes it trained at so far."""
        slot = self.slots.index(i)
        return {
            "model": {n: t.clone() for n, t in self.members[i].model.state_dict().items()},
            "optimizer": {
                "step": self.steps,
                "exp_avg": {n: t[slot].clone() for n, t in self.exp_avg.items()},
                "exp_avg_sq": {n: t[slot].clone() for n, t in self.exp_avg_sq.items()},
                "pack_sizes": self.sizes,
            },
            "scaler": {},
        }

    def load(self, i: int, saved: dict) -> None:
        """Member i resumed from its checkpoint; the pack sizes gain this pack's from the step it
        resumes at where it differs from the size the checkpoint was saved at."""
        slot = self.slots.index(i)
        self.members[i].model.load_state_dict(saved["model"])  # into its views of the stack
        with torch.no_grad():
            for n in self.params:
                self.exp_avg[n][slot].copy_(saved["optimizer"]["exp_avg"][n])
                self.exp_avg_sq[n][slot].copy_(saved["optimizer"]["exp_avg_sq"][n])
        self.steps = saved["optimizer"]["step"]
        self.step_count.fill_(self.steps)
        before = [list(size) for size in saved["optimizer"]["pack_sizes"]]
        self.sizes = before + ([[self.steps, len(self.slots)]] if before[-1][1] != len(self.slots) else [])


def shared_mask_for(device: torch.device) -> bool:
    """Whether a pack on `device` draws its dropout masks with _shared_mask (_draw_shared_masks)."""
    return device.type == "cuda"


def _shared_mask(input: torch.Tensor, p: float = 0.5, training: bool = True, inplace: bool = False) -> torch.Tensor:
    """torch.nn.functional.dropout's signature, with a mask from torch.rand of the input's shape:
    under vmap(randomness="same") one draw for the whole pack, where the fused kernel has no
    batching rule."""
    if not training or p == 0:
        return input
    keep = torch.rand(input.shape, device=input.device) >= p
    return input * keep / (1 - p)


class SharedMaskDropout(nn.Dropout):
    """nn.Dropout drawing the pack's one mask (_shared_mask)."""

    def forward(self, input: torch.Tensor) -> torch.Tensor:
        return _shared_mask(input, self.p, self.training)


class _SharedMaskFunctional(types.SimpleNamespace):
    """torch.nn.functional as an attention function of the stacked model sees it: its dropout
    draws the pack's one mask, every other name is torch's."""

    dropout = staticmethod(_shared_mask)

    def __getattr__(self, name: str):
        return getattr(torch.nn.functional, name)


class _SharedMaskNN(types.SimpleNamespace):
    """torch.nn with _SharedMaskFunctional as its functional (what a family's attention calls)."""

    functional = _SharedMaskFunctional()

    def __getattr__(self, name: str):
        return getattr(torch.nn, name)


def _draw_shared_masks(model: nn.Module) -> None:
    """Every dropout of `model` (the stacked step's own copy: no other model, and no other code of
    this process, changes) draws the pack's one mask: its nn.Dropout modules become
    SharedMaskDropout, and its attention runs as its family's eager attention (matmul, softmax,
    dropout) with that dropout, registered with eager attention's masks under a name of its own
    (transformers' AttentionInterface) that only this copy's config names."""
    for module in model.modules():
        if type(module) is nn.Dropout:
            module.__class__ = SharedMaskDropout
        config = getattr(module, "config", None)
        eager = getattr(sys.modules[type(module).__module__], "eager_attention_forward", None)
        if config is not None and hasattr(config, "_attn_implementation") and eager is not None:
            config._attn_implementation = _shared_mask_attention(eager)


@functools.cache
def _shared_mask_attention(eager) -> str:
    """The name under which `eager` (a family's eager attention function) is registered with its
    dropout drawing the pack's one mask: the same code, its own globals."""
    from transformers import AttentionInterface
    from transformers.masking_utils import AttentionMaskInterface, eager_mask

    shared = types.FunctionType(
        eager.__code__,
        {**eager.__globals__, "nn": _SharedMaskNN(), "F": _SharedMaskFunctional()},
        eager.__name__,
        eager.__defaults__,
        eager.__closure__,
    )
    shared.__kwdefaults__ = eager.__kwdefaults__
    name = f"pack_shared_mask:{eager.__module__}"
    AttentionInterface.register(name, shared)
    AttentionMaskInterface.register(name, eager_mask)  # the masks eager attention is given
    return name


# A test hook, never set in a pipeline: a stacked step of more runs than this raises
# torch.OutOfMemoryError, as a GPU does when a pack does not fit (tests/e2e/test_faults.py).
SIMULATE_OOM_ABOVE = "TEST_HOOK_PACK_OOM_ABOVE"


def _simulated_out_of_memory(size: int) -> None:
    limit = os.environ.get(SIMULATE_OOM_ABOVE)
    if limit is not None and size > int(limit):
        raise torch.OutOfMemoryError(f"a pack of {size} runs does not fit (simulated: {SIMULATE_OOM_ABOVE}={limit})")
