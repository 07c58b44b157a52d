"""Finetuning and evaluation loops: plain PyTorch, whole model trained end to end."""

from __future__ import annotations

import ctypes
import math
import os
import sys
import time
from collections.abc import Callable
from dataclasses import dataclass, replace
from pathlib import Path

import numpy as np
import torch
from torch import nn

from src.data.tokens import batches, collate
from src.measures import MEASUREMENTS
from src.tasks.registry import TaskSpec
from src.tasks.splits import TokenizedSplit
from src.train.alone import AlonePath, rng_states, set_rng_states
from src.train.device import autocast, device_of


@dataclass(frozen=True)
class RunSettings:
    """Every setting one run trains with: what a worker receives and its result records."""

    lr: float
    batch_size: int
    epochs: int
    weight_decay: float
    eval_batch_size: int
    group_by_length: bool
    precision: (
        str  # resolved: bf16 / fp16 autocast the forward pass (weights, grads and Adam stay fp32); fp16 scales the loss
    )
    checkpoint_every: int  # steps between resumable checkpoints; 0 = none
    threads: int  # torch threads of the process (moves the last bits of a result)
    seed: int  # the base seed every draw of the run derives from, with the condition's trial
    device: str  # cpu | cuda
    # train.pack: the most runs it trains with in one stacked step (src/train/packed.py); 0 = alone. Like
    # threads it may move the last bits (another kernel for K stacked matmuls), never which runs it shares it with.
    pack: int = 0
    # Measurements of the finished run (src/measures/; docs/measures.md), as resolved for
    # this condition: each is in the fingerprint only through what the run computes.
    cka: bool = False  # per-layer CKA, finetuned vs pretrained, on the eval inputs
    criticality: bool = False  # per-layer score drop with the layer rewound
    criticality_examples: int = 0  # eval examples a rewound model is scored on (0: all, or criticality off)
    head_importance: bool = False  # Michel et al.'s head importance, before and after finetuning

    def unmeasured(self) -> RunSettings:
        """The same run with every measurement off: what its training, scores and predictions depend on."""
        fields = {name for m in MEASUREMENTS for name in (m.setting, *m.parameters)}
        return replace(self, **{name: RunSettings.__dataclass_fields__[name].default for name in fields})


def reuse_freed_memory() -> None:
    """Keep freed memory in the process heap instead of handing it back to the OS.

    Every step's embedding gradient is a fresh vocab x hidden tensor (47 MB for MiniLM),
    above glibc's largest mmap threshold (32 MB): by default it is mmap'd and unmapped
    each step, and zero-filling its new pages took 104 ms of a ~190 ms step on this VM.
    With these thresholds it is reused from the heap (1-thread step: 1.3x faster, same
    numbers). Process-wide and glibc-only, so finetuning processes call it at start."""
    mallopt = getattr(ctypes.CDLL(None), "mallopt", None) if sys.platform.startswith("linux") else None
    if mallopt is not None:
        mallopt(-3, 1 << 30)  # M_MMAP_THRESHOLD: allocations below 1 GiB come from the heap
        mallopt(-1, 1 << 30)  # M_TRIM_THRESHOLD: do not shrink the heap after each free


@dataclass
class Member:
    """One run of a training loop: its model (on its device), settings, AdamW groups (`fresh`
    parameters at lr * `lr_multiplier`) and where it saves and reports. A pack has several
    (src/train/packed.py), a run trained alone one."""

    model: nn.Module
    settings: RunSettings
    fresh: frozenset[str] = frozenset()
    lr_multiplier: float = 1.0
    checkpoint: Path | None = None
    checkpoint_key: str = ""
    progress: Callable[[str], None] = lambda line: None
    layer_change: Callable[[], list[float]] | None = None


