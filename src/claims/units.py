"""What a claim is tested on (Evidence) and one test of one claim on one unit (Unit), with
the builders every claim shares: paired contrasts of conditions, curves over k with their
bootstrap draws, probe curves with their seed draws, per-trial slopes, Welch and F tests.

Each unit carries two one-sided p-values: `p_for` (H0: the claim fails at this unit) and
`p_against` (H0: the claim holds at this unit), so src/claims/verdicts.py can combine
them by the claim's logic. A unit with `refused` set has no p-values and says why.

Every statistic (one-sided, equivalence and minimum-effect p's, bootstrap p's, the F test,
Spearman's exact p) is defined once, in src/stats/hypothesis.py; this module only picks which
one tests which claim.
"""

from __future__ import annotations

import math
from dataclasses import dataclass, field, replace
from typing import NamedTuple

import numpy as np
import pandas as pd
from scipy import stats

from src.config.schema import DataConfig, ReportConfig, StudyConfig, TrainConfig
from src.stats import hypothesis, validity
from src.stats.hypothesis import Bootstrap, Estimate


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

    def plain(self) -> pd.DataFrame:
        return self.runs[self.runs["plain"]] if "plain" in self.runs else self.runs


@dataclass(eq=False)  # compared and hashed by identity: a unit is one test
class Unit:
    """One test of one claim on one unit (a task and size, a layer, a pair of conditions)."""

    claim: str
    name: str  # e.g. "rt_sentiment n=256"
    test: str  # what is tested, e.g. "full − scratch > 0 (paired t)"
    estimate: float
    interval: tuple[float, float]  # 95%; NaN where none is printed (`interval_note` says why)
    n: object  # trials (or (n_a, n_b), or points)
    p_for: float = math.nan
    p_against: float = math.nan
    result: object = None  # the Estimate / Bootstrap behind it (for the planner)
    margin: float | None = None
    shape: str = "greater"  # greater | within | below | above (contrasts): how the planner reads it
    gaps: tuple = ()  # (task, size) whose full-vs-scratch gap the unit needs
    studies: tuple = ()  # studies that report the unit's runs (for the planner's command)
    notes: list = field(default_factory=list)
    refused: str = ""  # why no verdict comes from this unit
    interval_note: str = ""
    raw: bool = False  # its p comes from an exact test or a table the bootstrap does not cover
    min_p: float = 0.0  # the smallest p its test can reach at its n
    key: tuple = ()  # full_beats_scratch: its (task, size), the gap other units look up
    adjusted: float = math.nan  # Holm-adjusted p of the one test that enters the report's family
    status: str = "unresolved"
    test_type: str = ""  # its validity.TEST_TYPES entry ("" for exact tests: no calibration needed)
    reads_seed_design: bool = False  # its variance reads a crossed seed_design (paired contrasts and curve draws do)
    collapse_rate: float = 0.0  # the largest share of collapsed runs among its conditions


def design_refusal(
    unit: Unit, test_type: str, n_trials: int, collapse_rate: float = 0.0, design: tuple[int, int] | None = None
) -> Unit:
    """Refuse `unit` (no interval, no p) where validity.decidable says its test does not hold its
    calibration at `n_trials` trials ("the design cannot decide at T = n: <reason>")."""
    unit.test_type, unit.collapse_rate = test_type, collapse_rate
    ok, reason = validity.decidable(test_type, n_trials, collapse_rate, design=design)
    if not ok:
        unit.refused = unit.interval_note = reason
        unit.interval, unit.p_for, unit.p_against = (math.nan, math.nan), math.nan, math.nan
    return unit


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


def collapse_rate(runs: pd.DataFrame, task: str, size: int, slugs) -> float:
    """The largest share of collapsed runs among the conditions `slugs` at (task, size), over all
    their finished runs: the rate validity.decidable reads for the collapse-skewed null."""
    rows = rows_of(runs, task, size, slugs)
    rows = rows[rows["status"] == "ok"]
    if rows.empty or "collapsed" not in rows:
        return 0.0
    return float(rows["collapsed"].fillna(False).astype(bool).groupby(rows["slug"]).mean().max())


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


