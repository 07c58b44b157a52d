"""The stacked step of a pack (train.pack): K runs' parameters stacked ([K, ...], torch.func's
stack_module_state), one vmapped forward and backward over their shared batch (functional_call;
randomness="same": one dropout mask for the pack, the one each run draws alone), each run's own
loss, and AdamW per run as torch.optim.AdamW(fused=True) steps it alone: the fused kernel on each
member's views of the stacked tensors, one call per distinct lr (the lr multiplier's groups
included); constant lr, no warm-up, no gradient clipping, as the unpacked loop. Imports only torch, so
bench/gpu.py times this very step where the pipeline's other dependencies are missing.

Exactness: it computes the reference's math (src/train/alone.AlonePath) with batched kernels
(one [K, ...] matmul in place of K matmuls), so its gradients differ from a run trained alone in
the last bits (on the CPU: logits 9e-8 apart after one step), within STACKED_LOSS_RTOL and
STACKED_CHANGE_RTOL (tests/unit/train/test_packed.py); its optimizer step is the reference's bit
for bit (tests/unit/train/test_stacked_adamw.py). On the CPU a run's numbers do not depend on its
pack mates, their order or their number, bit for bit; GPU kernels may pick another algorithm by
the pack size, so the pack size is in a packed run's
fingerprint (as threads is), and which runs share a pack is not.
"""

from __future__ import annotations

import contextlib
import copy
from typing import TYPE_CHECKING

import torch
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
    so evaluating or measuring it reads its current weights and memory holds them once; a
    member that leaves gets its own copy and the pack shrinks."""

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
        self.shared_mask = shared_mask_for(self.device)
        if self.shared_mask:
            _eager_attention(self.base)
        self.buffers = dict(models[0].named_buffers())  # position ids: the same in every member
        self.params, _ = stack_module_state(models)
        self.exp_avg = {n: torch.zeros_like(p) for n, p in self.params.items()}
        self.exp_avg_sq = {n: torch.zeros_like(p) for n, p in self.params.items()}
        self.steps = 0
        # the step count as the fused kernel reads it (float32 on the device, as AdamW keeps it)
        self.step_count = torch.zeros((), dtype=torch.float32, device=self.device)
        self._regroup()
        self._point_members()

    def _lr(self, member, name: str) -> float:
        return member.settings.lr * (member.lr_multiplier if name in member.fresh else 1.0)

    def _regroup(self) -> None:
        """Per-member views of the stack grouped by their lr (one fused AdamW call each): for
        every slot, its slice of each parameter, gradient and moment."""
        groups: dict[float, list[tuple[int, str]]] = {}
        for slot, i in enumerate(self.slots):
            for name in self.params:
                groups.setdefault(self._lr(self.members[i], name), []).append((slot, name))
        self.groups = list(groups.items())

    def _point_members(self) -> None:
        with torch.no_grad():
            for slot, i in enumerate(self.slots):
                for name, parameter in self.members[i].model.named_parameters():
                    parameter.data = self.params[name].detach()[slot]

    def step(self, live: list[int], batch: dict, labels: torch.Tensor) -> torch.Tensor:
        if live != self.slots:
            raise RuntimeError(f"the loop's live members {live} are not the pack's {self.slots}")

        def forward(params: dict, batch: dict) -> torch.Tensor:
            return functional_call(self.base, (params, self.buffers), args=(), kwargs=batch)

        self.base.train()
        masks = _shared_mask_dropout() if self.shared_mask else contextlib.nullcontext()
        with masks, autocast(self.precision, self.device):
            logits = vmap(forward, in_dims=(0, None), randomness="same")(self.params, batch)
            losses = torch.stack([self.task.kind.loss(logits[slot], labels) for slot in range(len(self.slots))])
        # The sum's gradient is each member's own: a non-finite loss of one reaches no other slot.
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
        """Member i leaves: its model gets its own copy of its weights, the pack shrinks."""
        with torch.no_grad():
            for parameter in self.members[i].model.parameters():
                parameter.data = parameter.data.clone()
        keep = [slot for slot, member in enumerate(self.slots) if member != i]
        self.slots = [self.slots[slot] for slot in keep]
        index = torch.tensor(keep, dtype=torch.long, device=self.device)
        self.params = {n: p.detach()[index].requires_grad_() for n, p in self.params.items()}
        self.exp_avg = {n: t[index] for n, t in self.exp_avg.items()}
        self.exp_avg_sq = {n: t[index] for n, t in self.exp_avg_sq.items()}
        if self.slots:
            self._regroup()
            self._point_members()

    def state(self, i: int) -> dict:
        """Member i's training state, copied out of the stack (a view would save the whole pack)."""
        slot = self.slots.index(i)
        return {
            "model": {n: t.clone() for n, t in self.members[i].model.state_dict().items()},
            "optimizer": {
                "step": self.steps,
                "exp_avg": {n: t[slot].clone() for n, t in self.exp_avg.items()},
                "exp_avg_sq": {n: t[slot].clone() for n, t in self.exp_avg_sq.items()},
            },
            "scaler": {},
        }

    def load(self, i: int, saved: dict) -> None:
        slot = self.slots.index(i)
        self.members[i].model.load_state_dict(saved["model"])  # into its views of the stack
        with torch.no_grad():
            for n in self.params:
                self.exp_avg[n][slot].copy_(saved["optimizer"]["exp_avg"][n])
                self.exp_avg_sq[n][slot].copy_(saved["optimizer"]["exp_avg_sq"][n])
        self.steps = saved["optimizer"]["step"]
        self.step_count.fill_(self.steps)


def shared_mask_for(device: torch.device) -> bool:
    """Whether a pack on `device` draws its dropout masks with _shared_mask_dropout."""
    return device.type == "cuda"


def _eager_attention(model: torch.nn.Module) -> None:
    """Attention as matmul, softmax and a dropout call (transformers' "eager"), so that its
    dropout is the one _shared_mask_dropout replaces."""
    for module in model.modules():
        config = getattr(module, "config", None)
        if config is not None and hasattr(config, "_attn_implementation"):
            config._attn_implementation = "eager"


@contextlib.contextmanager
def _shared_mask_dropout():
    """torch.nn.functional.dropout (which nn.Dropout and transformers' eager attention call) as
    a mask from torch.rand of the input's shape: under vmap(randomness="same") one draw for the
    whole pack, where the fused kernel has no batching rule."""
    fused = torch.nn.functional.dropout

    def dropout(input, p=0.5, training=True, inplace=False):
        if not training or p == 0:
            return input
        keep = torch.rand(input.shape, device=input.device) >= p
        return input * keep / (1 - p)

    torch.nn.functional.dropout = dropout
    try:
        yield
    finally:
        torch.nn.functional.dropout = fused
