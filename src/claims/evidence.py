"""What the claims are tested on (Evidence), and how a claim's builders read it: the runs of
a task, size and set of conditions, the trials they all finished, their scores and per-example
predictions, the studies that report them, the task's metric and chance level, and the crossed
seed_design their trials share. The loaders here are where the tables (runs, probe, weight change, and the
report's tables beside the claims: collapse counts, other metrics, Table 1's trials) become typed records;
no other module of src/claims filters a table by its column names."""

from __future__ import annotations

import math
import warnings
from collections import Counter
from collections.abc import Callable, Iterable
from dataclasses import dataclass, field
from functools import cached_property
from typing import NamedTuple

import numpy as np
import pandas as pd

from src.artefacts.evidence import RUN, condition_of
from src.artefacts.run_result import fallbacks_in
from src.conditions.condition import Condition
from src.config.schema import DataConfig, ReportConfig, StudyConfig, TrainConfig

NEAR_COLLAPSE_SHARE = 0.90
"""A run whose most common prediction covers at least this share of the eval set has (nearly) collapsed:
it predicts one class for (almost) everything, whatever its accuracy. Such a run's collapse is an outcome of
its own (each condition's rate with an exact interval, compared between conditions), and every run counts in one
of the two outcomes a contrast reads: whether it collapsed, or, where no condition's run of its trial did, its
score (src/claims/units.py contrast_unit; docs/calibration.md measures the tests with collapses of 0.90-1 mixed
in). A task whose majority class is near this share cannot tell a collapse from a good run: its threshold must
exceed that class's share."""


PLENTIFUL_SIZE = 5_000
"""The smallest training-set size the papers call plentiful: 001 subsamples 500, 5k and 50k examples (§2) and
states its plentiful-data findings at 5k and up (App. D: "minimal effects of training longer than three epochs
for the subsamples of 5k"). A claim about plentiful data is tested at sizes from here up and is outside the
paper's scope below."""


PLENTIFUL = "plentiful data, 5,000 examples and up"
SST2_QNLI = ("sst2", "qnli")  # 003 states its SST-2 and QNLI findings apart from CoLA's (§6.1.4, App. B)


def outside_scope(paper: str, scope: str) -> str:
    """The words of a unit outside its paper's scope (units.Refusal.OUT_OF_SCOPE): which paper, and where it
    states the claim."""
    return f"outside the paper's scope: {paper} states it for {scope}"


def nearly_collapsed(collapsed: bool, majority_share: float) -> bool:
    """Whether a run (nearly) collapsed: its majority share reaches NEAR_COLLAPSE_SHARE (a run without a stored
    share: its `collapsed` flag, which marks a higher share)."""
    return collapsed or majority_share >= NEAR_COLLAPSE_SHARE


DEGRADE_GAP = 0.06
"""A run has degraded when its majority share exceeds, by at least this much, the lower of two references among
the runs that did not (nearly) collapse: the median of its unit's runs (every condition's, on the unit's trials)
and the lower quartile of its own condition's runs. It predicts one class for a visibly larger share of the eval set
than the unit's typical run or than its own condition's better runs, so its condition's runs are a mixture,
whatever their share's distance from NEAR_COLLAPSE_SHARE; a condition whose runs are all alike is no mixture, and
one consistently more one-sided than the others is flagged only beyond twice the gap or so. A degraded run counts
with the (nearly) collapsed ones, as an outcome of its own (runs_flagged). The gap is measured (docs/calibration.md,
"Runs that degrade below the flags"): a degradation deeper than it is counted; one shallower leaves the trained
runs' tests within their size targets."""