def paired_estimate(
    ev: Evidence, task: str, size: int, weights: dict[str, float]
) -> tuple[Estimate, list[str], tuple[int, int] | None]:
    """sum_slug weight * mean score, paired by trial, with the crossed trials x eval examples
    variance (trials only where a run's predictions are missing; subsets x draws x examples for
    a crossed seed_design), its notes and the seed design it read."""
    slugs = list(weights)
    trials, notes = common_trials(ev.runs, task, size, slugs)
    design = readable_design(ev, task, size, slugs, trials)
    if isinstance(design, str):
        return Estimate(math.nan, math.nan, 0), [*notes, design], None
    if not trials:
        return Estimate(math.nan, math.nan, 0), notes, design
    metric, labels = metric_of(ev.runs, task), np.asarray(ev.labels.get(task, np.zeros(1)))
    terms = [(w, *scores_of(ev, task, size, slug, trials)) for slug, w in weights.items()]
    if any(predictions is None for _, predictions, _ in terms):
        metric, terms = "trials only", [(w, np.zeros((len(trials), labels.size)), s) for w, _, s in terms]
        notes = notes + ["trials only (no per-example predictions)"]
    if design is not None:
        notes = [*notes, f"crossed seed_design: {design[0]} subsets x {design[1]} draws"]
    return hypothesis.paired_contrast(terms, labels, metric, design), notes, design


def estimate_unit(claim: str, name: str, test: str, estimate: Estimate, p_for: float, p_against: float, **kw) -> Unit:
    return Unit(
        claim, name, test, estimate.estimate, estimate.interval(0.95), estimate.n, p_for, p_against, estimate, **kw
    )


def contrast_unit(
    ev: Evidence,
    claim: str,
    task: str,
    size: int,
    weights: dict[str, float],
    test: str,
    name: str | None = None,
    shape: str = "greater",
    margin: float | None = None,
    gap: bool = False,
    shift: float = 0.0,
) -> Unit:
    """A paired contrast sum_slug weight * score (minus `shift`, e.g. a chance level) at (task, size).
    shape: greater (> 0) | within (|·| < margin) | below (< margin: no gain) | above (> −margin: no loss)."""
    estimate, notes, design = paired_estimate(ev, task, size, weights)
    return estimate_test_unit(
        claim,
        name or f"{task} n={size}",
        test,
        replace(estimate, estimate=estimate.estimate - shift),
        shape,
        margin,
        collapse_rate(ev.runs, task, size, weights),
        design,
        gaps=((task, size),) if gap else (),
        studies=studies_of(ev.runs, task, size, weights),
        notes=notes,
        key=(task, size),
        reads_seed_design=True,
    )


def refuse_trials_as_independent(unit: Unit, ev: Evidence) -> Unit:
    """Refuse a unit whose test takes its runs' trials as independent (slopes, Welch, curve
    bootstraps that did not read the design, exact tests over trials) when they come from a crossed
    seed_design: there the trials share subsets and draws. Paired contrasts and the differences
    of curve statistics whose draws read the design say so (`reads_seed_design`)."""
    crossed = [s for s in unit.studies if s in ev.studies and ev.studies[s].seed_design is not None]
    if crossed and not unit.reads_seed_design and not unit.refused:
        unit.refused = unit.interval_note = (
            f"runs of a crossed seed_design ({', '.join(crossed)}): this test takes the trials as independent, "
            "which they are not; only paired contrasts and differences of curve statistics read the design"
        )
        unit.interval, unit.p_for, unit.p_against = (math.nan, math.nan), math.nan, math.nan
    return unit


def estimate_test_unit(
    claim: str,
    name: str,
    test: str,
    estimate: Estimate,
    shape: str = "greater",
    margin: float | None = None,
    collapse: float = 0.0,
    design: tuple[int, int] | None = None,
    **kw,
) -> Unit:
    """The unit testing `estimate` by its shape (contrast_unit's), refused where the design
    cannot decide at its n with the condition's `collapse` rate and its crossed seed `design`."""
    p_for, p_against = {
        "greater": lambda: (estimate.p_greater(), estimate.p_less()),
        "within": lambda: (estimate.p_equivalent(margin), estimate.p_beyond(margin)),
        "below": lambda: (estimate.p_less(margin), estimate.p_greater(margin)),
        "above": lambda: (estimate.p_greater(-margin), estimate.p_less(-margin)),
    }[shape]()
    unit = estimate_unit(claim, name, test, estimate, p_for, p_against, margin=margin, shape=shape, **kw)
    test_type = "equivalence" if shape == "within" else "one-sided"
    return design_refusal(unit, test_type, estimate.n, collapse, design)