def finetune(  # noqa: PLR0913
    model: nn.Module,
    task: TaskSpec,
    train: TokenizedSplit,
    cfg: RunSettings,
    seed: int,
    fresh: set[str] = frozenset(),
    lr_multiplier: float = 1.0,
    eval_split: TokenizedSplit | None = None,
    checkpoint: Path | None = None,
    checkpoint_key: str = "",
    progress=lambda line: None,
    layer_change: Callable[[], list[float]] | None = None,
    dropout_seed: int | None = None,
) -> dict:
    """Train every parameter with AdamW (weight decay 0 = the paper's Adam), constant lr, no
    warm-up, as the paper's released code (train_members with one member). `seed` draws the
    batch order, `dropout_seed` the dropout masks (None: `seed` draws both)."""
    member = Member(model, cfg, frozenset(fresh), lr_multiplier, checkpoint, checkpoint_key, progress, layer_change)
    return train_members([member], task, train, seed, seed if dropout_seed is None else dropout_seed, eval_split)[0]


def train_members(  # noqa: C901, PLR0912, PLR0915
    members: list[Member],
    task: TaskSpec,
    train: TokenizedSplit,
    order_seed: int,
    dropout_seed: int,
    eval_split: TokenizedSplit | None = None,
    path=AlonePath,
    finished: Callable[[int, dict], None] = lambda i, outcome: None,
) -> list[dict]:
    """Train `members` on the same batches (drawn by `order_seed`) with the same dropout masks
    (`dropout_seed`), stepping each by `path` (AlonePath: each alone, as torch's AdamW;
    stacked.StackedPath: all in one step). Every setting but the epochs must be the same for all
    (packed.pack_key). Constant lr, no warm-up, no gradient clipping, as the paper's released
    code. Returns each member's outcome: every step's loss, per-epoch mean losses, per-epoch
    eval (when `eval_split` is given: App. D's curves) and a status, `diverged` when an epoch's
    mean loss is not finite (the run is then not averaged into curves). A member leaves after
    its last epoch or the epoch it diverged in, and `finished(i, outcome)` is called then; the
    others go on.

    With each member's `checkpoint` and checkpoint_every, the full training state (weights,
    Adam, the loss scale, the CPU and CUDA RNGs, position in the epoch) is saved every N steps,
    one file per member; a loop started again with the same `checkpoint_key`s, all at the same
    position, resumes there and ends with the same weights. `progress` gets one line per epoch
    (the per-run log).

    `layer_change` (per-layer size of the weight change so far) is recorded after steps
    1, 2, 4, 8, ...: runs of different lengths can then be compared at equal step counts
    (with Adam at a constant lr, the change grows with the number of steps)."""
    shared = members[0].settings
    device = device_of(members[0].model)
    engine = path(members, task)
    torch.manual_seed(dropout_seed)  # CPU and every CUDA device
    order = np.random.default_rng(order_seed)
    states = [
        {
            "epoch": 0,
            "step": 0,
            "loss_sum": 0.0,
            "order": order.bit_generator.state,
            "epoch_losses": [],
            "epoch_eval": [],
            "layer_change": [],
            "step_losses": [],  # every step's training loss (seed 004 Figs. 1 and 4 plot it against steps)
            "seconds": 0.0,
        }
        for _ in members
    ]
    saved = _resume_points(members)
    if saved is not None:
        for i, point in enumerate(saved):
            engine.load(i, point)
            states[i] = point["state"]
        set_rng_states(saved[0]["rng"])
    start = time.perf_counter() - states[0]["seconds"]
    outcomes: list[dict | None] = [None] * len(members)
    live = list(range(len(members)))
    for member in members:
        member.model.train()
    for epoch in range(states[0]["epoch"], max(m.settings.epochs for m in members)):
        lead = states[live[0]]  # the position in the data, the same for every live member
        order.bit_generator.state = lead["order"]  # the epoch's batches come from its starting state
        plan = batches(train.lengths, shared.batch_size, order, shared.group_by_length)
        # summed on-device: no host sync per step
        total = torch.tensor([states[i]["loss_sum"] for i in live], device=device)
        pending = []  # this epoch's step losses not yet in the states, on-device until a checkpoint or the epoch's end
        for step in range(lead["step"], len(plan)):
            batch = {name: t.to(device) for name, t in collate(train, plan[step]).items()}
            labels = batch.pop("labels")
            losses = engine.step(live, batch, labels)
            total += losses * len(labels)
            pending.append(losses)
            done = epoch * len(plan) + step + 1
            if done & (done - 1) == 0:  # a power of two
                for i in live:
                    if members[i].layer_change is not None:
                        states[i]["layer_change"].append({"step": done, "frobenius": members[i].layer_change()})
            if (
                shared.checkpoint_every
                and (step + 1) % shared.checkpoint_every == 0
                and step + 1 < len(plan)
                and any(members[i].checkpoint is not None for i in live)
            ):
                _keep_step_losses(states, live, pending)
                for at, i in enumerate(live):
                    states[i].update(
                        epoch=epoch, step=step + 1, loss_sum=float(total[at]), seconds=time.perf_counter() - start
                    )
                    if members[i].checkpoint is not None:
                        _save_checkpoint(members[i].checkpoint, members[i].checkpoint_key, engine.state(i), states[i])
        _keep_step_losses(states, live, pending)
        epoch_end = order.bit_generator.state
        for at, i in enumerate(list(live)):
            state, cfg, member = states[i], members[i].settings, members[i]
            state["epoch_losses"].append(float(total[at]) / len(train))
            state.update(epoch=epoch + 1, step=0, loss_sum=0.0, order=epoch_end)
            elapsed = time.perf_counter() - start
            member.progress(
                f"epoch {epoch + 1}/{cfg.epochs}: train loss {state['epoch_losses'][-1]:.4f}, {elapsed:.1f} s, "
                f"{(epoch + 1) * len(train) / elapsed:.1f} examples/s"
            )
            diverged = not math.isfinite(state["epoch_losses"][-1])
            if not diverged and eval_split is not None:
                scored = evaluate(member.model, task, eval_split, cfg.eval_batch_size, cfg.precision)
                state["epoch_eval"].append(
                    {
                        "epoch": epoch + 1,
                        "train_loss": state["epoch_losses"][-1],
                        "scores": scored["scores"],
                        "loss": scored["loss"],
                    }
                )
                member.model.train()
            if diverged or epoch + 1 == cfg.epochs:
                outcomes[i] = {
                    "status": "diverged" if diverged else "ok",
                    "epoch_losses": state["epoch_losses"],
                    "epoch_eval": state["epoch_eval"],
                    "layer_change": state["layer_change"],
                    "step_losses": state["step_losses"],
                    **({} if diverged else {"steps": cfg.epochs * math.ceil(len(train) / cfg.batch_size)}),
                    "train_seconds": time.perf_counter() - start,
                }
                live.remove(i)
                engine.leave(i)
                finished(i, outcomes[i])
        if not live:
            break
    return outcomes