def runs_flagged(collapsed, majority_share) -> np.ndarray:
    """Per run, whether it counts in its condition's collapse outcome rather than in its trained runs: it (nearly)
    collapsed (nearly_collapsed) or degraded (DEGRADE_GAP). Arrays [C, ..., T]: the unit's C conditions' runs over
    its T trials, any batch axes between; a share NaN (not stored) is never degraded."""
    shares = np.asarray(majority_share, dtype=float)
    with np.errstate(invalid="ignore"):
        nearly = np.asarray(collapsed, dtype=bool) | (shares >= NEAR_COLLAPSE_SHARE)
        typical = np.where(nearly, np.nan, shares)
        with warnings.catch_warnings():  # a unit or condition with no such run has no reference: none degraded
            warnings.simplefilter("ignore", RuntimeWarning)
            unit = np.nanmedian(np.moveaxis(typical, 0, -1), axis=(-2, -1))
            own = np.nanpercentile(typical, 25, axis=-1, keepdims=True)
        reference = np.fmin(np.expand_dims(unit, (0, -1)), own)
        return nearly | (shares >= reference + DEGRADE_GAP)


class Run(NamedTuple):
    """One row of a condition's runs, as the claims read it."""

    trial: int
    study: str
    ok: bool  # finished ("ok"); else diverged
    value: float
    collapsed: bool  # False where not stored
    majority_share: float  # the largest class's share of its predictions (NaN: not stored)

    @property
    def nearly_collapsed(self) -> bool:
        return nearly_collapsed(self.collapsed, self.majority_share)


class Refs(NamedTuple):
    """The slugs of a condition's references as the runs table names them (Condition.references)."""

    full: str
    scratch: str
    baseline: str | None  # a modified condition's plain counterpart; None for the others


@dataclass(frozen=True)
class ConditionRuns:
    """One condition's runs as the claims read them: its Condition (read from its first row: artefacts/evidence.py
    condition_of), its slug and its references' slugs as the runs table names them, whether it is plain (the
    table's `plain` flag: Condition.is_plain where the report stage reads it), and its rows. A run two studies
    share has a row in each (the same run): `ok_trials`, `diverged` and `collapsed_ok` count rows; the per-trial
    readings take the first row of each trial."""

    condition: Condition
    slug: str
    refs: Refs
    plain: bool
    runs: tuple[Run, ...]

    @property
    def task(self) -> str:
        return self.condition.task

    @property
    def size(self) -> int:
        return self.condition.size

    @cached_property
    def first(self) -> dict[int, Run]:
        """Each trial's first row."""
        first: dict[int, Run] = {}
        for run in self.runs:
            first.setdefault(run.trial, run)
        return first

    @cached_property
    def collapsed_ok(self) -> dict[int, int]:
        """Per trial with a finished row: its finished rows flagged collapsed."""
        counts: dict[int, int] = {}
        for run in self.runs:
            if run.ok:
                counts[run.trial] = counts.get(run.trial, 0) + int(run.collapsed)
        return counts

    @property
    def ok_trials(self) -> frozenset[int]:
        return frozenset(self.collapsed_ok)

    @property
    def diverged(self) -> int:
        return sum(not run.ok for run in self.runs)

    @property
    def value(self) -> dict[int, float]:
        return {trial: run.value for trial, run in self.first.items()}

    @property
    def collapsed(self) -> dict[int, bool]:
        return {trial: run.collapsed for trial, run in self.first.items()}

    @property
    def majority_share(self) -> dict[int, float]:
        return {trial: run.majority_share for trial, run in self.first.items()}

    @property
    def studies(self) -> frozenset[str]:
        return frozenset(run.study for run in self.runs if run.study)  # "": a table without the column

    def finished(self) -> list[Run]:
        """Its finished rows, in table order."""
        return [run for run in self.runs if run.ok]


# what a condition the table does not hold reads as: no runs
NO_RUNS = ConditionRuns(Condition("", 0, 0, 0), "", Refs("", "", None), False, ())