def bootstrap_unit(
    ev: Evidence,
    claim: str,
    name: str,
    test: str,
    estimate: float,
    draws: np.ndarray,
    n: int,
    kind: str,
    design: tuple[int, int] | None = None,
    **kw,
) -> Unit:
    """A percentile-bootstrap statistic, claim "> 0" (or |·| < margin with `margin`). `kind` is its
    calibration test type: "bootstrap-difference" for a difference of two like curve statistics
    tested at 0, "bootstrap" for a curve statistic against a fixed value or margin; `design` the
    crossed seed_design its draws read (curves_design). Refused (printed without an interval or
    p) where validity.decidable says the design cannot decide at n trials, and above
    report.max_undefined_share."""
    s, margin = ev.settings, kw.pop("margin", None)
    boot = Bootstrap(float(estimate), np.asarray(draws, dtype=float), n)
    share = boot.undefined_share
    unit = Unit(claim, name, test, boot.estimate, boot.interval(0.95), n, result=boot, margin=margin, **kw)
    unit.notes.append(f"undefined draws {share:.1%}")
    if design_refusal(unit, kind, n, design=design).refused:
        return unit
    if share > s.max_undefined_share:
        unit.refused = unit.interval_note = (
            f"{share:.1%} of bootstrap draws undefined (allowed ≤ {s.max_undefined_share:.0%})"
        )
        unit.interval = (math.nan, math.nan)
        return unit
    if margin is None:
        unit.p_for, unit.p_against = boot.p_greater(), boot.p_less()
    else:
        unit.p_for, unit.p_against = boot.p_equivalent(margin), boot.p_beyond(margin)
    return unit


def welch_unit(claim: str, name: str, test: str, a: np.ndarray, b: np.ndarray, **kw) -> Unit:
    """Welch's two-sample t test of mean(a) − mean(b) > 0 (scipy), with its 95% CI."""
    a, b = np.asarray(a, dtype=float), np.asarray(b, dtype=float)
    estimate = float(np.mean(a) - np.mean(b)) if len(a) and len(b) else math.nan
    sd = math.sqrt((np.var(a, ddof=1) + np.var(b, ddof=1)) / 2) if len(a) > 1 and len(b) > 1 else math.nan
    unit = Unit(claim, name, test, estimate, (math.nan, math.nan), (len(a), len(b)), result={"sd": sd}, **kw)
    if len(a) < 2 or len(b) < 2:
        unit.refused = "fewer than 2 runs on a side"
        return unit
    if design_refusal(unit, "welch", min(len(a), len(b))).refused:
        return unit
    ci = stats.ttest_ind(a, b, equal_var=False).confidence_interval(0.95)
    unit.interval = (float(ci.low), float(ci.high))
    unit.p_for = float(stats.ttest_ind(a, b, equal_var=False, alternative="greater").pvalue)
    unit.p_against = float(stats.ttest_ind(a, b, equal_var=False, alternative="less").pvalue)
    return unit


def exact_unit(claim: str, name: str, test: str, x, y, **kw) -> Unit:
    """Spearman ρ(x, y) > 0 by the exact permutation test of the pairings (scipy), one-sided: raw p,
    with the smallest p it can reach at this many points (1 / n!)."""
    x, y = np.asarray(x, dtype=float), np.asarray(y, dtype=float)
    rho = hypothesis.spearman(x, y)
    unit = Unit(claim, name, test, rho, (math.nan, math.nan), len(x), raw=True, **kw)
    unit.interval_note = "exact test: no interval"
    if len(x) < 3 or not np.isfinite(rho):
        unit.refused = "fewer than 3 points or a constant side"
        return unit
    unit.min_p = 1 / math.factorial(len(x)) if len(x) <= 8 else 0.0
    unit.p_for, unit.p_against = (hypothesis.exact_spearman_p(x, y, side) for side in ("greater", "less"))
    return unit


