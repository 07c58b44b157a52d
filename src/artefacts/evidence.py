"""The report's evidence: the aggregate's tables the claims are tested on (metrics/runs.csv,
probe.csv, weight_change.csv, layer_change.csv) with the predictions store
(data/predictions.npz: src/artefacts/predictions.py) and the params the report reads.

One writer (`EvidenceTables.write`: the aggregate stage, src/results/aggregate.py
`write_tables`), one reader (`read_evidence`: the report stage); file names and rounding
live here only. Which runs are `plain` (unmodified) is decided here too, for both.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path
from typing import TypeVar

import pandas as pd

from src.artefacts.predictions import read_predictions
from src.config.schema import Config, TrainConfig

RUN = ["task", "size", "slug", "trial"]  # one run
ROUNDING = {"runs": None, "probe": 5, "weight_change": 6, "layer_change": None}  # metrics/<name>.csv: decimals kept

E = TypeVar("E")


@dataclass(frozen=True)
class EvidenceTables:
    runs: pd.DataFrame  # every run and metric (runs.csv: src/results/tables.py results_table)
    probe: pd.DataFrame  # every probed task, layer and probe seed (src/results/aggregate.py probe_table)
    weight_change: pd.DataFrame  # ‖ΔW‖ at the end of training per run, layer and sublayer
    layer_change: pd.DataFrame  # the full model's per-layer ‖ΔW‖ after steps 1, 2, 4, …

    def write(self, folder: Path) -> None:
        for name, decimals in ROUNDING.items():
            table = getattr(self, name)
            (table if decimals is None else table.round(decimals)).to_csv(Path(folder) / f"{name}.csv", index=False)

    @classmethod
    def read(cls, folder: Path) -> EvidenceTables:
        return cls(**{name: pd.read_csv(Path(folder) / f"{name}.csv") for name in ROUNDING})


def plain(table: pd.DataFrame, train: TrainConfig, unique: list[str]) -> pd.DataFrame:
    """Rows of unmodified conditions (default epochs, no lr multiplier, no kept LayerNorm,
    no intermediate task), from whichever study ran them, each once by `unique`."""
    default_epochs = table["size"].map(train.epochs_for)
    keep = (
        (table["lr_multiplier"] == 1.0)
        & ~table["keep_layernorm"].astype(bool)
        & table["intermediate_task"].isna()
        & (table["epochs"] == default_epochs)
    )
    return table[keep].drop_duplicates(unique)


def read_evidence(make: Callable[..., E], tables: Path, predictions: Path, num_layers: int, config: Config) -> E:
    """The report's evidence, built by `make` (src/claims/evidence.py Evidence) from its fields:
    every headline run once (modified conditions too: App. D-F and Huang et al. compare them
    with the plain run), marked `plain` where the condition is unmodified."""
    stored, read = EvidenceTables.read(tables), read_predictions(predictions)
    headline = stored.runs[stored.runs["headline"]].drop_duplicates(RUN)
    unmodified = plain(headline, config.train, RUN)
    return make(
        runs=headline.assign(plain=headline.index.isin(unmodified.index)),
        predictions=read.runs,
        labels=read.labels,
        probe=stored.probe,
        weight_change=stored.weight_change,
        layer_change=stored.layer_change,
        num_layers=num_layers,
        settings=config.report,
        studies=dict(config.studies),
        data=config.data,
        train=config.train,
        probe_predictions=read.probes,
    )