def condition_table(runs: pd.DataFrame) -> dict[tuple[str, int, str], ConditionRuns]:
    """Every condition of a runs table by (task, size, slug), in the order of their first rows."""
    if not len(runs):
        return {}
    ok = (runs["status"] == "ok").tolist()
    collapsed = runs["collapsed"].fillna(False).astype(bool).tolist() if "collapsed" in runs else [False] * len(runs)
    shares = runs["majority_share"].astype(float).tolist() if "majority_share" in runs else [math.nan] * len(runs)
    studies = runs["study"].tolist() if "study" in runs else [""] * len(runs)
    plain = runs["plain"].astype(bool).tolist() if "plain" in runs else [True] * len(runs)
    rows = [
        Run(int(t), str(study), o, float(v), c, float(m))
        for t, study, o, v, c, m in zip(runs["trial"], studies, ok, runs["value"], collapsed, shares)
    ]
    groups = runs.groupby(["task", "size", "slug"], sort=False).indices
    heads = runs.iloc[[positions[0] for positions in groups.values()]].to_dict("records")
    found = {}
    for ((task, size, slug), positions), head in zip(groups.items(), heads):
        baseline = head.get("ref_baseline")
        refs = Refs(
            str(head.get("ref_full")), str(head.get("ref_scratch")), baseline if isinstance(baseline, str) else None
        )
        found[(task, int(size), slug)] = ConditionRuns(
            condition_of(head), slug, refs, plain[positions[0]], tuple(rows[i] for i in positions)
        )
    return found


PROBE_MEASURES = {  # probe.csv columns beside the score, and what the report calls them
    "selectivity": "selectivity (score − control task's score)",
    "compression": "MDL compression (uniform / online codelength)",
}


class ProbeScores(NamedTuple):
    """One probed task's probes as the claims read them (probe.csv): each seed's score at each layer (the mean of
    its rows), the metric (None where not stored) and each PROBE_MEASURES column the table holds, its mean
    over seeds by layer (NaN where no probe measured it)."""

    scores: dict[int, dict[int, float]]  # seed -> layer -> score
    metric: str | None
    measures: dict[str, dict[int, float]]  # column -> layer -> mean over seeds


def probe_table(probe: pd.DataFrame) -> dict[str, ProbeScores]:
    """Every probed task's ProbeScores, tasks in order (one seed, 0, where the table has no seed column)."""
    if probe.empty:
        return {}
    probe = probe.assign(seed=probe.get("seed", 0))
    scores: dict[str, dict[int, dict[int, float]]] = {}
    for (task, seed, layer), value in probe.groupby(["task", "seed", "layer"])["value"].mean().items():
        scores.setdefault(task, {}).setdefault(int(seed), {})[int(layer)] = float(value)
    measures: dict[str, dict[str, dict[int, float]]] = {}
    for column in [c for c in PROBE_MEASURES if c in probe]:
        for (task, layer), value in probe.groupby(["task", "layer"])[column].mean().items():
            measures.setdefault(task, {}).setdefault(column, {})[int(layer)] = float(value)
    firsts = probe.drop_duplicates("task")
    metric = dict(zip(firsts["task"], firsts["metric"].astype(str))) if "metric" in probe else {}
    return {task: ProbeScores(scores[task], metric.get(task), measures.get(task, {})) for task in sorted(scores)}


class Changes(NamedTuple):
    """‖ΔW‖ (Frobenius) of the runs of one task and size: by trial, then layer (in table order), and the slugs of
    the runs it holds."""

    by_trial: dict[int, dict[int, float]]
    slugs: frozenset[str]


