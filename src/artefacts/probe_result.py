"""data/runs/probe/<task>.json and .npz: one probed task's per-layer scores of every probe seed,
and their per-example eval predictions [seeds, layers 0..L, examples].

One writer (`ProbeResult.write`, `write_probe_predictions`: the probe stage, src/probing/probes.py
`probe_task`), one reader (`ProbeResult.read`, `read_probe_predictions`: the aggregate's probe
table and the predictions store); the key format lives here only. Importable without torch.
"""

from __future__ import annotations

import json
from collections.abc import Mapping
from dataclasses import asdict, dataclass, field
from pathlib import Path

import numpy as np

from src.core.files import write_json_atomically

# The key of a features file (data/features/<task>.npz, written by the features stage: src/probing/features.py)
# that lists, as an array of text beside each split's features, the fallbacks they took; the probe stage copies
# them into ProbeResult.fallbacks.
FEATURES_FALLBACKS = "fallbacks"


def features_fallbacks(cached: Mapping[str, np.ndarray]) -> list[str]:
    """The fallbacks a features file's features took (none in a file written before they were recorded)."""
    return [str(fallback) for fallback in cached[FEATURES_FALLBACKS]] if FEATURES_FALLBACKS in cached else []


@dataclass(frozen=True)
class ProbeLayer:
    """One layer's probe of one seed: scores on the eval split (every task metric), the control
    task's scores, and the online codelength (None: no online code, a regression task)."""

    layer: int  # 0 = embeddings .. L
    seed: int  # the index of the probe seed in ProbeResult.seeds
    scores: dict[str, float]
    control_scores: dict[str, float]
    codelength_bits: float | None


@dataclass(frozen=True)
class ProbeResult:
    task: str
    metric: str  # the task's headline metric
    pooling: str  # probe.pooling: mean | cls
    train_examples: int
    eval_examples: int
    seeds: list[int]  # every probe seed as drawn; the first is the base seed
    mdl_portions: list[float]  # probe.mdl_portions (percent of the train set)
    uniform_bits: float | None  # the uniform codelength of the train labels (None: no online code)
    layers: list[ProbeLayer]  # seed by seed, layer by layer
    # each fallback its features took, said in a `note:` line by the features stage (src/probing/features.py
    # CLS_READ_RAW; docs/bad_input.md)
    fallbacks: list[str] = field(default_factory=list)

    def write(self, path: Path) -> None:
        write_json_atomically(path, asdict(self))

    @classmethod
    def read(cls, path: Path) -> ProbeResult:
        fields = json.loads(Path(path).read_text())
        return cls(**{**fields, "layers": [ProbeLayer(**layer) for layer in fields["layers"]]})

    def by_layer(self, scores: str = "scores") -> np.ndarray:
        """[seeds, layers] of the headline metric (`scores`, or `control_scores`)."""
        values = np.full((len(self.seeds), 1 + max(row.layer for row in self.layers)), np.nan)
        for row in self.layers:
            values[row.seed, row.layer] = getattr(row, scores)[self.metric]
        return values


def write_probe_predictions(path: Path, predictions: np.ndarray) -> None:
    """[seeds, layers, examples]: class labels as int8, regression outputs as float16."""
    np.savez_compressed(path, predictions=predictions.astype(np.int8 if predictions.dtype.kind == "i" else np.float16))


def read_probe_predictions(path: Path) -> np.ndarray:
    with np.load(path) as stored:
        return stored["predictions"]