def _keep_step_losses(states: list[dict], live: list[int], pending: list) -> None:
    """Move the step losses gathered on the device into the live members' states (one host sync)."""
    if pending:
        losses = torch.stack(pending).float().cpu()
        for at, i in enumerate(live):
            states[i]["step_losses"] += losses[:, at].tolist()
        pending.clear()


def _resume_points(members: list[Member]) -> list[dict] | None:
    """Every member's saved training state when all have one of their key at the same
    position, else None: the members start together from scratch."""
    saved = []
    for member in members:
        point = (
            _read_checkpoint(member.checkpoint)
            if member.checkpoint is not None and member.checkpoint.exists()
            else None
        )
        if point is None or point["key"] != member.checkpoint_key:
            return None
        saved.append(point)
    positions = {(point["state"]["epoch"], point["state"]["step"]) for point in saved}
    if len(positions) > 1:
        print(
            f"warning: the pack's checkpoints are at different positions {sorted(positions)}; the pack starts again",
            file=sys.stderr,
            flush=True,
        )
        return None
    return saved


def _read_checkpoint(path: Path) -> dict | None:
    """A saved training state, or None (with a warning naming the file, which is deleted)
    when it cannot be read: a damaged checkpoint costs the run its progress, not the stage."""
    try:
        # Never weights_only=False, which torch's error message suggests: it can run code.
        saved = torch.load(path, weights_only=True)
        if isinstance(saved, dict) and {"key", "model", "optimizer", "scaler", "rng", "state"} <= saved.keys():
            return saved
        error = "not a training checkpoint"
    except Exception as failure:  # truncated, overwritten, another format: torch raises many kinds
        error = type(failure).__name__
    print(
        f"warning: checkpoint {path} cannot be read ({error}); discarded, the run restarts from scratch",
        file=sys.stderr,
        flush=True,
    )
    path.unlink(missing_ok=True)
    return None