def output_changes(weight_change: pd.DataFrame, full: set[tuple[str, int, str, int]]) -> dict[tuple[str, int], Changes]:
    """weight_change.csv's end-of-training ‖ΔW‖ of the output sublayer of the finished runs `full` (task, size, slug,
    trial), each (task, size, trial, layer) once (its first row), by (task, size) in order."""
    if weight_change.empty:
        return {}
    w = weight_change
    found: dict[tuple[str, int], dict[int, dict[int, float]]] = {}
    slugs: dict[tuple[str, int], set[str]] = {}
    columns = zip(w["task"], w["size"], w["slug"], w["trial"], w["layer"], w["frobenius"], w["sublayer"], w["status"])
    for task, size, slug, trial, layer, frobenius, sublayer, status in columns:
        if sublayer == "output" and status == "ok" and (task, int(size), slug, int(trial)) in full:
            by_layer = found.setdefault((task, int(size)), {}).setdefault(int(trial), {})
            if int(layer) not in by_layer:
                by_layer[int(layer)] = float(frobenius)
                slugs.setdefault((task, int(size)), set()).add(slug)
    return {key: Changes(found[key], frozenset(slugs[key])) for key in sorted(found)}


def step_changes(layer_change: pd.DataFrame) -> dict[tuple[str, int], dict[int, dict[int, dict[int, float]]]]:
    """layer_change.csv (the full model's ‖ΔW‖ after steps 1, 2, 4, …) by (task, size) in order, then trial, step
    and layer."""
    found: dict[tuple[str, int], dict[int, dict[int, dict[int, float]]]] = {}
    t = layer_change
    for task, size, trial, step, layer, frobenius in zip(
        t["task"], t["size"], t["trial"], t["step"], t["layer"], t["frobenius"]
    ):
        by_step = found.setdefault((task, int(size)), {}).setdefault(int(trial), {})
        by_step.setdefault(int(step), {})[int(layer)] = float(frobenius)
    return {key: found[key] for key in sorted(found)}


# --- the report's tables beside the claims (src/claims/render.py report_tables) ----------------------------


class CollapseCount(NamedTuple):
    """A condition's finished headline runs in one study, with how many collapsed (one class for every prediction)
    and how many nearly collapsed (nearly_collapsed: the collapsed among them), and that share of its runs
    (rounded to 3 decimals)."""

    study: str
    task: str
    size: int
    slug: str
    n: int
    collapsed: int
    nearly_collapsed: int
    rate: float


def collapse_counts(runs: pd.DataFrame) -> list[CollapseCount]:
    """The CollapseCount of each (study, task, size, slug) of runs.csv (every headline row, each study's) with a
    (nearly) collapsed run, in that key's order. A run without a stored flag has not collapsed (as
    condition_table reads it)."""
    counts: dict[tuple[str, str, int, str], list[int]] = {}
    columns = zip(
        runs["study"],
        runs["task"],
        runs["size"],
        runs["slug"],
        runs["headline"].astype(bool),
        runs["status"],
        runs["collapsed"].fillna(False).astype(bool),
        runs["majority_share"].astype(float),
    )
    for study, task, size, slug, headline, status, collapsed, share in columns:
        if headline and status == "ok":
            count = counts.setdefault((str(study), str(task), int(size), str(slug)), [0, 0, 0])
            count[0] += 1
            count[1] += int(collapsed)
            count[2] += int(nearly_collapsed(bool(collapsed), float(share)))
    return [
        CollapseCount(*key, n, collapsed, nearly, float(np.round(nearly / n, 3)))
        for key, (n, collapsed, nearly) in sorted(counts.items())
        if nearly > 0
    ]


class MetricPoint(NamedTuple):
    """One metric of one condition in one study (points.csv): its mean over finished runs, 95% t interval and n."""

    study: str
    task: str
    size: int
    slug: str
    metric: str
    mean: float
    ci_low: float
    ci_high: float
    n: int


def other_metrics(points: pd.DataFrame) -> list[MetricPoint]:
    """points.csv's rows of the metrics beside each task's headline metric, in table order."""
    columns = zip(
        points["headline"].astype(bool),
        *(points[name] for name in MetricPoint._fields),
    )
    return [
        MetricPoint(
            str(study), str(task), int(size), str(slug), str(metric), float(mean), float(low), float(high), int(n)
        )
        for headline, study, task, size, slug, metric, mean, low, high, n in columns
        if not headline
    ]


