"""What the claims are tested on (Evidence), and how a claim's builders read it: the runs of
a task, size and set of conditions, the trials they all finished, their scores and per-example
predictions, the studies that report them, the task's metric and chance level, and the crossed
seed_design their trials share."""

from __future__ import annotations

import math
from dataclasses import dataclass, field
from typing import NamedTuple

import numpy as np
import pandas as pd

from src.config.schema import DataConfig, ReportConfig, StudyConfig, TrainConfig


class RunsIndex(NamedTuple):
    """What Evidence reads its runs table through: a report reads each condition many times, and filtering the
    whole table each time was most of the report stage's time."""

    runs: pd.DataFrame  # the table it indexes (a new table, a new index)
    positions: dict  # (task, size, slug) -> the row positions of that condition
    read: dict  # (task, size, slug) -> its ConditionRuns, as read so far
    metric: dict  # task -> the metric of its runs


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
    _index: RunsIndex | None = field(default=None, init=False, repr=False, compare=False)

    def plain(self) -> pd.DataFrame:
        return self.runs[self.runs["plain"]] if "plain" in self.runs else self.runs

    def _runs_index(self) -> RunsIndex:
        """The index of `runs`, built once per runs table (a new table, a new index)."""
        if self._index is None or self._index.runs is not self.runs:
            runs = self.runs
            positions = runs.groupby(["task", "size", "slug"], sort=False).indices if len(runs) else {}
            first = runs.drop_duplicates("task") if "metric" in runs else runs.iloc[:0]
            self._index = RunsIndex(runs, positions, {}, dict(zip(first["task"], first.get("metric", []))))
        return self._index

    def condition_runs(self, task: str, size: int, slug: str) -> ConditionRuns:
        """The runs of one condition."""
        index, key = self._runs_index(), (task, int(size), slug)
        if key not in index.read:
            index.read[key] = ConditionRuns.of(index.runs.iloc[index.positions.get(key, [])])
        return index.read[key]

    def metric(self, task: str) -> str:
        """The metric of `task`'s runs (its first row's)."""
        return str(self._runs_index().metric[task])


@dataclass(frozen=True)
class ConditionRuns:
    """One condition's runs as the claims read them. A run two studies share has a row in each (the
    same run): `ok_trials`, `diverged` and `collapsed_ok` count rows; the per-trial readings take the
    first row of each trial."""

    ok_trials: frozenset[int]  # trials with a finished ("ok") row
    diverged: int  # rows not "ok"
    collapsed_ok: dict[int, int]  # per trial, its "ok" rows flagged collapsed
    value: dict[int, float]  # per trial: the score
    collapsed: dict[int, bool]  # per trial: the collapse flag (False where not stored)
    majority_share: dict[int, float]  # per trial: the largest class's share of its predictions (NaN: not stored)
    studies: frozenset[str]

    @classmethod
    def of(cls, rows: pd.DataFrame) -> ConditionRuns:
        flag = rows["collapsed"].fillna(False).astype(bool) if "collapsed" in rows else pd.Series(False, rows.index)
        share = rows["majority_share"].astype(float) if "majority_share" in rows else pd.Series(math.nan, rows.index)
        trials, ok = rows["trial"].astype(int).tolist(), (rows["status"] == "ok").tolist()
        values, flags, shares = rows["value"].astype(float).tolist(), flag.tolist(), share.tolist()
        first: dict[int, int] = {}
        collapsed_ok: dict[int, int] = {}
        for i, (trial, finished, collapsed) in enumerate(zip(trials, ok, flags)):
            first.setdefault(trial, i)
            if finished:
                collapsed_ok[trial] = collapsed_ok.get(trial, 0) + int(collapsed)
        return cls(
            ok_trials=frozenset(collapsed_ok),
            diverged=len(ok) - sum(ok),
            collapsed_ok=collapsed_ok,
            value={trial: values[i] for trial, i in first.items()},
            collapsed={trial: bool(flags[i]) for trial, i in first.items()},
            majority_share={trial: shares[i] for trial, i in first.items()},
            studies=frozenset(rows["study"]) if "study" in rows else frozenset(),
        )


# --- rows, trials and predictions --------------------------------------------------------------------------


def common_trials(ev: Evidence, task: str, size: int, slugs) -> tuple[list[int], list[str]]:
    """(trials every slug finished at (task, size), notes on runs left out or kept)."""
    conditions = [ev.condition_runs(task, size, slug) for slug in dict.fromkeys(slugs)]
    common = frozenset.intersection(*(c.ok_trials for c in conditions)) if conditions else frozenset()
    diverged = sum(c.diverged for c in conditions)
    collapsed = sum(c.collapsed_ok[trial] for c in conditions for trial in common)
    notes = [f"{diverged} diverged run(s) left out"] if diverged else []
    notes += [f"{collapsed} collapsed run(s) kept"] if collapsed else []
    return sorted(common), notes


def scores_of(ev: Evidence, task: str, size: int, slug: str, trials: list[int]) -> tuple[np.ndarray | None, np.ndarray]:
    """(predictions [T, N] or None without them, scores [T]) of one condition over `trials`."""
    values = ev.condition_runs(task, size, slug).value
    scores = np.array([values[trial] for trial in trials], dtype=float)
    keys = [(task, size, slug, t) for t in trials]
    if all(k in ev.predictions for k in keys) and task in ev.labels:
        return np.stack([ev.predictions[k] for k in keys]), scores
    return None, scores


def studies_of(ev: Evidence, task: str, size: int, slugs) -> tuple:
    return tuple(sorted(frozenset().union(*(ev.condition_runs(task, size, slug).studies for slug in slugs))))


def chance_level(ev: Evidence, task: str) -> float:
    """The score of a constant prediction: the majority class share (accuracy, F1's is not
    chance) or 0 (MCC, correlations); NaN for accuracy without the eval labels."""
    metric = ev.metric(task)
    if metric == "accuracy":
        labels = ev.labels.get(task)
        return float(np.bincount(np.asarray(labels, dtype=int)).max() / len(labels)) if labels is not None else math.nan
    return 0.0


def seed_design_of(ev: Evidence, task: str, size: int, slugs) -> tuple[int, int] | None | str:
    """The crossed seed_design (subsets, draws) the runs of `slugs` share, None when they come
    from independent trials, or why they cannot be paired: runs of a crossed design and runs of
    another design see different subsets at the same trial number."""
    designs = {ev.studies[s].seed_design if s in ev.studies else None for s in studies_of(ev, task, size, slugs)}
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
