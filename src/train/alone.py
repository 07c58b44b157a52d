"""A run's own optimiser step (AdamW over its parameter groups) and the RNG states a step draws
dropout from: the unpacked loop's step, and the reference a stacked pack is held to. Imports
only torch, so bench/gpu.py can time it where the pipeline's other dependencies are missing."""

from __future__ import annotations

from typing import TYPE_CHECKING

import torch
from torch import nn

from src.train.device import autocast, device_of

if TYPE_CHECKING:  # annotations only
    from src.tasks.registry import TaskSpec


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


def rng_states() -> dict:
    """torch's RNG states: the CPU one and, when CUDA is up, every CUDA device's (dropout
    on a GPU draws from the device's generator: without it a resumed run is not bit-exact)."""
    return {"cpu": torch.get_rng_state(), "cuda": torch.cuda.get_rng_state_all() if torch.cuda.is_available() else []}


def set_rng_states(states: dict) -> None:
    torch.set_rng_state(states["cpu"])
    if states["cuda"]:
        torch.cuda.set_rng_state_all(states["cuda"])


class AlonePath:
    """Each member steps on its own model with torch's fused AdamW and its own GradScaler: the
    step of a run trained alone. In a pack every member starts its step from the same RNG
    state, so each draws the dropout masks it would draw alone and ends as it would alone, bit
    for bit: the reference the stacked path (src/train/stacked.py) is held to."""

    def __init__(self, members: list, task: TaskSpec):  # members: src/train/loop.Member
        self.members, self.task = members, task
        # fused: one kernel for all tensors. The default per-tensor loop took 106 ms of a
        # ~230 ms step on one CPU thread (the 11.7M-parameter embedding is updated every step).
        self.optimizers = [
            torch.optim.AdamW(
                parameter_groups(m.model, set(m.fresh), m.settings.lr, m.lr_multiplier),
                lr=m.settings.lr,
                weight_decay=m.settings.weight_decay,
                fused=True,
            )
            for m in members
        ]
        # fp16 gradients underflow without loss scaling; with bf16 / fp32 the scaler is a no-op.
        self.scalers = [
            torch.amp.GradScaler(device_of(m.model).type, enabled=m.settings.precision == "fp16") for m in members
        ]

    def step(self, live: list[int], batch: dict, labels: torch.Tensor) -> torch.Tensor:
        """One optimiser step of each member in `live` on the batch; their losses, on the device."""
        start = rng_states() if len(live) > 1 else None
        losses = []
        for i in live:
            if start is not None:
                set_rng_states(start)
            model, optimizer, scaler = self.members[i].model, self.optimizers[i], self.scalers[i]
            with autocast(self.members[i].settings.precision, device_of(model)):
                loss = self.task.kind.loss(model(**batch), labels)
            optimizer.zero_grad(set_to_none=True)
            scaler.scale(loss).backward()
            scaler.step(optimizer)
            scaler.update()
            losses.append(loss.detach())
        return torch.stack(losses)

    def leave(self, i: int) -> None:
        # its Adam state is freed; a member that left is never stepped, saved or loaded again
        self.optimizers[i] = self.scalers[i] = None  # type: ignore[call-overload]

    def state(self, i: int) -> dict:
        return {
            "model": self.members[i].model.state_dict(),
            "optimizer": self.optimizers[i].state_dict(),
            "scaler": self.scalers[i].state_dict(),
        }

    def load(self, i: int, saved: dict) -> None:
        self.members[i].model.load_state_dict(saved["model"])
        self.optimizers[i].load_state_dict(saved["optimizer"])
        self.scalers[i].load_state_dict(saved["scaler"])