def permutation_trials(correlations: pd.DataFrame) -> list[int]:
    """The numbers of trials behind Table 1's rows (permutation_correlations.csv), each once, in order."""
    return sorted({int(trials) for trials in correlations["trials"]})


class RunsIndex(NamedTuple):
    """What Evidence reads its runs table through: the conditions, built once per runs table (a new table, a new
    index)."""

    runs: pd.DataFrame  # the table it indexes
    conditions: dict[tuple[str, int, str], ConditionRuns]
    metric: dict[str, str]  # task -> the metric of its runs


@dataclass
class Evidence:
    """What the claims are tested on. `runs`: one headline row per run (task, size, slug, trial,
    the Condition fields, metric, value, status, collapsed, study, ref_full, ref_scratch, ref_baseline,
    plain: an unmodified condition), read by condition (`conditions`, `condition_runs`, `curve`);
    predictions by (task, size, slug, trial) and eval labels
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
    # StudyConfig is made by make_dataclass (src/config/schema.py): mypy does not take it as a type
    studies: dict[str, StudyConfig] = field(default_factory=dict)  # type: ignore[valid-type]
    data: DataConfig | None = None
    train: TrainConfig | None = None
    probe_predictions: dict = field(default_factory=dict)
    num_heads: int = 0  # attention heads per layer (0: unknown); claims about every head of a layer read it
    _index: RunsIndex | None = field(default=None, init=False, repr=False, compare=False)
    _probes: tuple[pd.DataFrame, dict[str, ProbeScores]] | None = field(
        default=None, init=False, repr=False, compare=False
    )

    def _runs_index(self) -> RunsIndex:
        """The index of `runs`, built once per runs table (a new table, a new index)."""
        if self._index is None or self._index.runs is not self.runs:
            runs = self.runs
            first = runs.drop_duplicates("task") if "metric" in runs else None
            metric = {} if first is None else {str(t): str(m) for t, m in zip(first["task"], first["metric"])}
            self._index = RunsIndex(runs, condition_table(runs), metric)
        return self._index

    def conditions(self, scheme: str | None = None, plain: bool | None = True) -> list[ConditionRuns]:
        """The conditions of `scheme` (every scheme where None) that are plain (modified: False; both: None), in
        the order of their first rows."""
        return [
            c
            for c in self._runs_index().conditions.values()
            if (scheme is None or c.condition.scheme == scheme) and (plain is None or c.plain == plain)
        ]

    def curve(self, task: str, size: int) -> dict[int, ConditionRuns]:
        """The plain progressive conditions of `task` at `size` by k."""
        return {
            c.condition.k: c
            for c in self.conditions("progressive")
            if c.task == task and c.size == size and c.condition.k is not None
        }

    def curve_sizes(self) -> dict[str, list[int]]:
        """Each task's sizes with plain progressive runs, tasks and sizes in order."""
        sizes: dict[str, set[int]] = {}
        for c in self.conditions("progressive"):
            sizes.setdefault(c.task, set()).add(c.size)
        return {task: sorted(sizes[task]) for task in sorted(sizes)}

    def plain(self) -> pd.DataFrame:
        """The rows of the plain conditions (tools/calibrate reads them)."""
        index = self._runs_index()
        keep = {key for key, c in index.conditions.items() if c.plain}
        return index.runs[
            [key in keep for key in zip(index.runs["task"], index.runs["size"].astype(int), index.runs["slug"])]
        ]

    def probe_scores(self) -> dict[str, ProbeScores]:
        """Each probed task's probes, read once per probe table (a new table, read anew)."""
        if self._probes is None or self._probes[0] is not self.probe:
            self._probes = (self.probe, probe_table(self.probe))
        return self._probes[1]

    def fallback_counts(self) -> dict[tuple[str, str], int]:
        """How many runs, and how many probed tasks, took each fallback (src/artefacts/run_result.py
        fallbacks_in), keyed (fallback, "run" | "probed task"); empty where none took one or the tables
        predate the column."""
        counts: Counter[tuple[str, str]] = Counter()
        for table, unit, key in ((self.runs, "run", RUN), (self.probe, "probed task", ["task"])):
            if "fallbacks" in table:
                for cell in table.drop_duplicates(key)["fallbacks"]:
                    counts.update((fallback, unit) for fallback in fallbacks_in(cell))
        return dict(counts)

    def output_change(self) -> dict[tuple[str, int], Changes]:
        """The end-of-training ‖ΔW‖ of the output sublayer of the plain full model's finished runs (the condition
        that is its own full reference), by (task, size)."""
        full = {
            (c.task, c.size, c.slug, run.trial)
            for c in self.conditions()
            if c.slug == c.refs.full
            for run in c.finished()
        }
        return output_changes(self.weight_change, full)

    def step_change(self) -> dict[tuple[str, int], dict[int, dict[int, dict[int, float]]]]:
        """The full model's ‖ΔW‖ by (task, size), trial, step and layer (layer_change)."""
        return step_changes(self.layer_change) if not self.layer_change.empty else {}

    def condition_runs(self, task: str, size: int, slug: str) -> ConditionRuns:
        """The runs of one condition (none where the table holds none)."""
        return self._runs_index().conditions.get((task, int(size), slug), NO_RUNS)

    def metric(self, task: str) -> str:
        """The metric of `task`'s runs (its first row's)."""
        return self._runs_index().metric[task]


