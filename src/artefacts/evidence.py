"""The report's evidence: the aggregate's tables the claims are tested on (metrics/runs.csv,
probe.csv, weight_change.csv, layer_change.csv) with the predictions store
(data/predictions.npz: src/artefacts/predictions.py) and the params the report reads.

One writer (`EvidenceTables.write`: the aggregate stage, src/results/aggregate.py
`write_tables`), one reader (`read_evidence`: the report stage); file names and rounding
live here only. A runs-table row's condition (`condition_of`) is read here too, for both; which
runs are `plain` (unmodified) is Condition's rule (`Condition.is_plain`).
"""

from __future__ import annotations

import math
import re
from collections.abc import Callable, Mapping
from dataclasses import dataclass
from pathlib import Path
from typing import Any, TypeVar

import pandas as pd

from src.artefacts.predictions import read_predictions
from src.conditions.condition import Condition
from src.config.schema import Config, TrainConfig

RUN = ["task", "size", "slug", "trial"]  # one run
CONDITION = ["task", "size", "slug"]  # one condition: its slug names it within its task and size
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


def _given(value: Any) -> Any:
    """A table cell, None where it is empty (NaN: a column the row's condition does not set)."""
    return None if value is None or value is pd.NA or (isinstance(value, float) and math.isnan(value)) else value


def _optional_int(value: Any) -> int | None:
    return None if _given(value) is None else int(value)


def _layers(value: Any) -> tuple[int, ...] | None:
    """`removed` as a tuple: the results table holds it as a list or tuple, runs.csv as its text `(3, 4)`."""
    value = _given(value)
    if value is None:
        return None
    return tuple(int(x) for x in re.findall(r"\d+", value)) if isinstance(value, str) else tuple(value)


def _examples(value: Any) -> int | str | None:
    """`intermediate_size`: a count, or `full`; runs.csv may give the count as a float or its text."""
    value = _given(value)
    return value if value is None or value == "full" else int(float(value))


# how each Condition field is read from a table cell (the seed streams are not: condition_of)
READ: dict[str, Callable[[Any], Any]] = {
    **dict.fromkeys(("task", "scheme", "recipe", "pooling"), str),
    **dict.fromkeys(("size", "trial", "epochs"), int),
    **dict.fromkeys(("k", "layer", "window", "head_index", "intermediate_epochs"), _optional_int),
    **dict.fromkeys(("removal", "intermediate_task"), _given),
    "removed": _layers,
    "intermediate_size": _examples,
    "lr_multiplier": float,
    "keep_layernorm": bool,
}


def condition_of(row: Mapping[str, Any]) -> Condition:
    """The condition of a runs-table row (results_table's, or runs.csv's): every Condition field the row holds,
    Condition's default for the others. Its seed streams are not read (the table holds them as the
    subset_stream and draws_stream factors); nothing the report reads of a condition depends on them."""
    return Condition(**{name: read(row[name]) for name, read in READ.items() if name in row})


def plain(table: pd.DataFrame, train: TrainConfig, unique: list[str]) -> pd.DataFrame:
    """Rows of unmodified conditions (Condition.is_plain at the default epochs of their size), from whichever
    study ran them, each once by `unique`. A condition is read once, from its first row: its other rows
    (trials, metrics, studies) differ in none of the fields the rule reads."""
    firsts = table.drop_duplicates(CONDITION).to_dict("records")
    plain_keys = {
        tuple(row[c] for c in CONDITION)
        for row, condition in zip(firsts, map(condition_of, firsts))
        if condition.is_plain(train.epochs_for(condition.size))
    }
    keep = [key in plain_keys for key in zip(*(table[c] for c in CONDITION))]
    return table[pd.Series(keep, index=table.index, dtype=bool)].drop_duplicates(unique)


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
