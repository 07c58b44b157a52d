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

AUTOCAST_DTYPES = {"bf16": torch.bfloat16, "fp16": torch.float16}


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


def autocast(precision: str, device: torch.device):
    # Only around forward + loss: with the optimizer step inside autocast too, Adam's
    # update ran in bf16 and lr 2e-5 steps vanished (the loss stayed at ln 2). fp16 is for
    # GPUs before Ampere, which have no bf16: its gradients need a GradScaler (finetune).
    return torch.autocast(device.type, dtype=AUTOCAST_DTYPES.get(precision), enabled=precision in AUTOCAST_DTYPES)


def parameter_groups(model: nn.Module, fresh: set[str], lr: float, multiplier: float) -> list[dict]:
    """AdamW groups that partition the model's parameters: `fresh` ones (reinitialised)
    at lr * multiplier, every other one at lr. The paper's released 5x-lr script missed
    encoder layer 11 in both groups, so it never trained; here a name in `fresh` that the
    model lacks is an error, and every parameter lands in exactly one group."""
    named = dict(model.named_parameters())
    unknown = fresh - named.keys()
    if unknown:
        raise ValueError(f"reinitialised parameters not in the model: {sorted(unknown)[:3]}")
    groups = [
        {
            "params": [p for n, p in named.items() if n not in fresh],
            "lr": lr,
            "names": [n for n in named if n not in fresh],
        },
        {
            "params": [named[n] for n in named if n in fresh],
            "lr": lr * multiplier,
            "names": [n for n in named if n in fresh],
        },
    ]
    return [g for g in groups if g["params"]]


