"""What the claims are tested on (Evidence), and how a claim's builders read it: the runs of
a task, size and set of conditions, the trials they all finished, their scores and per-example
predictions, the studies that report them, the task's metric and chance level, and the crossed
seed_design their trials share."""

from __future__ import annotations

import math
from dataclasses import dataclass, field

import numpy as np
import pandas as pd

from src.config.schema import DataConfig, ReportConfig, StudyConfig, TrainConfig


@dataclass
class Evidence:
    """What the claims are tested on. `runs`: one headline row per run (task, size, slug, trial,
    scheme, k, layer, window, head_index, lr_multiplier, keep_layernorm, intermediate_task,
    epochs, metric, value, status, collapsed, study, ref_full, ref_scratch, ref_baseline,
    plain: an unmodified condition); predictions by (task, size, slug, trial) and eval labels
    by task; `probe`: task, layer, value (and seed, when several probe seeds ran), with the
    probes' eval predictions [seeds, layers, examples] by task in `probe_predictions`;
    `weight_change`: ‖ΔW‖ at the end of training per run, layer and sublayer; `layer_change`:
    the full model's per-layer ‖ΔW‖ after steps 1, 2, 4, …; the params the report reads
    (`report:`, the studies, data.tasks, train) so that a missing claim names its command."""

    runs: pd.DataFrame
    predictions: dict
    labels: dict
    probe: pd.DataFrame
    weight_change: pd.DataFrame
    layer_change: pd.DataFrame
    num_layers: int
    settings: ReportConfig
    studies: dict[str, StudyConfig] = field(default_factory=dict)
    data: DataConfig | None = None
    train: TrainConfig | None = None
    probe_predictions: dict = field(default_factory=dict)
    num_heads: int = 0  # attention heads per layer (0: unknown); claims about every head of a layer read it

    def plain(self) -> pd.DataFrame:
        return self.runs[self.runs["plain"]] if "plain" in self.runs else self.runs


# --- rows, trials and predictions --------------------------------------------------------------------------


def rows_of(runs: pd.DataFrame, task: str, size: int, slugs) -> pd.DataFrame:
    return runs[(runs["task"] == task) & (runs["size"] == size) & runs["slug"].isin(list(slugs))]


def common_trials(runs: pd.DataFrame, task: str, size: int, slugs: list[str]) -> tuple[list[int], list[str]]:
    """(trials every slug finished at (task, size), notes on runs left out or kept)."""
    rows = rows_of(runs, task, size, slugs)
    ok = rows[rows["status"] == "ok"]
    common = set.intersection(*(set(ok.loc[ok["slug"] == s, "trial"]) for s in slugs)) if slugs else set()
    used = ok[ok["trial"].isin(common)]
    diverged = int((rows["status"] != "ok").sum())
    collapsed = int(used["collapsed"].fillna(False).astype(bool).sum())
    notes = [f"{diverged} diverged run(s) left out"] if diverged else []
    notes += [f"{collapsed} collapsed run(s) kept"] if collapsed else []
    return sorted(int(t) for t in common), notes


def scores_of(ev: Evidence, task: str, size: int, slug: str, trials: list[int]) -> tuple[np.ndarray | None, np.ndarray]:
    """(predictions [T, N] or None without them, scores [T]) of one condition over `trials`."""
    rows = rows_of(ev.runs, task, size, [slug]).drop_duplicates("trial").set_index("trial")
    scores = rows.loc[trials, "value"].to_numpy(dtype=float)
    keys = [(task, size, slug, t) for t in trials]
    if all(k in ev.predictions for k in keys) and task in ev.labels:
        return np.stack([ev.predictions[k] for k in keys]), scores
    return None, scores


def studies_of(runs: pd.DataFrame, task: str, size: int, slugs) -> tuple:
    return tuple(sorted(set(rows_of(runs, task, size, slugs)["study"])))


def metric_of(runs: pd.DataFrame, task: str) -> str:
    return str(runs.loc[runs["task"] == task, "metric"].iloc[0])


def chance_level(ev: Evidence, task: str) -> float:
    """The score of a constant prediction: the majority class share (accuracy, F1's is not
    chance) or 0 (MCC, correlations); NaN for accuracy without the eval labels."""
    metric = metric_of(ev.runs, task)
    if metric == "accuracy":
        labels = ev.labels.get(task)
        return float(np.bincount(np.asarray(labels, dtype=int)).max() / len(labels)) if labels is not None else math.nan
    return 0.0


def seed_design_of(ev: Evidence, task: str, size: int, slugs) -> tuple[int, int] | None | str:
    """The crossed seed_design (subsets, draws) the runs of `slugs` share, None when they come
    from independent trials, or why they cannot be paired: runs of a crossed design and runs of
    another design see different subsets at the same trial number."""
    designs = {ev.studies[s].seed_design if s in ev.studies else None for s in studies_of(ev.runs, task, size, slugs)}
    if len(designs) > 1:
        return "runs of different seed designs (crossed and not) are not paired by trial"
    return next(iter(designs), None)


def readable_design(ev: Evidence, task: str, size: int, slugs, trials: list[int]) -> tuple[int, int] | None | str:
    """seed_design_of the runs of `slugs` over their common `trials`, or why it cannot be read:
    also where the trials do not fill the design's subsets x draws table."""
    design = seed_design_of(ev, task, size, slugs)
    if design is not None and not isinstance(design, str) and trials != list(range(design[0] * design[1])):
        return "a crossed seed_design needs every run of its table"
    return design
