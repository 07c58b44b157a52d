"""The probes' input: each layer's pooled features of the frozen pretrained model, per split
(the features stage caches them once; src/model/features.py pools them).

Outside src/model on purpose: src/model/features.py is training code (a run's fingerprint
hashes it), and this is not."""

from __future__ import annotations

import sys
from pathlib import Path
from typing import TYPE_CHECKING

import numpy as np
import torch

from src.artefacts.probe_result import FEATURES_FALLBACKS
from src.model.base import load_encoder
from src.model.features import layer_features
from src.model.reinit import pooler_looks_untrained
from src.tasks import splits

if TYPE_CHECKING:  # annotations only
    from src.config.schema import ProbeConfig


# `probe.pooling: cls` on a pooler that was never trained (bias exactly 0, or no pooler tensors in the
# checkpoint): the features read the raw [CLS] state, not a frozen random projection of it. A fallback
# (src/artefacts/probe_result.py ProbeResult.fallbacks).
CLS_READ_RAW = "raw [CLS] read"


def task_features(model_dir: Path, tokens: Path, probe: ProbeConfig) -> dict[str, np.ndarray]:
    """Each split's (train, eval) pooled features of every layer, from one forward pass of the
    frozen pretrained model (with its pooler for probe.pooling cls, where it was trained), on the GPU
    when there is one; under FEATURES_FALLBACKS, the fallbacks taken (an array of text, empty where none)."""
    encoder = load_encoder(model_dir, with_pooler=probe.pooling == "cls").to(
        "cuda" if torch.cuda.is_available() else "cpu"
    )
    fallbacks = []
    if probe.pooling == "cls" and pooler_looks_untrained(encoder):
        # Never trained (all-MiniLM-L6-v2's: bias exactly 0), or not in the checkpoint at all
        # (transformers draws one, bias 0): a frozen random projection is not what the probe
        # reads, so [CLS] is read raw, as in a family without a pooler. (The finetuner, which
        # trains it, re-initialises it instead.)
        # nn.Module.__setattr__ takes None for a registered submodule; torch types the attribute Tensor | Module
        encoder.pooler = None  # type: ignore[assignment]
        fallbacks.append(CLS_READ_RAW)
        print(
            f"note: probe.pooling = 'cls' on {tokens.parent.name}: the pooler of {model_dir} was never trained (bias "
            "exactly 0, or no pooler tensors in the checkpoint): its probes read the raw [CLS] state instead",
            file=sys.stderr,
        )
    features = {
        split: layer_features(
            encoder, splits.load_split(tokens, split), probe.batch_size, probe.pooling, desc=f"features {split}"
        )
        for split in ("train", "eval")
    }
    return {**features, FEATURES_FALLBACKS: np.array(fallbacks, dtype=str)}