def slope_unit(claim: str, name: str, test: str, x, per_trial: np.ndarray, **kw) -> Unit:
    """The OLS slope of each trial's curve (rows of `per_trial`, columns at `x`), and a one-sample
    t test over trials that the mean slope is > 0: a valid test at 2+ trials, where a
    percentile bootstrap of ρ is not."""
    x = np.asarray(x, dtype=float)
    slopes = np.array([np.polyfit(x, row, 1)[0] for row in np.asarray(per_trial, dtype=float)])
    n = len(slopes)
    se = float(np.std(slopes, ddof=1) / math.sqrt(n)) if n > 1 else math.nan
    sd = float(np.std(slopes, ddof=1)) if n > 1 else math.nan
    estimate = Estimate(float(np.mean(slopes)) if n else math.nan, se, n, n - 1, sd, n - 1)
    unit = estimate_unit(claim, name, test, estimate, estimate.p_greater(), estimate.p_less(), **kw)
    return design_refusal(unit, "one-sided", n)


# --- curves over k and probe curves ------------------------------------------------------------------------


@dataclass
class Curve:
    """A progressive curve over k = 0..L: its mean, bootstrap draws [B, L+1] (trials and, for
    accuracy, eval examples, the same draw at every k), per-trial values [T, L+1], trials, notes,
    and the crossed seed_design its draws read (subsets and draws resampled), None for
    independent trials, or why its runs' crossed design could not be read (readable_design)."""

    mean: np.ndarray
    draws: np.ndarray
    per_trial: np.ndarray
    trials: list[int]
    notes: list[str]
    studies: tuple
    design: tuple[int, int] | None | str = None


def progressive_curve(
    ev: Evidence, task: str, size: int, rng: np.random.Generator, example_counts: np.ndarray | None = None
) -> Curve | None:
    """The curve of `task` at `size`; `example_counts` are the task's shared eval-set draws
    (hypothesis.example_draws), None for fresh ones."""
    rows = ev.plain()
    rows = rows[(rows["scheme"] == "progressive") & (rows["task"] == task) & (rows["size"] == size)]
    by_k = {int(k): s for k, s in zip(rows["k"], rows["slug"])}
    if sorted(by_k) != list(range(ev.num_layers + 1)):
        return None
    slugs = [by_k[k] for k in range(ev.num_layers + 1)]
    trials, notes = common_trials(ev.runs, task, size, slugs)
    if not trials:
        return None
    labels = np.asarray(ev.labels.get(task, np.zeros(1)))
    metric = metric_of(ev.runs, task)
    points = [scores_of(ev, task, size, slug, trials) for slug in slugs]
    if any(predictions is None for predictions, _ in points):
        metric = "trials only"
    predictions = np.stack(
        [np.zeros((len(trials), labels.size)) if p is None or metric == "trials only" else p for p, _ in points]
    )
    scores = np.stack([s for _, s in points])  # [K, T]
    design = readable_design(ev, task, size, slugs, trials)
    if isinstance(design, str):
        notes = [*notes, f"{design}: its trials are resampled as independent"]
    elif design is not None:
        notes = [*notes, f"crossed seed_design: {design[0]} subsets x {design[1]} draws"]
    read = design if isinstance(design, tuple) else None
    draws = hypothesis.curve_draws(
        metric, predictions, labels, scores, ev.settings.bootstrap_resamples, rng, example_counts, read
    )
    per_trial = scores.T
    return Curve(
        per_trial.mean(axis=0),
        draws,
        per_trial,
        trials,
        notes,
        studies_of(ev.runs, task, size, slugs),
        design,
    )


def curves_design(curves) -> tuple[tuple[int, int] | None, bool]:
    """For a statistic of several curves' draws: the crossed seed_design validity.decidable
    reads (of the curves whose draws read one, that with the fewest levels of a factor; None where
    none did) and whether every curve from a crossed design read it (else its trials were
    resampled as independent, and refuse_trials_as_independent refuses the unit)."""
    read = [c.design for c in curves if isinstance(c.design, tuple)]
    return min(read, key=min, default=None), not any(isinstance(c.design, str) for c in curves)