def finetune(
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
    warm-up, as the paper's released code. Returns every step's loss, per-epoch mean losses, per-epoch eval
    (when `eval_split` is given: App. D's curves) and a status: `diverged` when the loss
    stops being finite (the run is then not averaged into curves).

    With `checkpoint` and cfg.checkpoint_every, the full training state (weights, Adam,
    the loss scale, the CPU and CUDA RNGs, position in the epoch) is saved every N steps; a
    run started again with the same `checkpoint_key` resumes there and ends with the same
    weights. `progress` gets one line per epoch (the per-run log).

    `layer_change` (per-layer size of the weight change so far) is recorded after steps
    1, 2, 4, 8, ...: runs of different lengths can then be compared at equal step counts
    (with Adam at a constant lr, the change grows with the number of steps)."""
    device = next(model.parameters()).device
    # fused: one kernel for all tensors. The default per-tensor loop took 106 ms of a
    # ~230 ms step on one CPU thread (the 11.7M-parameter embedding is updated every step).
    optimizer = torch.optim.AdamW(
        parameter_groups(model, set(fresh), cfg.lr, lr_multiplier), lr=cfg.lr, weight_decay=cfg.weight_decay, fused=True
    )
    # fp16 gradients underflow without loss scaling; with bf16 / fp32 the scaler is a no-op.
    scaler = torch.amp.GradScaler(device.type, enabled=cfg.precision == "fp16")
    # `seed` draws the batch order, `dropout_seed` the dropout masks (None: `seed` draws both)
    torch.manual_seed(seed if dropout_seed is None else dropout_seed)  # CPU and every CUDA device
    order = np.random.default_rng(seed)
    state = {
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
    saved = _read_checkpoint(checkpoint) if checkpoint is not None and checkpoint.exists() else None
    if saved is not None and saved["key"] == checkpoint_key:
        model.load_state_dict(saved["model"])
        optimizer.load_state_dict(saved["optimizer"])
        scaler.load_state_dict(saved["scaler"])
        set_rng_states(saved["rng"])
        state = saved["state"]
    start = time.perf_counter() - state["seconds"]
    model.train()
    for epoch in range(state["epoch"], cfg.epochs):
        order.bit_generator.state = state["order"]  # the epoch's batches come from its starting state
        plan = batches(train.lengths, cfg.batch_size, order, cfg.group_by_length)
        total = torch.tensor(state["loss_sum"], device=device)  # summed on-device: no host sync per step
        pending = []  # this epoch's step losses not yet in state, kept on-device until a checkpoint or the epoch's end
        for step in range(state["step"], len(plan)):
            batch = {name: t.to(device) for name, t in collate(train, plan[step]).items()}
            labels = batch.pop("labels")
            with autocast(cfg.precision, device):
                loss = task.kind.loss(model(**batch), labels)
            optimizer.zero_grad(set_to_none=True)
            scaler.scale(loss).backward()
            scaler.step(optimizer)
            scaler.update()
            total += loss.detach() * len(labels)
            pending.append(loss.detach())
            done = epoch * len(plan) + step + 1
            if layer_change is not None and done & (done - 1) == 0:  # a power of two
                state["layer_change"].append({"step": done, "frobenius": layer_change()})
            if (
                checkpoint is not None
                and cfg.checkpoint_every
                and (step + 1) % cfg.checkpoint_every == 0
                and step + 1 < len(plan)
            ):
                _keep_step_losses(state, pending)
                state.update(epoch=epoch, step=step + 1, loss_sum=float(total), seconds=time.perf_counter() - start)
                _save_checkpoint(checkpoint, checkpoint_key, model, optimizer, scaler, state)
        _keep_step_losses(state, pending)
        state["epoch_losses"].append(float(total) / len(train))
        state.update(epoch=epoch + 1, step=0, loss_sum=0.0, order=order.bit_generator.state)
        elapsed = time.perf_counter() - start
        progress(
            f"epoch {epoch + 1}/{cfg.epochs}: train loss {state['epoch_losses'][-1]:.4f}, {elapsed:.1f} s, "
            f"{(epoch + 1) * len(train) / elapsed:.1f} examples/s"
        )
        if not math.isfinite(state["epoch_losses"][-1]):
            return {
                "status": "diverged",
                "epoch_losses": state["epoch_losses"],
                "epoch_eval": state["epoch_eval"],
                "layer_change": state["layer_change"],
                "step_losses": state["step_losses"],
                "train_seconds": time.perf_counter() - start,
            }
        if eval_split is not None:
            scored = evaluate(model, task, eval_split, cfg.eval_batch_size, cfg.precision)
            state["epoch_eval"].append(
                {
                    "epoch": epoch + 1,
                    "train_loss": state["epoch_losses"][-1],
                    "scores": scored["scores"],
                    "loss": scored["loss"],
                }
            )
            model.train()
    return {
        "status": "ok",
        "epoch_losses": state["epoch_losses"],
        "epoch_eval": state["epoch_eval"],
        "layer_change": state["layer_change"],
        "step_losses": state["step_losses"],
        "steps": cfg.epochs * math.ceil(len(train) / cfg.batch_size),
        "train_seconds": time.perf_counter() - start,
    }


def _keep_step_losses(state: dict, pending: list) -> None:
    """Move the step losses gathered on the device into the training state (one host sync)."""
    if pending:
        state["step_losses"] += torch.stack(pending).float().cpu().tolist()
        pending.clear()


def rng_states() -> dict:
    """torch's RNG states: the CPU one and, when CUDA is up, every CUDA device's (dropout
    on a GPU draws from the device's generator: without it a resumed run is not bit-exact)."""
    return {"cpu": torch.get_rng_state(), "cuda": torch.cuda.get_rng_state_all() if torch.cuda.is_available() else []}


def set_rng_states(states: dict) -> None:
    torch.set_rng_state(states["cpu"])
    if states["cuda"]:
        torch.cuda.set_rng_state_all(states["cuda"])


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


def _save_checkpoint(path: Path, key: str, model: nn.Module, optimizer, scaler, state: dict) -> None:
    path.parent.mkdir(parents=True, exist_ok=True)
    tmp = path.with_suffix(".tmp")
    torch.save(
        {
            "key": key,
            "model": model.state_dict(),
            "optimizer": optimizer.state_dict(),
            "scaler": scaler.state_dict(),
            "rng": rng_states(),
            "state": state,
        },
        tmp,
    )
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
