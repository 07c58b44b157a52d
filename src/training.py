"""Finetuning and evaluation loops: plain PyTorch, whole model trained end to end."""

from __future__ import annotations

import math
import time
from dataclasses import dataclass

import numpy as np
import torch
from torch import nn
from tqdm import tqdm

from src.data import TokenizedSplit, batches, collate
from src.metrics import score
from src.tasks import TaskSpec


@dataclass(frozen=True)
class TrainConfig:
    lr: float
    batch_size: int
    epochs: int
    weight_decay: float
    eval_batch_size: int
    group_by_length: bool


def loss_fn(task: TaskSpec, logits: torch.Tensor, labels: torch.Tensor) -> torch.Tensor:
    if task.label_kind == "regression":
        return nn.functional.mse_loss(logits.squeeze(-1), labels.float())
    return nn.functional.cross_entropy(logits, labels)


def finetune(model: nn.Module, task: TaskSpec, train: TokenizedSplit, cfg: TrainConfig, pad_id: int, seed: int, desc: str = "") -> dict:
    """Train every parameter with AdamW (weight decay 0 = the paper's Adam), constant lr, no
    warm-up, as the paper's released code. Returns per-epoch mean losses and a status:
    `diverged` when the loss stops being finite (the run is then not averaged into curves)."""
    torch.manual_seed(seed)  # dropout masks
    order = np.random.default_rng(seed)
    optimizer = torch.optim.AdamW(model.parameters(), lr=cfg.lr, weight_decay=cfg.weight_decay)
    model.train()
    epoch_losses, start = [], time.perf_counter()
    for epoch in range(cfg.epochs):
        total = torch.zeros(())  # summed on-device: no host sync per step
        plan = batches(train.lengths, cfg.batch_size, order, cfg.group_by_length)
        for indices in tqdm(plan, desc=f"{desc} epoch {epoch + 1}/{cfg.epochs}", leave=False, mininterval=5):
            batch = collate(train, indices, pad_id)
            labels = batch.pop("labels")
            loss = loss_fn(task, model(**batch), labels)
            optimizer.zero_grad(set_to_none=True)
            loss.backward()
            optimizer.step()
            total += loss.detach() * len(indices)
        epoch_losses.append(float(total) / len(train))
        if not math.isfinite(epoch_losses[-1]):
            return {"status": "diverged", "epoch_losses": epoch_losses, "train_seconds": time.perf_counter() - start}
    return {"status": "ok", "epoch_losses": epoch_losses, "train_seconds": time.perf_counter() - start}


@torch.inference_mode()
def predict(model: nn.Module, task: TaskSpec, split: TokenizedSplit, batch_size: int, pad_id: int) -> np.ndarray:
    model.eval()
    outputs = np.empty(len(split), dtype=np.float32 if task.label_kind == "regression" else np.int64)
    for indices in batches(split.lengths, batch_size, None):
        batch = collate(split, indices, pad_id)
        batch.pop("labels")
        logits = model(**batch)
        outputs[indices] = logits.squeeze(-1).numpy() if task.label_kind == "regression" else logits.argmax(-1).numpy()
    return outputs


def evaluate(model: nn.Module, task: TaskSpec, split: TokenizedSplit, batch_size: int, pad_id: int) -> dict[str, float]:
    return score(task.metrics, predict(model, task, split, batch_size, pad_id), split.labels)