def grouped(conditions: Iterable[ConditionRuns], key: Callable[[ConditionRuns], tuple]) -> list[tuple[tuple, list]]:
    """`conditions` grouped by `key`, the keys in order and each group in table order (as a DataFrame's groupby)."""
    groups: dict[tuple, list[ConditionRuns]] = {}
    for c in conditions:
        groups.setdefault(key(c), []).append(c)
    return sorted(groups.items())


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


def chance_score(metric: str, labels: np.ndarray) -> float:
    """The score of the best constant prediction on eval `labels` (one per example; span QA: whether each question
    is answerable), the chance level of `metric`: accuracy, the majority class's share; binary F1, always
    predicting the positive class, 2p / (1 + p) with p the positive share (always negative scores 0); SQuAD 2.0
    F1, always "no answer", which scores 1 on each unanswerable question and 0 on the others; MCC and the
    regression correlations, 0 (a constant prediction has no correlation; sklearn's MCC gives it 0). NaN for
    a metric scored on its labels where none are given."""
    values = np.asarray(labels)
    if metric in ("mcc", "pearson", "spearman"):
        return 0.0
    if not values.size:
        return math.nan
    if metric == "accuracy":
        return float(np.bincount(values.astype(int)).max() / values.size)
    if metric == "f1":
        positive = float(np.mean(values == 1))
        return 2 * positive / (1 + positive)
    if metric == "squad_f1":
        return float(np.mean(values == 0))
    raise ValueError(f"no chance level for metric {metric!r}")


def chance_level(ev: Evidence, task: str) -> float:
    """`task`'s chance level: the best constant prediction's score on its eval labels (src/tasks/metrics.py
    chance_score, per metric); NaN for a metric scored on labels where its eval labels are missing."""
    labels = ev.labels.get(task)
    return chance_score(ev.metric(task), np.zeros(0) if labels is None else np.asarray(labels))


def seed_design_of(ev: Evidence, task: str, size: int, slugs) -> tuple[int, int] | None | str:
    """The crossed seed_design (subsets, draws) the runs of `slugs` share, None when they come
    from independent trials, or why they cannot be paired: runs of a crossed design and runs of
    another design see different subsets at the same trial number."""
    studies = [ev.studies.get(s) for s in studies_of(ev, task, size, slugs)]
    # StudyConfig is made by make_dataclass (src/config/schema.py), so mypy does not know its fields
    designs = {None if study is None else study.seed_design for study in studies}  # type: ignore[attr-defined]
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
