"""Pooled per-layer features of a frozen encoder: what the probes read, and what CKA compares
between a finetuned run and the pretrained model. Its own module so that training code
(src/train/run.py) can use it without importing the probes."""

from __future__ import annotations

import numpy as np
import torch
from torch import nn
from tqdm import tqdm

from src.data.tokens import batches, collate
from src.model.families import config_of, family_of, linear
from src.model.finetuner import encode, masked_mean
from src.tasks.splits import TokenizedSplit


def pool_layers(hidden_states, attention_mask: torch.Tensor, pooling: str, pooler: nn.Module | None) -> torch.Tensor:
    """[examples, layers, hidden] from each layer's [examples, tokens, hidden] states.
    `cls` reads the first token only: through `pooler` (BERT's frozen tanh(W h + b), as the
    authors' code and seed 003's truncated model probed) where the model has one, else raw."""
    if pooling == "mean":
        return torch.stack([masked_mean(h, attention_mask) for h in hidden_states], dim=1)
    first = [h[:, 0] for h in hidden_states]
    if pooler is not None:
        dense, activation = linear(pooler, "dense"), pooler.get_submodule("activation")
        first = [activation(dense(f)) for f in first]
    return torch.stack(first, dim=1)


@torch.inference_mode()
def layer_features(
    encoder: nn.Module, split: TokenizedSplit, batch_size: int, pooling: str, desc: str = ""
) -> np.ndarray:
    """[examples, layers + 1, hidden] pooled features, float16 to halve the cache. With `desc`, a progress bar on
    a terminal (none in a log or CI); without, none: a run's worker draws nothing under its stage's live line."""
    encoder.eval()
    config, device = config_of(encoder), next(encoder.parameters()).device
    pooler = getattr(encoder, "pooler", None) if family_of(encoder).pooler else None
    features = np.empty((len(split), config.num_hidden_layers + 1, config.hidden_size), dtype=np.float16)
    for indices in tqdm(
        batches(split.lengths, batch_size, None), desc=desc, leave=False, mininterval=5, disable=None if desc else True
    ):
        batch = {name: t.to(device) for name, t in collate(split, indices).items()}
        batch.pop("labels")
        hidden = encode(encoder, **batch, output_hidden_states=True).hidden_states
        pooled = pool_layers(hidden, batch["attention_mask"], pooling, pooler)
        features[indices] = pooled.float().cpu().numpy().astype(np.float16)
    return features