class ProbeCurve(NamedTuple):
    """A probe curve over layers 0..L: per-seed scores [S, L+1], bootstrap draws [B, L+1] of
    their mean (None with one seed), the eval predictions [S, L+1, N] (None where not stored:
    the draws then resample the seeds alone) and the metric."""

    per_seed: np.ndarray
    draws: np.ndarray | None
    predictions: np.ndarray | None
    metric: str

    @property
    def mean(self) -> np.ndarray:
        return self.per_seed.mean(axis=0)

    @property
    def seeds(self) -> int:
        return len(self.per_seed)

    @property
    def eval_resampled(self) -> bool:
        return self.predictions is not None

    @property
    def resampled(self) -> str:
        return "probe seeds and eval examples" if self.eval_resampled else "probe seeds"


def probe_curve(
    ev: Evidence, task: str, rng: np.random.Generator, example_counts: np.ndarray | None = None
) -> ProbeCurve | None:
    """The probe curve of `task`. With several seeds its draws resample the seeds (as a curve's
    trials) and, where the probes' eval predictions are stored, the eval examples by
    `example_counts`: the draws the finetuning curves of the task take, since probe and
    finetuning are scored on the same eval set, whose noise the seeds' spread does not hold."""
    if ev.probe.empty or task not in set(ev.probe["task"]):
        return None
    rows = ev.probe[ev.probe["task"] == task].assign(seed=lambda t: t.get("seed", 0))
    table = rows.pivot_table(index="seed", columns="layer", values="value").reindex(columns=range(ev.num_layers + 1))
    if table.isna().any().any():
        return None
    scores = table.to_numpy(dtype=float)  # [S, L+1]: the seeds as a curve's trials
    labels, predictions = ev.labels.get(task), ev.probe_predictions.get(task)
    metric = str(rows["metric"].iloc[0]) if "metric" in rows else "trials only"
    if (
        labels is None
        or predictions is None
        or predictions.shape != (*scores.shape, len(labels))
        or metric not in hypothesis.EXAMPLE_METRICS
    ):
        metric, predictions = "trials only", None
    resamples = ev.settings.bootstrap_resamples
    if len(scores) < 2:
        draws = None
    elif predictions is None:
        draws = hypothesis.resampled_means(scores, resamples, rng)
    else:
        draws = hypothesis.curve_draws(
            metric, np.swapaxes(predictions, 0, 1), np.asarray(labels), scores.T, resamples, rng, example_counts
        )
    return ProbeCurve(scores, draws, predictions, metric)


PROBE_MEASURES = {  # probe.csv columns beside the score, and what the report calls them
    "selectivity": "selectivity (score − control task's score)",
    "compression": "MDL compression (uniform / online codelength)",
}


def probe_measure_curve(ev: Evidence, task: str, column: str) -> np.ndarray | None:
    """The mean over probe seeds of a PROBE_MEASURES column by layer 0..L, None where the probe
    table lacks it (older probes, or no online code: regression)."""
    rows = ev.probe[ev.probe["task"] == task] if column in ev.probe else pd.DataFrame()
    if rows.empty:
        return None
    curve = rows.groupby("layer")[column].mean().reindex(range(ev.num_layers + 1)).to_numpy(dtype=float)
    return None if np.isnan(curve).any() else curve


def probe_contrast(ev: Evidence, task: str, probe: ProbeCurve, weights: dict[int, float]) -> Estimate:
    """sum_layer weight * probe score, paired by probe seed: hypothesis.paired_contrast with the
    seeds as its trials (a probe seed, like a trial, fixes the init and the data order) and the
    eval examples crossed with them where the probes' predictions are stored; the seeds alone
    (paired t) where not. One seed gives no SE."""
    labels = np.asarray(ev.labels.get(task, np.zeros(1)))
    # without stored predictions probe.metric is "trials only", which reads no predictions
    predictions = probe.predictions if probe.eval_resampled else np.zeros((*probe.per_seed.shape, labels.size))
    terms = [(w, predictions[:, layer], probe.per_seed[:, layer]) for layer, w in weights.items()]
    return hypothesis.paired_contrast(terms, labels, probe.metric)


ONE_PROBE_SEED = (
    "one probe seed: the probe curve's own noise (seed and eval) is unmeasured, so any interval would be too "
    "narrow by an unknown amount; no verdict until several probe seeds run"
)


def along_draws(function, draws: np.ndarray) -> np.ndarray:
    return np.apply_along_axis(function, 1, draws)