def _save_checkpoint(path: Path, key: str, engine_state: dict, state: dict) -> None:
    path.parent.mkdir(parents=True, exist_ok=True)
    tmp = path.with_suffix(".tmp")
    torch.save({"key": key, **engine_state, "rng": rng_states(), "state": state}, tmp)
    os.replace(tmp, path)  # a kill mid-save leaves the previous checkpoint, never half of one


@torch.inference_mode()
def forward_split(
    model: nn.Module,
    task: TaskSpec,
    split: TokenizedSplit,
    batch_size: int,
    precision: str,
    layer_features: bool = False,
):
    """(what the task kind keeps of every sequence, in split order; the mean loss; with
    `layer_features`, every example's masked-mean hidden state per layer ([examples, L + 1,
    hidden], float32, split order) from the same pass, else None)."""
    model.eval()
    device = next(model.parameters()).device
    outputs = np.empty(len(split), dtype=task.kind.prediction_dtype)
    features = None
    loss_sum = 0.0
    for indices in batches(split.lengths, batch_size, None):
        batch = {name: t.to(device) for name, t in collate(split, indices).items()}
        labels = batch.pop("labels")
        pooled = [] if layer_features else None
        with autocast(precision, device):
            logits = model(**batch, **({"layer_features": pooled} if layer_features else {})).float()
        loss_sum += float(task.kind.loss(logits, labels)) * len(indices)
        outputs[indices] = task.kind.batch_outputs(logits, split.lengths[indices])
        if layer_features:
            layers = pooled[0].float().cpu().numpy()
            if features is None:
                features = np.empty((len(split), *layers.shape[1:]), dtype=np.float32)
            features[indices] = layers
    return outputs, loss_sum / len(split), features


def evaluate(
    model: nn.Module,
    task: TaskSpec,
    split: TokenizedSplit,
    batch_size: int,
    precision: str,
    null_threshold: float | None = None,
    layer_features: bool = False,
) -> dict:
    """Scores, mean loss, the share of the most common prediction (1.0 = the model
    predicts one class for everything: collapsed, whatever its accuracy says; span QA: the
    share of "no answer"), and every example's prediction (class id, score for regression,
    F1 per question for span QA) in eval-split order, so a contrast between runs can be
    resampled over eval examples too. `null_threshold`: span QA's, fitted on held-out training data.
    With `layer_features`, also every example's masked-mean hidden state per layer
    ([examples, L + 1, hidden], float32, eval-split order) from the same pass."""
    outputs, loss, features = forward_split(model, task, split, batch_size, precision, layer_features)
    scored = {"loss": loss, **task.kind.score(task, split, outputs, null_threshold)}
    return {**scored, "layer_features": features} if layer_features else scored


def fit_null_threshold(model: nn.Module, task: TaskSpec, held_out: TokenizedSplit, batch_size: int, precision: str):
    """Span QA's null-score threshold, fitted after training on `held_out`: training questions
    the run did not train on (never the eval set, which it then scores; never its own training
    subset, where the fit is in sample)."""
    outputs, _, _ = forward_split(model, task, held_out, batch_size, precision)
    return task.kind.fit_null_threshold(held_out, outputs)
