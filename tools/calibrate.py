"""Calibration of every test type the claims use, measured by simulation.

Data shaped like this pipeline's: a few trials (T = 3, 5, 10) of each condition, scored
on one eval set of EXAMPLES binary-labelled examples (a new eval set is drawn in every
replicate, since the claims are about the task, not about these sentences). A run's
correctness on an example is a probit threshold model,

    correct[c, t, n] = 1{ mu_c + trial_sd * z[c, t] + example_sd * v[c, n] + u[n] + eps[c, t, n] > 0 },

with z (the trial's seed and subset), v (the condition's own difficulty of example n), u
(difficulty shared by every condition) and eps (trial x example interaction) standard
normal, so that a trained run's expected accuracy is exactly Phi(mu_c / sqrt(2 + trial_sd^2 +
example_sd^2)) and a contrast's true value is known. A collapsed run predicts one class for every
example; a nearly collapsed one predicts that class for a share U(0.8, 0.98) of the examples on top
of its own predictions (majority share about 0.90-0.99). Each null (NULLS) sets the SDs and the
shares of each condition's runs that (nearly) collapse; the trained runs' mu is solved so that the
conditions' expected accuracy over all their runs, (nearly) collapsed ones included (the estimand of the
claims' test, which keeps every run), differs by exactly 0 (size, coverage) or exactly the margin
(equivalence and minimum-effect tests at their boundary): a condition's trained runs compensate for its
collapses.

Measured per (test, null, T): size, the rejection rate at the null boundary, at ALPHA and at
HOLM_LEVEL (the smallest level a p is compared against in the report's Holm family); coverage of
the 95% interval; its half-width against the oracle (1.96 x the SD of the estimate over
replicates); the share of replicates refused (no p). The estimate tests are
measured vectorised (hypothesis.crossed_variance and hypothesis.Estimate over a batch of
replicates, the code the claims call), each beside BEFORE, the estimator the report used until
these tables (its df Satterthwaite's over the mean squares of the components kept, its collapse
gate opened by the collapse rate of the runs it gated), and the robustness readings of
src/claims/units.py (the trial-only t; the (nearly) collapsed runs' trials excluded, whose estimand is
the trained runs' contrast, not 0 under a collapse null). docs/calibration.md shows the tables and the command that made
them; tests/unit/stats/test_calibration.py re-measures a fast subset. The hurdle that tests "A beats B"
(src/stats/collapse.py: collapse rates and the trained runs' contrast) has its own nulls, the trained runs alike
and the collapse rates equal (hurdle_table, HURDLE_NULLS), and alternatives where they are not. Margins and chance
levels test their trained runs (units.trained_reading): trained_table measures that test under nulls on the trained
runs with collapses of either condition, both, or one condition against a constant (TRAINED_NULLS, CHANCE_NULLS).

The head-importance-vs-reinit correlation (metrics/head_importance_vs_reinit.csv) has its own
simulation (simulate_heads, correlation_table): a few to 72 heads, each with a latent importance
and reinit effect, measured over 1 or 3 trials with trial noise as large as or 3x the heads' effects,
some reinit trials collapsed; its intervals' coverage is of the population Spearman correlation of
the measured quantities (population_spearman), and measures.correlation_interval picks the one reported.

The whole report (whole_report_table, `--tables whole-report`) is simulated on a finished run's design: its evidence
read as the report stage reads it, every outcome (runs' and probes' predictions and scores, weight change) redrawn
under a global null (every condition of a task alike, every probe layer alike, every layer moving alike;
null_replicate), the report judged by its own code (judge_claims), and each "supported" or "contradicted" compared
with the claim's truth under that null (claim_truths: each unit's estimand read on the null's expectation,
expected_evidence). It gives the rate of at least one wrong verdict in the report, split by verdict and by the
error rate each kind holds (Holm or intersection-union).
"""

from __future__ import annotations

import argparse
import concurrent.futures
import datetime
import functools
import itertools
import math
import shlex
import sys
import time
from dataclasses import dataclass, replace
from pathlib import Path

import numpy as np
import pandas as pd
from scipy import stats

from src.artefacts.evidence import read_evidence
from src.claims.evidence import Evidence
from src.claims.registry import CLAIMS
from src.claims.training import UNDERTRAINED, EpochGain, TrainingCheck
from src.claims.units import NEAR_COLLAPSE_SHARE, Unit
from src.claims.verdicts import decided_by, judge_claims, needed_gaps
from src.core.errors import UserError
from src.params.load import load_config, model_limits
from src.stats import correlation, hypothesis, validity
from src.stats.collapse import HURDLE_PARTS, hurdle
from src.stats.validity import decidable
from src.tasks.kinds import COLLAPSE_SHARE, Classification, TaskKind
from src.tasks.metrics import example_metric, score
from src.tasks.registry import TASKS

ALPHA = 0.05
FAMILY = 53  # one-sided tests in the report's Holm family (metrics/report.md)
HOLM_LEVEL = ALPHA / FAMILY  # the smallest level a p is compared against there
LEVEL = 0.95
ACCURACY = 0.8  # a trained run's expected accuracy (condition A)
MARGIN = 0.02  # equivalence / minimum-effect margin (accuracy points), as report.single_layer_margin
TRIALS = (3, 5, 10)
EXAMPLES = 500
SHARED_EXAMPLE_SD = 1.0  # u: difficulty every condition shares (it cancels from a contrast)
# the calibration targets every test type must meet (docs/calibration.md)
MAX_SIZE = 1.2  # x the level
MIN_COVERAGE = 0.94
MAX_HALF_WIDTH = 1.25  # x the oracle half-width, from 10 trials
CHUNK = 2000  # replicates simulated at once


@dataclass(frozen=True)
class Null:
    """A data-generating design: the SDs (probit scale) of a condition's per-trial and per-example
    effects, and the shares of each condition's runs that collapse (`collapse_a`, `collapse`: A's, B's;
    in the curves, `collapse` is that of the COLLAPSING_KS conditions) or nearly collapse (`near_a`,
    `near_b`). On a crossed seed_design (simulate_curve's `design`) a trial's effect is its subset's
    (SD `subset_sd`) plus its draw's (SD sqrt(trial_sd^2 - subset_sd^2)), so the expected accuracy is
    the same as with independent trials."""

    trial_sd: float
    example_sd: float
    collapse: float = 0.0
    subset_sd: float = 0.0
    collapse_a: float = 0.0
    near_a: float = 0.0
    near_b: float = 0.0

    @property
    def symmetric(self) -> bool:
        """A and B alike, so both one-sided tests measure one size (their rates are averaged)."""
        return (self.collapse_a, self.near_a) == (self.collapse, self.near_b)


NULLS = {
    "trial-dominated": Null(trial_sd=0.3, example_sd=0.1),
    "trial + example": Null(trial_sd=0.15, example_sd=0.3),
    "example-dominated": Null(trial_sd=0.02, example_sd=0.8),
    "interaction-only": Null(trial_sd=0.0, example_sd=0.0),
    "B collapses (0.2)": Null(trial_sd=0.05, example_sd=0.2, collapse=0.2),
    "A, the full model, collapses (0.2)": Null(trial_sd=0.05, example_sd=0.2, collapse_a=0.2),
    "both collapse (0.2)": Null(trial_sd=0.05, example_sd=0.2, collapse=0.2, collapse_a=0.2),
    "both nearly collapse (0.15)": Null(trial_sd=0.15, example_sd=0.3, near_a=0.15, near_b=0.15),
    "collapses and near-collapses mixed": Null(
        trial_sd=0.15, example_sd=0.3, collapse=0.1, collapse_a=0.05, near_a=0.1, near_b=0.15
    ),
}
# the curve statistics' nulls: B's low-k conditions collapse, their trained runs compensating so that the
# expected curves stay equal (a curve statistic keeps every run)
CURVE_NULLS = {
    "trial-dominated": NULLS["trial-dominated"],
    "example-dominated": NULLS["example-dominated"],
    "interaction-only": NULLS["interaction-only"],
    "collapse-skewed": Null(trial_sd=0.05, example_sd=0.2, collapse=0.2),
}


def _latent_scale(null: Null) -> float:
    return math.sqrt(1 + SHARED_EXAMPLE_SD**2 + null.trial_sd**2 + null.example_sd**2)


def _mean_for(accuracy: float, null: Null, collapse: float = 0.0, chance: float = 0.5) -> float:
    """mu giving expected accuracy `accuracy` when a share `collapse` of trials scores `chance` (a
    balanced eval set's class share: 0.5 of two classes) and the rest follow the threshold model."""
    return _latent_scale(null) * float(stats.norm.ppf((accuracy - chance * collapse) / (1 - collapse)))


NEAR_PUSH = (0.8, 0.98)  # the share of a nearly collapsed run's examples pushed to its one class


def simulate(
    null: Null,
    n_trials: int,
    reps: int,
    rng: np.random.Generator,
    contrast: float = 0.0,
    n_examples=EXAMPLES,
    compensate: bool = True,
    conditions: int = 2,
):
    """(correct [C, R, T, N], majority share [C, R, T]) of conditions A and B in `reps` replicates
    whose expected accuracy over all their runs, (nearly) collapsed ones included, differs by exactly
    `contrast` (A - B): each condition's runs collapse and nearly collapse (onto a class drawn per run) at
    the null's shares, and its trained runs' mu compensates (a pushed example scores 0.5 in expectation, so
    a nearly collapsed run counts as mean(NEAR_PUSH) of a collapse). Without `compensate` (the hurdle's
    nulls) it is the trained runs' expected accuracy that differs by `contrast`, whatever the collapses.
    With more `conditions` (C) than 2, conditions 2.. are more draws of B (the hurdle's contrasts of three
    conditions)."""
    labels = rng.integers(0, 2, (reps, 1, n_examples), dtype=np.int8)
    shared = SHARED_EXAMPLE_SD * rng.standard_normal((reps, 1, n_examples), dtype=np.float32)
    correct, majority = [], []
    for accuracy, collapse, near in (
        (ACCURACY, null.collapse_a, null.near_a),
        *[(ACCURACY - contrast, null.collapse, null.near_b)] * (conditions - 1),
    ):
        latent = (
            np.float32(_mean_for(accuracy, null, (collapse + np.mean(NEAR_PUSH) * near) if compensate else 0.0))
            + null.trial_sd * rng.standard_normal((reps, n_trials, 1), dtype=np.float32)
            + null.example_sd * rng.standard_normal((reps, 1, n_examples), dtype=np.float32)
            + shared
            + rng.standard_normal((reps, n_trials, n_examples), dtype=np.float32)
        )
        predictions = np.where(latent > 0, labels, 1 - labels)
        draw = rng.random((reps, n_trials, 1))
        one_class = draw < collapse
        if near:
            pushed = rng.random((reps, n_trials, n_examples)) < rng.uniform(*NEAR_PUSH, (reps, n_trials, 1))
            one_class = one_class | ((draw >= collapse) & (draw < collapse + near) & pushed)
        if collapse or near:
            # a (nearly) collapsed run predicts one class, either, as real runs do: onto class 1 alone, every
            # collapse would share one pattern of right and wrong examples, which the eval set's variance would see
            onto = rng.integers(0, 2, (reps, n_trials, 1), dtype=np.int8)
            predictions = np.where(one_class, onto, predictions)
        positive = predictions.mean(axis=-1)
        correct.append(predictions == labels)
        majority.append(np.maximum(positive, 1 - positive))
    return np.stack(correct), np.stack(majority)


TWO_CONDITIONS = (1, -1)  # A - B

# --- the estimators under test --------------------------------------------------------------------------------

ESTIMATORS = ("new", "before", "trial-only t", "collapsed excluded")
TRAINED = "trained runs"  # "collapsed excluded" as the test of a margin or chance level (trained_table), not a reading


def _mean_squares(d: np.ndarray):
    """MS_T, MS_E, MS_TE of tables d [R, T, N] (two-way, one value per cell)."""
    _, n_trials, n_examples = d.shape
    grand = d.mean(axis=(1, 2))
    ss_t = n_examples * ((d.mean(axis=2) - grand[:, None]) ** 2).sum(axis=1)
    ss_e = n_trials * ((d.mean(axis=1) - grand[:, None]) ** 2).sum(axis=1)
    ss_te = (d**2).sum(axis=(1, 2)) - n_trials * n_examples * grand**2 - ss_t - ss_e
    return ss_t / (n_trials - 1), ss_e / (n_examples - 1), ss_te / ((n_trials - 1) * (n_examples - 1))


def dropped_component_df(d: np.ndarray) -> np.ndarray:
    """BEFORE's df, for the tables only: Satterthwaite's over the mean squares of the components kept,
    so that a trial component estimated <= 0 left the variance on MS_E's N - 1 df."""
    n_trials, n_examples = d.shape[1:]
    ms_t, ms_e, ms_te = _mean_squares(d)
    keep_t, keep_e = ms_t > ms_te, ms_e > ms_te
    terms = ((keep_t, ms_t, n_trials - 1), (keep_e, ms_e, n_examples - 1))
    terms += ((1.0 - keep_t - keep_e, ms_te, (n_trials - 1) * (n_examples - 1)),)
    total = sum(w * m for w, m, _ in terms)
    with np.errstate(invalid="ignore", divide="ignore"):
        return total**2 / sum((w * m) ** 2 / df for w, m, df in terms)


def estimates(
    correct: np.ndarray, majority: np.ndarray, estimator: str, weights=(1, -1)
) -> tuple[hypothesis.Estimate, np.ndarray]:
    """The accuracy contrast sum_c weights[c] * accuracy_c (A - B by default) of each replicate as
    `estimator` tests it, over a batch: an Estimate of arrays [R] (NaN where refused) and the refused mask.
    "new" (the claims' test) and "trial-only t" keep every run, (nearly) collapsed ones included, as
    src/claims/units.py does; "collapsed excluded", the robustness reading, reads the trials where no
    condition's run (nearly) collapsed (majority share >= NEAR_COLLAPSE_SHARE), with no p below 2 of them;
    "before" kept every run and refused where (1 - q)^T > ALPHA for the largest share q of runs collapsed
    (share >= COLLAPSE_SHARE) in the replicate's own conditions."""
    # accuracy's pseudo-values are the correctness
    d = np.tensordot(np.asarray(weights, dtype=np.float32), correct.astype(np.float32), axes=1)
    reps, n_trials, _ = d.shape
    estimate, se, df, n = (np.full(reps, math.nan) for _ in range(4))
    kept = np.ones((reps, n_trials), dtype=bool)
    refused = np.zeros(reps, dtype=bool)
    if estimator == "before":
        rate = (majority >= COLLAPSE_SHARE).mean(axis=2).max(axis=0)
        refused = (rate > 0) & ((1 - rate) ** n_trials > ALPHA)
    elif estimator in ("collapsed excluded", TRAINED):
        kept = (majority < NEAR_COLLAPSE_SHARE).all(axis=0)
        refused = kept.sum(axis=1) < 2
    for k in np.unique(kept.sum(axis=1)):
        rows = np.flatnonzero((kept.sum(axis=1) == k) & ~refused)
        if not len(rows):
            continue
        table = d[rows][kept[rows]].reshape(len(rows), k, -1)
        estimate[rows], n[rows] = table.mean(axis=(1, 2)), k
        if estimator == "trial-only t":
            se[rows], df[rows] = table.mean(axis=2).std(axis=1, ddof=1) / math.sqrt(k), k - 1
            continue
        v = hypothesis.crossed_variance(table)
        se[rows] = np.sqrt(v.variance)
        df[rows] = dropped_component_df(table) if estimator == "before" else v.df
    return hypothesis.Estimate(estimate, se, np.where(refused, 0, n), df), refused


# --- measuring ---------------------------------------------------------------------------------------------


@dataclass(frozen=True)
class Row:
    """One cell of a calibration table: size at ALPHA and at HOLM_LEVEL (NaN where not measured),
    coverage, half-width / oracle, the shares of undefined and refused replicates. `tails`: 2 where both
    one-sided tests of a symmetric null were counted (their rates averaged), which halves the variance."""

    test: str
    null: str
    trials: int
    reps: int
    size: float
    coverage: float
    half_width: float  # mean half-width / oracle half-width (NaN where no oracle)
    undefined: float = 0.0  # share of replicates (or draws) where the statistic is undefined
    estimator: str = "new"
    design: tuple[int, int] | None = None  # a crossed seed_design's (subsets, draws)
    size_holm: float = math.nan
    refused: float = 0.0
    tails: int = 1

    def mc_se(self, rate: float) -> float:
        return math.sqrt(max(rate * (1 - rate), 1e-6) / (self.reps * self.tails))

    def size_ok(self, sigmas: float = 0.0) -> bool:
        return all(
            math.isnan(size) or size <= MAX_SIZE * level + sigmas * self.mc_se(MAX_SIZE * level)
            for size, level in ((self.size, ALPHA), (self.size_holm, HOLM_LEVEL))
        )

    def coverage_ok(self, sigmas: float = 0.0) -> bool:
        return math.isnan(self.coverage) or self.coverage >= MIN_COVERAGE - sigmas * self.mc_se(MIN_COVERAGE)

    def half_width_ok(self) -> bool:
        """The half-width target applies from 10 trials: below, a valid t interval on the trials' few df cannot
        come near the normal oracle (t(2) is 4.30, not 1.96)."""
        return math.isnan(self.half_width) or self.trials < max(TRIALS) or self.half_width <= MAX_HALF_WIDTH

    def ok(self, sigmas: float = 0.0) -> bool:
        return self.size_ok(sigmas) and self.coverage_ok(sigmas) and self.half_width_ok()


def difference_row(test, null_name, n_trials, at_zero, estimator, design=None) -> Row:
    """Size of the two-sided test, coverage and half-width / oracle of the interval, from
    Estimates of a contrast whose true value is 0."""
    values = np.array([e.estimate for e in at_zero])
    oracle = stats.norm.ppf(0.5 + LEVEL / 2) * values.std(ddof=1)
    intervals = np.array([e.interval(LEVEL) for e in at_zero])
    p = np.array([e.p_zero() for e in at_zero])
    return Row(
        test,
        null_name,
        n_trials,
        len(at_zero),
        float(np.mean(p < ALPHA)),
        float(np.mean((intervals[:, 0] <= 0) & (intervals[:, 1] >= 0))),
        float(np.mean(intervals[:, 1] - intervals[:, 0]) / 2 / oracle),
        estimator=estimator,
        design=design,
        size_holm=float(np.mean(p < HOLM_LEVEL)),
    )


@dataclass
class _Tally:
    """Running counts of one estimate test's cell over the chunks of a simulation."""

    rejected: np.ndarray  # [2, 2]: at ALPHA, HOLM_LEVEL, by tail
    covered: int = 0
    half: float = 0.0
    values: list = None
    refused: int = 0


ESTIMATE_TESTS = {  # test: (contrast simulated, rejected per level at it)
    "one-sided (p_greater)": 0.0,
    "difference (p_zero)": 0.0,
    f"equivalence (TOST, m={MARGIN})": MARGIN,
    f"beyond margin (p_beyond, m={MARGIN})": MARGIN,
}


def _rejections(test: str, e: hypothesis.Estimate) -> np.ndarray:
    """Rejections [R, 2, 2] of `test` in each replicate, per level and per tail (the one-sided test's p_greater
    and p_less; the other tests' one p twice)."""
    levels = np.array([ALPHA, HOLM_LEVEL])
    if test.startswith("one-sided"):
        return np.stack([e.p_greater()[:, None] < levels, e.p_less()[:, None] < levels], axis=-1)
    p = {"difference": e.p_zero, "equivalence": lambda: e.p_equivalent(MARGIN)}.get(
        test.split(" ")[0], lambda: e.p_beyond(MARGIN)
    )()
    return np.repeat((p[:, None] < levels)[..., None], 2, axis=-1)


def estimate_table(
    reps: int,
    seed: int = 0,
    trials=TRIALS,
    nulls=None,
    estimators=ESTIMATORS,
    n_examples=EXAMPLES,
    margin_reps: int | None = None,
    null_table=NULLS,
    compensate: bool = True,
    weights=TWO_CONDITIONS,
):
    """Every estimate test (ESTIMATE_TESTS) under every null of `null_table` at every T, by each estimator, in
    chunks of CHUNK replicates: `reps` at a true contrast of 0, `margin_reps` (default `reps`) at the margin. The
    one-sided size of an asymmetric null is the larger of its two tails'. `compensate`: as simulate's (without it
    the trained runs' contrast is the one at 0 or at the margin). `weights` (1,): condition A alone against a
    constant (a chance level), its trained runs' accuracy minus ACCURACY − the contrast."""
    rng = np.random.default_rng(seed)
    replicates = {0.0: reps, MARGIN: reps if margin_reps is None else margin_reps}
    rows = []
    for name in nulls or null_table:
        null = null_table[name]
        for n_trials in trials:
            tests = [t for t, contrast in ESTIMATE_TESTS.items() if replicates[contrast]]
            tallies = {(t, m): _Tally(np.zeros((2, 2)), values=[]) for t in tests for m in estimators}
            for start in range(0, max(replicates.values()), CHUNK):
                for contrast in (c for c, n in replicates.items() if start < n):
                    size = min(CHUNK, replicates[contrast] - start)
                    correct, majority = simulate(null, n_trials, size, rng, contrast, n_examples, compensate)
                    for method in estimators:
                        e, refused = estimates(correct[: len(weights)], majority[: len(weights)], method, weights)
                        if len(weights) == 1:  # A against the constant its expected accuracy exceeds by `contrast`
                            e = replace(e, estimate=e.estimate - (ACCURACY - contrast))
                        for test in (t for t in tests if ESTIMATE_TESTS[t] == contrast):
                            tally = tallies[(test, method)]
                            tally.rejected += np.sum(_rejections(test, e) & ~refused[:, None, None], axis=0)
                            tally.refused += int(refused.sum())
                            if test.startswith("difference"):
                                low, high = e.interval(LEVEL)
                                tally.covered += int(np.sum((low <= 0) & (high >= 0)))
                                tally.half += float(np.nansum((high - low) / 2))
                                tally.values.append(e.estimate[~refused])
            for (test, method), tally in tallies.items():
                n = replicates[ESTIMATE_TESTS[test]]
                # a symmetric null's two one-sided tests measure one size (averaged); else the larger tail's
                tails = 2 if test.startswith("one-sided") and null.symmetric and len(weights) == 2 else 1
                rejected = tally.rejected.mean(axis=1) if tails == 2 else tally.rejected.max(axis=1)
                decided = n - tally.refused
                coverage = half_width = math.nan
                if tally.values:
                    values = np.concatenate(tally.values)
                    oracle = stats.norm.ppf(0.5 + LEVEL / 2) * values.std(ddof=1)
                    coverage = tally.covered / decided if decided else math.nan
                    half_width = tally.half / decided / oracle if decided and oracle > 0 else math.nan
                rows.append(
                    Row(
                        test,
                        name,
                        n_trials,
                        n,
                        float(rejected[0] / n),
                        coverage,
                        half_width,
                        estimator=method,
                        size_holm=float(rejected[1] / n),
                        refused=tally.refused / n,
                        tails=tails,
                    )
                )
    return rows


# --- margins and chance levels: the trained runs' test ---------------------------------------------------------

# A margin or a chance level tests its trained runs (src/claims/units.py trained_reading): its null is the trained
# runs' contrast at 0 or at the margin, whatever the collapses (simulate without compensation), so collapses of
# either condition, of both and near-collapses are nulls here, and the collapsing condition's trained runs are not
# raised to compensate.
TRAINED_NULLS = {
    "no collapse (trial + example)": NULLS["trial + example"],
    "no collapse (example-dominated)": NULLS["example-dominated"],
    "A, the full model, collapses (0.2)": NULLS["A, the full model, collapses (0.2)"],
    "B collapses (0.2)": NULLS["B collapses (0.2)"],
    "B collapses (2/3)": Null(trial_sd=0.05, example_sd=0.2, collapse=2 / 3),
    "both collapse (0.2)": NULLS["both collapse (0.2)"],
    "both nearly collapse (0.15)": NULLS["both nearly collapse (0.15)"],
    "collapses and near-collapses mixed": NULLS["collapses and near-collapses mixed"],
}
# a chance level: condition A alone against a constant
CHANCE_NULLS = {
    "A alone, no collapse (trial + example)": NULLS["trial + example"],
    "A alone, no collapse (trial-dominated)": NULLS["trial-dominated"],
    "A alone collapses (0.2)": NULLS["A, the full model, collapses (0.2)"],
    "A alone collapses (2/3)": Null(trial_sd=0.05, example_sd=0.2, collapse_a=2 / 3),
    "A alone nearly collapses (0.15)": Null(trial_sd=0.15, example_sd=0.3, near_a=0.15),
}


def trained_table(
    reps: int, seed: int = 0, trials=TRIALS, nulls=None, n_examples=EXAMPLES, margin_reps: int | None = None
) -> list[Row]:
    """The estimate tests (ESTIMATE_TESTS) of the trained runs, as margins and chance levels test them, under
    TRAINED_NULLS (A − B) and CHANCE_NULLS (A against a constant); `nulls` picks from either."""
    rows = []
    for table, weights in ((TRAINED_NULLS, TWO_CONDITIONS), (CHANCE_NULLS, (1,))):
        names = [n for n in (nulls or table) if n in table]
        if names:
            rows += estimate_table(
                reps, seed, trials, names, (TRAINED,), n_examples, margin_reps, table, compensate=False, weights=weights
            )
    return rows


# --- the hurdle: collapse rates and the trained runs' contrast, combined by Bonferroni -------------------------

# The hurdle's null is "the same collapse rate AND the same trained runs' accuracy" (simulate without
# compensation): the collapse nulls above, whose conditions collapse at different rates with equal means over all
# runs, are alternatives here, and measured as such (HURDLE_ALTERNATIVES).
HURDLE_NULLS = {
    "no collapse (trial + example)": NULLS["trial + example"],
    "no collapse (example-dominated)": NULLS["example-dominated"],
    "both collapse (0.2)": Null(trial_sd=0.05, example_sd=0.2, collapse=0.2, collapse_a=0.2),
    "both nearly collapse (0.15)": NULLS["both nearly collapse (0.15)"],
    "collapses and near-collapses mixed, equal rates": Null(
        trial_sd=0.15, example_sd=0.3, collapse=0.15, collapse_a=0.05, near_a=0.15, near_b=0.05
    ),
}
# (null, compensate): B collapses more often than A
HURDLE_ALTERNATIVES = {
    "B collapses (0.2), trained runs alike": (NULLS["B collapses (0.2)"], False),
    "B collapses (2/3), trained runs alike": (Null(trial_sd=0.05, example_sd=0.2, collapse=2 / 3), False),
    "B collapses (0.2), means over all runs equal (the old null)": (NULLS["B collapses (0.2)"], True),
}


# The second difference of three conditions (the curve's change of step, reinit_curve_change_not_constant): A, then
# two conditions alike in distribution with B
SECOND_DIFFERENCE = (1, -2, 1)
HURDLE_CONTRASTS = {"A − B": TWO_CONDITIONS, "second difference": SECOND_DIFFERENCE}


@dataclass(frozen=True)
class HurdleRow:
    """One cell of hurdle_table: the rejection rates of the hurdle's p_greater (the contrast > 0: A better) and
    p_less (< 0: A worse) at ALPHA and HOLM_LEVEL; `by_rate`: the share of rejections at ALPHA the rate part made
    (rather than the trained runs' part); `no_trained`: the share of replicates with fewer than 2 trials where
    no condition's run (nearly) collapsed (the trained part cannot reject there). `symmetric`: the null and the
    contrast alike under a swap of its sides, so that both tails measure one size."""

    null: str
    trials: int
    reps: int
    greater: tuple[float, float]
    less: tuple[float, float]
    by_rate: float
    no_trained: float
    symmetric: bool
    contrast: str  # its HURDLE_CONTRASTS name

    @property
    def size(self) -> tuple[float, float]:
        """A symmetric null's two one-sided tests measure one size (averaged); else the larger tail's."""
        pick = (lambda g, x: (g + x) / 2) if self.symmetric else max
        return tuple(pick(g, x) for g, x in zip(self.greater, self.less))

    def size_ok(self, sigmas: float = 0.0) -> bool:
        """Size <= the level (no 1.2 slack: the hurdle is meant to hold the level itself) + `sigmas` MC SEs."""
        tails = 2 if self.symmetric else 1
        return all(
            size <= level + sigmas * math.sqrt(level * (1 - level) / (self.reps * tails))
            for size, level in zip(self.size, (ALPHA, HOLM_LEVEL))
        )


def hurdle_rejections(correct: np.ndarray, majority: np.ndarray, weights=TWO_CONDITIONS):
    """(p_greater < level, p_less < level, rate part rejected at ALPHA, fewer than 2 trained trials) of each
    replicate, the levels (ALPHA, HOLM_LEVEL) on the last axis of the first two: the hurdle of the contrast
    `weights` as src/claims/units.py computes it. Collapse is read from the sample by the pipeline's rule
    (majority share >= NEAR_COLLAPSE_SHARE); the trained part is the crossed test of the trials where no
    condition's run (nearly) collapsed ("collapsed excluded")."""
    flags = majority >= NEAR_COLLAPSE_SHARE
    trained, refused = estimates(correct, majority, "collapsed excluded", weights)
    result = hurdle(flags, weights, (trained.p_greater(), trained.p_less()), ALPHA)
    levels = np.array([ALPHA, HOLM_LEVEL])
    greater, less = (np.asarray(p)[:, None] < levels for p in (result.p_greater, result.p_less))
    by_rate = result.rate_counts & ((HURDLE_PARTS * np.fmin(*result.rate)) < ALPHA)
    return greater, less, by_rate & (greater[:, 0] | less[:, 0]), refused


def hurdle_table(
    reps: int, seed: int = 0, trials=TRIALS, nulls=None, alternatives=None, contrast: str = "A − B"
) -> list[HurdleRow]:
    """The hurdle's one-sided rejection rates at ALPHA and HOLM_LEVEL under each of HURDLE_NULLS (sizes) and
    HURDLE_ALTERNATIVES (B collapses more: power of p_greater, and p_less's rate of the wrong direction), at each
    T, in chunks of CHUNK replicates, for the contrast HURDLE_CONTRASTS[contrast]."""
    weights = HURDLE_CONTRASTS[contrast]
    rng = np.random.default_rng(seed)
    cells = {name: (HURDLE_NULLS[name], False) for name in (HURDLE_NULLS if nulls is None else nulls)}
    cells |= {
        name: HURDLE_ALTERNATIVES[name] for name in (HURDLE_ALTERNATIVES if alternatives is None else alternatives)
    }
    rows = []
    for name, (null, compensate) in cells.items():
        for n_trials in trials:
            counts = np.zeros(6)
            for start in range(0, reps, CHUNK):
                size = min(CHUNK, reps - start)
                correct, majority = simulate(null, n_trials, size, rng, compensate=compensate, conditions=len(weights))
                greater, less, by_rate, refused = hurdle_rejections(correct, majority, weights)
                counts += [*greater.sum(axis=0), *less.sum(axis=0), by_rate.sum(), refused.sum()]
            rejected_at_alpha = counts[0] + counts[2]
            rows.append(
                HurdleRow(
                    name,
                    n_trials,
                    reps,
                    (counts[0] / reps, counts[1] / reps),
                    (counts[2] / reps, counts[3] / reps),
                    counts[4] / rejected_at_alpha if rejected_at_alpha else math.nan,
                    counts[5] / reps,
                    null.symmetric and name in HURDLE_NULLS and weights == TWO_CONDITIONS,
                    contrast,
                )
            )
    return rows


HURDLE_HEADER = (
    f"| contrast | null or alternative | T | reps | size at {ALPHA} / {HOLM_LEVEL:.5f} | > 0, A better (p_greater) "
    f"at {ALPHA} / {HOLM_LEVEL:.5f} | < 0, A worse (p_less) | rejections by the rate part | < 2 trained trials | "
    "targets missed |\n" + "|---" * 10 + "|"
)


def hurdle_markdown_row(row: HurdleRow) -> str:
    """A line of the hurdle table; size and "targets missed" (size <= the level, 2 Monte Carlo SEs of slack) only
    under the nulls."""
    is_null = row.null in HURDLE_NULLS
    size = f"{row.size[0]:.4f} / {row.size[1]:.5f}" if is_null else "(not a null)"
    missed = ("–" if row.size_ok(2) else "size") if is_null else "–"
    return (
        f"| {row.contrast} | {row.null} | {row.trials} | {row.reps * (2 if row.symmetric else 1):,} | {size} | "
        f"{row.greater[0]:.4f} / {row.greater[1]:.5f} | {row.less[0]:.4f} / {row.less[1]:.5f} | "
        f"{_cell(row.by_rate, '.2f')} | {row.no_trained:.3f} | {missed} |"
    )


# --- a crossed seed_design: subsets x draws -----------------------------------------------------------------

CROSSED_DESIGNS = ((2, 2), (3, 3), (2, 5), (5, 2), (3, 5), (4, 4))  # (subsets, draws)
CROSSED_NULLS = {  # the SDs (probit scale) of a condition's subset and draw effects
    "subset-dominated": (0.3, 0.05),
    "draws-dominated": (0.05, 0.3),
}


def crossed_effects(rng: np.random.Generator, leading: tuple, design: tuple[int, int], sds: tuple[float, float]):
    """The trial effects [*leading, S, D] of a crossed seed_design (S subsets, D draws): run (s, d)
    takes subset s's effect (SD sds[0]) plus draw d's (SD sds[1]), one set per leading index."""
    (subsets, draws), (subset_sd, draws_sd) = design, sds
    return subset_sd * rng.standard_normal((*leading, subsets, 1)) + draws_sd * rng.standard_normal(
        (*leading, 1, draws)
    )


def simulate_crossed(design: tuple[int, int], sds: tuple[float, float], reps: int, rng: np.random.Generator):
    """(labels [R, N], predictions of A and B [R, S*D, N]) of a crossed seed_design with equal
    expected accuracies: trial t sees subset t // D and draw t % D, and each condition has its
    own effect of each subset and each draw (so they do not cancel in the contrast)."""
    (subsets, draws), (subset_sd, draws_sd) = design, sds
    labels = rng.integers(0, 2, (reps, EXAMPLES))
    shared = SHARED_EXAMPLE_SD * rng.standard_normal((reps, 1, 1, EXAMPLES))
    scale = math.sqrt(1 + SHARED_EXAMPLE_SD**2 + subset_sd**2 + draws_sd**2 + 0.1**2)
    predictions = []
    for _ in range(2):
        latent = (
            scale * stats.norm.ppf(ACCURACY)
            + crossed_effects(rng, (reps,), design, sds)[..., None]
            + 0.1 * rng.standard_normal((reps, 1, 1, EXAMPLES))
            + shared
            + rng.standard_normal((reps, subsets, draws, EXAMPLES))
        ).reshape(reps, subsets * draws, EXAMPLES)
        predictions.append(np.where(latent > 0, labels[:, None], 1 - labels[:, None]))
    return labels, predictions[0], predictions[1]


def crossed_table(reps: int, seed: int = 0, designs=CROSSED_DESIGNS) -> list[Row]:
    """The paired contrast (accuracy, true contrast 0) of a crossed seed_design, with the crossed
    subsets x draws x examples variance ("new") and with the S*D cells taken as independent
    trials ("OLD": what a test that ignores the design computes)."""
    rng = np.random.default_rng(seed)
    rows = []
    for name, sds in CROSSED_NULLS.items():
        for design in designs:
            labels, a, b = simulate_crossed(design, sds, reps, rng)
            for estimator, used in (("new", design), ("old", None)):
                estimates = [
                    hypothesis.paired_contrast(
                        [(1.0, a[r], (a[r] == labels[r]).mean(axis=1)), (-1.0, b[r], (b[r] == labels[r]).mean(axis=1))],
                        labels[r],
                        example_metric("accuracy"),
                        used,
                    )
                    for r in range(reps)
                ]
                test = f"difference (accuracy), crossed {design[0]}x{design[1]}"
                rows.append(difference_row(test, name, design[0] * design[1], estimates, estimator, design))
    return rows


# --- curve statistics: k90, rho against a probe curve, a difference of correlations ---------------------

# expected accuracy with the first k of L = 6 layers kept (scratch at k = 0, full at k = L): a
# concave rise, and a probe curve that peaks in the middle
CURVE = np.array([0.60, 0.70, 0.76, 0.785, 0.80, 0.805, 0.81])
PROBE = np.array([0.50, 0.60, 0.66, 0.68, 0.66, 0.63, 0.60])


PROBE_SEEDS = 3  # probe.seeds' default
COLLAPSING_KS = (0, 1)  # the curve's conditions that collapse under a collapse null (scratch and k = 1, as in the runs)


def simulate_curve(
    null: Null,
    n_trials: int,
    rng: np.random.Generator,
    shared: np.ndarray,
    positive: np.ndarray,
    accuracies: np.ndarray = CURVE,
    collapsing: tuple = COLLAPSING_KS,
    design: tuple[int, int] | None = None,
) -> np.ndarray:
    """Correctness [R, K, T, N] of every k-layers condition (expected accuracy exactly
    accuracies[k]) on the eval set of each replicate, whose difficulty every condition shares:
    `shared` [R, 1, 1, N]. The conditions in `collapsing` collapse at `null.collapse`: such a
    trial predicts one class, so it is right exactly on that class's examples (`positive`
    [R, N]). A probe curve is simulated the same way (collapsing nothing), its seeds as the trials.
    With a crossed seed_design `design` = (S, D), n_trials = S*D and trial t's effect is that of
    subset t // D plus that of draw t % D, each condition (k) with its own effects, as in
    simulate_crossed (Null's subset_sd)."""
    reps, n_examples = shared.shape[0], shared.shape[-1]
    collapse = np.array([null.collapse if k in collapsing else 0.0 for k in range(len(accuracies))])
    means = np.array([_mean_for(a, null, q) for a, q in zip(accuracies, collapse)])[None, :, None, None]
    if design is None:
        trial_effects = null.trial_sd * rng.standard_normal((reps, len(accuracies), n_trials, 1))
    else:
        sds = null.subset_sd, math.sqrt(null.trial_sd**2 - null.subset_sd**2)
        trial_effects = crossed_effects(rng, (reps, len(accuracies)), design, sds).reshape(reps, len(accuracies), -1, 1)
    latent = (
        means
        + trial_effects
        + null.example_sd * rng.standard_normal((reps, len(accuracies), 1, n_examples))
        + shared
        + rng.standard_normal((reps, len(accuracies), n_trials, n_examples))
    )
    collapsed = rng.random((reps, len(accuracies), n_trials, 1)) < collapse[None, :, None, None]
    return np.where(collapsed, positive[:, None, None, :], latent > 0).astype(float)


def _as_predictions(correct: np.ndarray) -> tuple:
    """hypothesis.curve_draws' arguments (accuracy) for simulated correctness [K, T, N]: labels all 1,
    predictions = correctness."""
    return example_metric("accuracy"), correct, np.ones(correct.shape[-1]), correct.mean(axis=-1)


def _bootstrap_row(test, null_name, n_trials, estimates, boots, truth, design=None) -> Row:
    """Size (p_zero at a true 0; NaN otherwise), coverage of `truth` and the half-width ratio of
    percentile-bootstrap statistics; `undefined` is the mean share of undefined draws."""
    estimates = np.asarray(estimates, dtype=float)
    intervals = np.array([b.interval(LEVEL) for b in boots])
    covered = (intervals[:, 0] <= truth) & (truth <= intervals[:, 1])
    defined = np.isfinite(estimates)
    oracle = stats.norm.ppf(0.5 + LEVEL / 2) * estimates[defined].std(ddof=1)
    half = np.nanmean(intervals[:, 1] - intervals[:, 0]) / 2
    return Row(
        test,
        null_name,
        n_trials,
        len(boots),
        float(np.mean([b.p_zero() < ALPHA for b in boots])) if truth == 0 else math.nan,
        float(np.mean(covered)),
        float(half / oracle) if oracle > 0 else math.nan,
        float(np.mean([b.undefined_share for b in boots])),
        design=design,
    )


CURVE_DIFFERENCES = ("k90 difference", "difference of rho", "drop-point difference")  # "bootstrap-difference"


def curve_truths() -> dict[str, float]:
    """Every curve statistic curve_boots measures, with its true value (CURVE and PROBE's)."""
    from src.stats.curves import first_reaching  # the claims' definition, measured as it is

    return {
        "k90": first_reaching(CURVE),
        "k90 difference": 0.0,
        "Spearman rho vs probe": hypothesis.spearman(PROBE, CURVE),
        "difference of rho": 0.0,
        "max(curve) − max(probe)": CURVE.max() - PROBE.max(),
        "k90(probe) − k90(curve)": first_reaching(PROBE) - first_reaching(CURVE),
        "drop-point difference": 0.0,
    }


def curve_boots(
    null: Null,
    n_trials: int,
    reps: int,
    resamples: int,
    rng,
    design: tuple[int, int] | None = None,
    read_design: bool = True,
) -> dict[str, list[hypothesis.Bootstrap]]:
    """The curve statistics of the claims (curve_truths), by the percentile bootstrap, as the report
    draws them, in `reps` replicates: two sizes' finetuning curves A and B (equal expected curves;
    under a collapse null B's COLLAPSING_KS conditions collapse, A's do not) and a probe curve of
    PROBE_SEEDS seeds, all scored on one eval set per replicate, their draws taking the same
    eval-set draw (hypothesis.example_draws; src/claims/claim.py Shared.eval_draws). With a crossed
    seed_design `design` (n_trials = S*D), both sizes' runs come from it and their draws read it
    (or, without `read_design`, take its S*D trials as independent); the probe's seeds stay independent."""
    from src.stats.curves import drop_point, first_reaching

    shared = SHARED_EXAMPLE_SD * rng.standard_normal((reps, 1, 1, EXAMPLES))
    positive = rng.integers(0, 2, (reps, EXAMPLES))  # the examples of the class a collapsed run predicts
    # as in the contrasts, only B collapses (smaller data collapse more often), the expected curves equal
    correct_a = simulate_curve(null, n_trials, rng, shared, positive, collapsing=(), design=design)
    correct_b = simulate_curve(null, n_trials, rng, shared, positive, design=design)
    correct_probe = simulate_curve(null, PROBE_SEEDS, rng, shared, positive, PROBE, collapsing=())
    boots = {test: [] for test in curve_truths()}
    read = design if read_design else None  # the design the two sizes' draws resample by
    for r in range(reps):
        counts = hypothesis.example_draws(EXAMPLES, resamples, rng)  # the eval set's draws, shared
        (a, draws_a), (b, draws_b), (probe, draws_probe) = (
            (c[r].mean(axis=(1, 2)), hypothesis.curve_draws(*_as_predictions(c[r]), resamples, rng, counts, used))
            for c, used in ((correct_a, read), (correct_b, read), (correct_probe, None))
        )
        k90_a, k90_b, k90_probe = (np.apply_along_axis(first_reaching, 1, d) for d in (draws_a, draws_b, draws_probe))
        rho_a, rho_b = (hypothesis.spearman_rows(draws_probe, d) for d in (draws_a, draws_b))
        for test, estimate, draws in (
            ("k90", first_reaching(a), k90_a),
            ("k90 difference", first_reaching(a) - first_reaching(b), k90_a - k90_b),
            ("Spearman rho vs probe", hypothesis.spearman(probe, a), rho_a),
            ("difference of rho", hypothesis.spearman(probe, a) - hypothesis.spearman(probe, b), rho_a - rho_b),
            ("max(curve) − max(probe)", a.max() - probe.max(), draws_a.max(axis=1) - draws_probe.max(axis=1)),
            ("k90(probe) − k90(curve)", first_reaching(probe) - first_reaching(a), k90_probe - k90_a),
            ("drop-point difference", drop_point(a) - drop_point(b), drop_point(draws_a) - drop_point(draws_b)),
        ):
            boots[test].append(hypothesis.Bootstrap(estimate, draws, n_trials))
    return boots


def curve_table(reps: int, resamples: int, seed: int = 0, trials=TRIALS, nulls=None) -> list[Row]:
    """The curve statistics of the claims (curve_boots) under every null at every T. Measured: k90
    (first k reaching 90% of the full-vs-scratch gap), the difference of the two sizes' k90,
    Spearman rho of a curve against the probe curve, the difference of the two sizes' rho, and the
    probe-against-finetuning contrasts (maximum of the curve minus the probe's, k90 of the probe
    minus the curve's), and the difference of the two sizes' steepest step (the drop point)."""
    rng = np.random.default_rng(seed)
    rows = []
    for name in nulls or CURVE_NULLS:
        for n_trials in trials:
            boots = curve_boots(CURVE_NULLS[name], n_trials, reps, resamples, rng)
            for test, truth in curve_truths().items():
                rows.append(_bootstrap_row(test, name, n_trials, [b.estimate for b in boots[test]], boots[test], truth))
    return rows


CROSSED_CURVE_NULLS = {  # crossed_table's subset and draw SDs (probit), and a collapse null like NULLS'
    "subset-dominated": Null(trial_sd=math.hypot(0.3, 0.05), example_sd=0.1, subset_sd=0.3),
    "draws-dominated": Null(trial_sd=math.hypot(0.05, 0.3), example_sd=0.1, subset_sd=0.05),
    "collapse-skewed": Null(trial_sd=math.hypot(0.05, 0.05), example_sd=0.2, collapse=0.2, subset_sd=0.05),
}
CROSSED_CURVE_DESIGNS = ((2, 2), (3, 3), (2, 5), (5, 2), (3, 4), (4, 3), (3, 5), (5, 3), (4, 4))  # (subsets, draws)


def crossed_curve_table(
    reps: int, resamples: int, seed: int = 0, designs=CROSSED_CURVE_DESIGNS, nulls=None, old: bool = False
) -> list[Row]:
    """The differences of like curve statistics between two sizes (CURVE_DIFFERENCES, tested at 0)
    when both sizes' runs come from a crossed seed_design, their draws reading it ("new":
    hypothesis.curve_draws' `design`, subsets and draws resampled by the pigeonhole bootstrap)
    and, with `old`, on other replicates of the same cell, taking its S*D trials as independent
    ("OLD": what the curve bootstrap did before it read the design)."""
    rng = np.random.default_rng(seed)
    rows = []
    for name in nulls or CROSSED_CURVE_NULLS:
        for design in designs:
            n_trials = design[0] * design[1]
            for estimator in ("new", "old") if old else ("new",):
                boots = curve_boots(
                    CROSSED_CURVE_NULLS[name], n_trials, reps, resamples, rng, design, estimator == "new"
                )
                for test in CURVE_DIFFERENCES:
                    estimates = [b.estimate for b in boots[test]]
                    row = _bootstrap_row(test, name, n_trials, estimates, boots[test], 0.0, design)
                    rows.append(replace(row, test=f"{test}, crossed {design[0]}x{design[1]}", estimator=estimator))
    return rows


# --- the Welch test of weight change --------------------------------------------------------------------

WELCH_NULLS = {  # per-trial ||dW|| of two groups with equal means
    "unequal-variance": lambda rng, shape: (rng.normal(1.0, 0.1, shape), rng.normal(1.0, 0.3, shape)),
    "skewed": lambda rng, shape: (rng.lognormal(0.0, 0.5, shape), rng.lognormal(0.0, 0.5, shape)),
}


def welch_table(reps: int, seed: int = 0, trials=TRIALS) -> list[Row]:
    """The weight-change claims' two-sample test with T trials per group, one-sided (the larger tail's size; the nulls
    are not symmetric in A and B, so each tail is also a size): hypothesis.two_sample ("new", on min(n) - 1 df)
    and scipy's Welch test on Satterthwaite's df ("before")."""
    rng = np.random.default_rng(seed)
    rows = []
    for name, draw in WELCH_NULLS.items():
        for n_trials in trials:
            a, b = draw(rng, (reps, n_trials))
            difference = a.mean(axis=1) - b.mean(axis=1)
            oracle = stats.norm.ppf(0.5 + LEVEL / 2) * difference.std(ddof=1)
            conservative = hypothesis.two_sample(a, b)
            scipy_welch = stats.ttest_ind(a, b, axis=1, equal_var=False)
            welch = replace(conservative, df=scipy_welch.df)
            for estimator, e in (("new", conservative), ("before", welch)):
                low, high = e.interval(LEVEL)
                tails = [np.mean(p[:, None] < [ALPHA, HOLM_LEVEL], axis=0) for p in (e.p_greater(), e.p_less())]
                size = np.maximum(*tails)
                rows.append(
                    Row(
                        "Welch (weight change), one-sided",
                        name,
                        n_trials,
                        reps,
                        float(size[0]),
                        float(np.mean((low <= 0) & (high >= 0))),
                        float(np.mean(high - low) / 2 / oracle),
                        estimator=estimator,
                        size_holm=float(size[1]),
                    )
                )
    return rows


# --- Spearman rho above a margin (permutation_affects_tasks_alike) ---------------------------------------------

SPEARMAN_MARGIN = 0.5  # the claim's margin (permutation.RELATIVELY_HIGH)
# 4, 10: below the rule (it refuses them); the rule's SPEARMAN_MARGIN_MIN_PAIRS and above
SPEARMAN_PAIRS = (4, 10, validity.MIN_TRIALS["spearman-margin"][0], 20, 30)


def spearman_margin_table(reps: int, seed: int = 0, pairs=SPEARMAN_PAIRS) -> list[Row]:
    """correlation.spearman_above's one-sided size at the null boundary: pairs from a Gaussian copula whose
    population Spearman rho is exactly the margin (Pearson 2 sin(pi rho / 6), Kruskal 1958). Ranks do not
    see the marginals, so any continuous scores with that dependence give the same rates. `trials` holds the
    number of pairs (the claim's trials); no interval is printed, so coverage is NaN."""
    rng = np.random.default_rng(seed)
    pearson = 2 * math.sin(math.pi * SPEARMAN_MARGIN / 6)
    rows = []
    for n in pairs:
        x = rng.standard_normal((reps, n))
        y = pearson * x + math.sqrt(1 - pearson**2) * rng.standard_normal((reps, n))
        rho = hypothesis.spearman_rows(x, y)
        p_for, _ = correlation.spearman_above(rho, n, SPEARMAN_MARGIN)
        test = f"Spearman rho > {SPEARMAN_MARGIN} (Fisher z, Bonett-Wright)"
        rows.append(
            Row(
                test,
                "Gaussian copula at the margin",
                n,
                reps,
                float(np.mean(p_for < ALPHA)),
                math.nan,
                math.nan,
                size_holm=float(np.mean(p_for < HOLM_LEVEL)),
            )
        )
    return rows


# --- the training-length check (src/claims/training.py) -----------------------------------------------------

# The true gain of training longer at k = 0 (the full model's is 0): 0 (a plateau), up to the margin, at it,
# and beyond it: 0.094 is scratch's gain from 3 to 6 epochs at 128 subjectivity examples (docs/embedded_default.md)
TRAINING_GAINS = (0.0, 0.01, 0.02, 0.05, 0.094)
# The SD of one trial's gain: 0.005-0.008 in the default's check (7 -> 10 epochs), about 0.03 where eval
# accuracy still swings from epoch to epoch (lr 5e-5, 3 -> 6 epochs)
TRAINING_SDS = (0.005, 0.01, 0.03)
TRAINING_TRIALS = (3, 5)


@dataclass(frozen=True)
class TrainingRow:
    gain: float
    sd: float
    trials: int
    reps: int
    undertrained: float  # share of replicates the check marks undertrained


def training_check_table(
    reps: int, seed: int = 0, gains=TRAINING_GAINS, sds=TRAINING_SDS, trials=TRAINING_TRIALS, margin: float = MARGIN
) -> list[TrainingRow]:
    """How often TrainingCheck (its status, as the report reads it) marks a (task, size) undertrained when k = 0
    truly gains `gain` from training longer and the full model gains nothing, each trial's gain normal with SD
    `sd`: its false-alarm rate at gain 0 and its miss rate beyond the margin."""
    rng = np.random.default_rng(seed)
    rows = []
    for gain, sd, n in itertools.product(gains, sds, trials):
        scratch = gain + sd * rng.standard_normal((reps, n))
        full = sd * rng.standard_normal((reps, n))
        marked = [
            TrainingCheck("task", 128, (EpochGain(0, (3, 6), tuple(a)), EpochGain(6, (3, 6), tuple(b))), margin).status
            == UNDERTRAINED
            for a, b in zip(scratch, full)
        ]
        rows.append(TrainingRow(gain, sd, n, reps, float(np.mean(marked))))
    return rows


TRAINING_HEADER = "| true gain at k = 0 | SD of a trial's gain | T | reps | marked undertrained |\n" + "|---" * 5 + "|"


def training_markdown_row(row: TrainingRow) -> str:
    return f"| {row.gain:+.3f} | {row.sd} | {row.trials} | {row.reps:,} | {row.undertrained:.4f} |"


# --- the head-importance-vs-reinit correlation -------------------------------------------------------------


@dataclass(frozen=True)
class HeadDesign:
    """How a head's measured reinit drop is made (accuracy points): its true effect d_h (SD
    EFFECT_SD) plus, per head-reinit trial, noise of SD `noise` x EFFECT_SD; with probability
    `collapse` a trial collapses to the majority class and its drop is U(COLLAPSED_DROP) instead."""

    noise: float
    collapse: float = 0.0


HEAD_DESIGNS = {
    "noise = effect": HeadDesign(1.0),
    "noise 3x effect": HeadDesign(3.0),
    "noise = effect, collapse": HeadDesign(1.0, 0.1),
    "noise 3x effect, collapse": HeadDesign(3.0, 0.1),
}
# 4 and 5: where the rule changes; 6: the default heads study (1 per layer); 72: every head of the embedded model
HEADS = (4, 5, 6, 12, 24, 72)
LATENT_RHOS = (0.0, 0.3, 0.6)
HEAD_TRIALS = ((1, 1), (1, 3), (3, 1), (3, 3))  # (importance trials, reinit trials), as users run them
EFFECT_SD = 0.0075  # SD of the heads' true reinit effects, accuracy points
IMPORTANCE_SKEW = 1.0  # true importance exp(s a_h): positive and right-skewed (log-normal)
IMPORTANCE_NOISE = 0.2  # log-SD of one trial's multiplicative error on a head's importance
COLLAPSED_DROP = (0.15, 0.30)  # the drop of a head-reinit trial that collapsed (full score minus ~0.5)
ESTIMAND_HEADS = 1_000_000
PERMUTATION = "permutation p"


def simulate_heads(design: HeadDesign, latent_rho: float, heads: int, trials: tuple[int, int], reps: int, rng):
    """(measured importance, measured drop), each [reps, heads], as importance_vs_reinit pairs
    them: per head a latent bivariate normal (a, b) with correlation `latent_rho`, true importance
    exp(IMPORTANCE_SKEW a) and true effect EFFECT_SD b; the importance is the mean over
    trials[0] full-model trials of the truth times log-normal trial error, the drop the mean over
    trials[1] head-reinit trials of the truth plus trial noise (or a collapsed trial's drop).

    Each trial's drop is the full model's score minus the head-reinit score of the same trial, so
    the full-model trial's own noise is one constant added to every head's drop when all heads
    use the same trials (a complete study): it moves no rank and is not simulated. Nothing else
    ties heads together, so where latent_rho = 0 importance and drop are independent and every
    design is the same null for a rank statistic."""
    importance_trials, reinit_trials = trials
    a = rng.standard_normal((reps, heads))
    b = latent_rho * a + math.sqrt(1 - latent_rho**2) * rng.standard_normal((reps, heads))
    errors = IMPORTANCE_NOISE * rng.standard_normal((reps, heads, importance_trials))
    importance = np.exp(IMPORTANCE_SKEW * a[..., None] + errors).mean(axis=-1)
    per_trial = EFFECT_SD * (b[..., None] + design.noise * rng.standard_normal((reps, heads, reinit_trials)))
    collapsed = rng.random((reps, heads, reinit_trials)) < design.collapse
    drop = np.where(collapsed, rng.uniform(*COLLAPSED_DROP, per_trial.shape), per_trial).mean(axis=-1)
    return importance, drop


@functools.cache
def population_spearman(design: HeadDesign, latent_rho: float, trials: tuple[int, int]) -> float:
    """The estimand: the population Spearman correlation of measured importance with measured drop
    under the design, from one sample of ESTIMAND_HEADS heads (Monte Carlo SD ~0.001). The trial
    noise and the collapses attenuate it toward 0 from the latent correlation; they never create
    one, so at latent_rho = 0 it is exactly 0 and a test of rho = 0 stays a test of no relation."""
    if latent_rho == 0:
        return 0.0
    importance, drop = simulate_heads(design, latent_rho, ESTIMAND_HEADS, trials, 1, np.random.default_rng(1))
    return hypothesis.spearman(importance[0], drop[0])


@dataclass(frozen=True)
class CorrelationRow(Row):
    """A cell of correlation_table; `trials` is the reinit trials, `estimand` the population rho."""

    heads: int = 0
    latent_rho: float = 0.0
    importance_trials: int = 1
    estimand: float = 0.0


def _correlation_rows(intervals: dict, permutation: bool, cell: dict, importance, drop) -> list[CorrelationRow]:
    """One cell's rows: each interval's coverage of the estimand, its size where that is 0 (the
    interval excludes 0) and half-width / oracle; the permutation p's size where the estimand is 0
    (when `permutation`). An undefined interval counts as not covering."""
    truth = cell["estimand"]
    oracle = stats.norm.ppf(0.5 + LEVEL / 2) * np.std(hypothesis.spearman_rows(importance, drop), ddof=1)
    rows = []
    for method, interval in intervals.items():
        low, high = np.array([interval(x, y, LEVEL) for x, y in zip(importance, drop)]).T
        defined = np.isfinite(low) & np.isfinite(high)
        rows.append(
            CorrelationRow(
                method,
                size=float(np.mean((low > 0) | (high < 0))) if truth == 0 else math.nan,
                coverage=float(np.mean((low <= truth) & (truth <= high))),
                half_width=float(np.mean((high - low)[defined]) / 2 / oracle) if defined.any() else math.nan,
                undefined=float(np.mean(~defined)),
                **cell,
            )
        )
    if permutation and truth == 0:
        p = np.array([hypothesis.exact_spearman_p(x, y) for x, y in zip(importance, drop)])
        rows.append(
            CorrelationRow(PERMUTATION, size=float(np.mean(p < ALPHA)), coverage=math.nan, half_width=math.nan, **cell)
        )
    return rows


def correlation_table(
    reps: int,
    heads=HEADS,
    seed: int = 0,
    methods=None,
    designs=tuple(HEAD_DESIGNS),
    latent_rhos=LATENT_RHOS,
    trials=HEAD_TRIALS,
) -> list[CorrelationRow]:
    """Spearman rho of importance against the reinit drop as measures.spearman_with_uncertainty
    computes it, under every design, latent rho, number of heads and (importance, reinit) trials:
    its candidate intervals (measures.CORRELATION_INTERVALS) against the estimand
    (population_spearman), and its permutation p at latent_rho = 0; `methods` names a subset
    of these (PERMUTATION for the p). The oracle half-width is 1.96 x the SD of rho over replicates."""
    from src.stats.correlation import CORRELATION_INTERVALS  # the production code, measured as it is

    intervals = {m: f for m, f in CORRELATION_INTERVALS.items() if methods is None or m in methods}
    rng = np.random.default_rng(seed)
    rows = []
    for n_heads, name, latent_rho, (importance_trials, reinit_trials) in itertools.product(
        heads, designs, latent_rhos, trials
    ):
        design, trial_pair = HEAD_DESIGNS[name], (importance_trials, reinit_trials)
        importance, drop = simulate_heads(design, latent_rho, n_heads, trial_pair, reps, rng)
        cell = dict(
            null=name,
            trials=reinit_trials,
            reps=reps,
            heads=n_heads,
            latent_rho=latent_rho,
            importance_trials=importance_trials,
            estimand=population_spearman(design, latent_rho, trial_pair),
        )
        rows += _correlation_rows(intervals, methods is None or PERMUTATION in methods, cell, importance, drop)
    return rows


# --- the whole report under a global null of a finished run's design -------------------------------------------
#
# A replicate keeps a finished run's design exactly (its runs, trials, tasks, eval labels, probe seeds and layers,
# weight-change rows) and replaces every outcome by one drawn under the global null: every condition of a task has
# one expected accuracy (no effect of k, scheme, modifier, size, intermediate task), every probe layer of a task
# another, every layer moves alike in finetuning. The whole report is then judged (judge_claims, the report's code)
# and each decided verdict is compared with the truth under that null.

REPORT_NULL = "trial + example"  # the default of the nulls a replicate can take (REPORT_NULLS)
# A global null treats every condition alike, collapses included: the symmetric NULLS, and one where every run of
# every condition collapses at the same rate (the harness's asymmetric nulls have no global form).
REPORT_NULLS = {name: null for name, null in NULLS.items() if null.symmetric} | {
    "every condition collapses (0.2)": Null(trial_sd=0.05, example_sd=0.2, collapse=0.2, collapse_a=0.2),
}
DECIDED = ("supported", "contradicted")
ROUNDING_ZERO = 9  # decimals an estimand on the expected evidence is rounded to: a slope of equal values is 1e-17


def read_run_evidence(metrics: Path, predictions: Path, model: Path, params: Path) -> Evidence:
    """A finished run's evidence, read exactly as the report stage reads it (stages/report.py)."""
    for path, what in ((metrics / "runs.csv", "--run-metrics"), (predictions, "--run-predictions")):
        if not path.is_file():
            raise UserError(f"{what}: no file {path} (a finished run's metrics/ and data/predictions.npz)")
    if not (model / "base.json").is_file():
        raise UserError(f"--run-model: no prepared model at {model} (its base.json; the run's data/model)")
    if not params.is_file():
        raise UserError(f"--run-params: no file {params} (the run's params.yaml)")
    config, limits = load_config(params), model_limits(model)
    evidence = read_evidence(Evidence, metrics, predictions, limits.num_layers, config)
    return replace(evidence, num_heads=limits.num_heads)


def _classes(task: str) -> int:
    spec = TASKS.get(task)
    if spec is None or not isinstance(spec.kind, Classification):
        raise UserError(f"task {task!r}: the whole-report null simulates classification tasks only")
    return spec.num_labels


def _accuracy(predictions: np.ndarray, labels: np.ndarray) -> float:
    return float(np.mean(predictions == labels))


def common_levels(ev: Evidence) -> dict[tuple[str, str], float]:
    """The global null's expected accuracy of each task's runs ("runs", task): the mean accuracy of its plain
    finished runs' stored predictions; and of its probes ("probe", task): the mean over its stored probe
    predictions (every seed and layer), else over its probe scores."""
    plain = ev.plain()
    plain = plain[plain["status"] == "ok"]
    levels = {}
    for task in sorted(set(ev.runs.loc[ev.runs["status"] == "ok", "task"])):
        _classes(task)
        rows = plain[plain["task"] == task]
        keys = zip(rows["size"].astype(int), rows["slug"], rows["trial"].astype(int))
        found = [
            _accuracy(ev.predictions[(task, *key)], ev.labels[task]) for key in keys if (task, *key) in ev.predictions
        ]
        if not found or task not in ev.labels:
            raise UserError(f"task {task!r}: no stored predictions of its plain runs and eval labels (predictions.npz)")
        levels[("runs", task)] = float(np.mean(found))
    for task, rows in ev.probe.groupby("task") if not ev.probe.empty else ():
        stored = ev.probe_predictions.get(task)
        levels[("probe", task)] = (
            _accuracy(stored, ev.labels[task]) if stored is not None else float(rows["value"].astype(float).mean())
        )
    return levels


def _predictions(correct: np.ndarray, labels: np.ndarray, classes: int, rng: np.random.Generator) -> np.ndarray:
    """The label where `correct`, another class (at random among the others) where not."""
    other = (labels + rng.integers(1, classes, labels.shape)) % classes
    return np.where(correct, labels, other).astype(labels.dtype)


def _scored(runs: pd.DataFrame, index, task: str, predictions: np.ndarray, labels: np.ndarray) -> None:
    """Set a run's score (its metric, as the pipeline computes it: src/tasks/metrics.py score), its majority share
    and its collapse flag (src/tasks/kinds.py) from its predictions."""
    metric = runs.at[index, "metric"]
    runs.at[index, "value"] = score((metric,), predictions, labels)[metric]
    share = TASKS[task].kind.majority_share(predictions)
    runs.at[index, "majority_share"], runs.at[index, "collapsed"] = share, TaskKind.collapsed(share)


def _with_outcomes(ev: Evidence, run_predictions, probe_predictions, weight_change, layer_change) -> Evidence:
    """`ev` with every finished run's and probe's outcomes replaced: `run_predictions(task, index of its runs,
    labels)` and `probe_predictions(task, seeds, layers, labels)` give predictions [runs or seeds, (layers,) N]."""
    runs = ev.runs.copy()
    runs["majority_share"] = runs["majority_share"].astype(float) if "majority_share" in runs else math.nan
    predictions, probe, probes = {}, ev.probe.copy(), {}
    for task in sorted(set(runs.loc[runs["status"] == "ok", "task"])):
        finished, labels = runs.index[(runs["task"] == task) & (runs["status"] == "ok")], ev.labels[task]
        for index, drawn in zip(finished, run_predictions(task, finished, labels)):
            key = (task, int(runs.at[index, "size"]), runs.at[index, "slug"], int(runs.at[index, "trial"]))
            _scored(runs, index, task, drawn, labels)
            if key in ev.predictions:
                predictions[key] = drawn
    for task, rows in ev.probe.groupby("task") if not ev.probe.empty else ():
        seeds = sorted(set(rows["seed"])) if "seed" in rows else [0]
        layers = list(range(ev.num_layers + 1))
        drawn = probe_predictions(task, len(seeds), len(layers), ev.labels[task])  # [S, L+1, N]
        metric = rows["metric"] if "metric" in rows else pd.Series("accuracy", rows.index)
        for index in rows.index:
            s = seeds.index(rows.at[index, "seed"]) if "seed" in rows else 0
            name = metric[index]
            probe.at[index, "value"] = score((name,), drawn[s, int(rows.at[index, "layer"])], ev.labels[task])[name]
        if task in ev.probe_predictions:
            probes[task] = drawn
    return replace(
        ev,
        runs=runs,
        predictions=predictions,
        probe=probe,
        probe_predictions=probes,
        weight_change=weight_change,
        layer_change=layer_change,
    )


WEIGHT_RUN = ["study", "task", "size", "slug", "trial"]  # one run of weight_change.csv
LAYER_RUN = ["task", "size", "trial"]  # one full-model run of layer_change.csv


def _layers_permuted(table: pd.DataFrame, run: list[str], rng: np.random.Generator) -> pd.DataFrame:
    """Every layer alike: the layer labels of each run permuted at random, one permutation for all its rows
    (sublayers, steps), so that each layer keeps its values together and the run keeps its values."""
    if table.empty:
        return table
    table = table.copy()
    for _, rows in table.groupby([c for c in run if c in table], dropna=False, sort=True):
        layers = np.unique(rows["layer"])
        table.loc[rows.index, "layer"] = rows["layer"].map(dict(zip(layers, rng.permutation(layers))))
    return table


def _layers_averaged(table: pd.DataFrame, run: list[str], values: list[str]) -> pd.DataFrame:
    """Every layer alike, in expectation: each run's values replaced by their mean over its layers."""
    if table.empty:
        return table
    table = table.copy()
    for column in (c for c in values if c in table):
        table[column] = table.groupby([c for c in run if c in table], dropna=False)[column].transform("mean")
    return table


def null_replicate(ev: Evidence, null: Null, levels: dict, rng: np.random.Generator) -> Evidence:
    """One replicate of `ev`'s design under the global null, on the harness's probit model (`null`'s SDs): a run of
    trial t of a task is correct on example n where

        mu + trial_sd * z[size, t] + example_sd * v[n] + u[n] + eps[run, n] > 0,

    the trial effect z shared by the conditions of that trial (they share its training subset), the difficulty v,
    u (SD SHARED_EXAMPLE_SD) shared by every run and probe of the task, the interaction eps each run's own, and mu
    (_mean_for) giving the task's common expected accuracy (common_levels); a probe of seed s at layer l likewise,
    its seed's effect shared by its layers, with the probes' common level. Every run, whatever its condition,
    collapses onto one class (drawn per run) with probability `null.collapse` and nearly collapses with probability
    `null.near_b` (a share NEAR_PUSH of its examples pushed onto one class), its trained runs' mu compensating so
    that the expected accuracy stays the common level. Weight change and layer change: each run's layer labels
    permuted (_layers_permuted)."""
    one_class = null.collapse + float(np.mean(NEAR_PUSH)) * null.near_b  # expected share of a run's examples

    def latent(level: float, effects: np.ndarray, difficulty: np.ndarray, shape: tuple, collapse=0.0, chance=0.5):
        return _mean_for(level, null, collapse, chance) + effects + difficulty + rng.standard_normal(shape)

    difficulty = {
        task: null.example_sd * rng.standard_normal(len(labels)) + SHARED_EXAMPLE_SD * rng.standard_normal(len(labels))
        for task, labels in sorted(ev.labels.items())
    }

    def run_predictions(task, finished, labels):
        rows = ev.runs.loc[finished]
        trials = list(zip(rows["size"].astype(int), rows["trial"].astype(int)))
        effect = {trial: null.trial_sd * rng.standard_normal() for trial in sorted(set(trials))}
        effects = np.array([effect[trial] for trial in trials])[:, None]
        classes, shape = _classes(task), (len(trials), len(labels))
        correct = latent(levels[("runs", task)], effects, difficulty[task], shape, one_class, 1 / classes) > 0
        predictions = _predictions(correct, labels, classes, rng)
        if not one_class:
            return predictions
        draw = rng.random((len(trials), 1))
        pushed = rng.random(shape) < rng.uniform(*NEAR_PUSH, (len(trials), 1))
        onto = (draw < null.collapse) | ((draw < null.collapse + null.near_b) & pushed)
        return np.where(onto, rng.integers(0, classes, (len(trials), 1)), predictions).astype(labels.dtype)

    def probe_predictions(task, seeds, layers, labels):
        effects = null.trial_sd * rng.standard_normal((seeds, 1, 1))
        correct = latent(levels[("probe", task)], effects, difficulty[task], (seeds, layers, len(labels))) > 0
        return _predictions(correct, labels, _classes(task), rng)

    return _with_outcomes(
        ev,
        run_predictions,
        probe_predictions,
        _layers_permuted(ev.weight_change, WEIGHT_RUN, rng),
        _layers_permuted(ev.layer_change, LAYER_RUN, rng),
    )


def expected_evidence(ev: Evidence, levels: dict) -> Evidence:
    """`ev`'s design at the global null's expectation, where each estimand's true value is read: every run of a task
    predicts alike, right on round(level x N) of the examples (its common level), every probe of it alike at the
    probes' level, and every layer of a run moves by the run's mean over its layers."""

    def alike(level: float, labels: np.ndarray, task: str) -> np.ndarray:
        correct = np.arange(len(labels)) < round(level * len(labels))
        return np.where(correct, labels, (labels + 1) % _classes(task)).astype(labels.dtype)

    return _with_outcomes(
        ev,
        lambda task, finished, labels: [alike(levels[("runs", task)], labels, task)] * len(finished),
        lambda task, seeds, layers, labels: np.broadcast_to(
            alike(levels[("probe", task)], labels, task), (seeds, layers, len(labels))
        ),
        _layers_averaged(ev.weight_change, WEIGHT_RUN + ["sublayer"], ["frobenius", "spectral"]),
        _layers_averaged(ev.layer_change, LAYER_RUN + ["step"], ["frobenius"]),
    )


def unit_holds(unit: Unit, value: float) -> bool | None:
    """Whether the hypothesis `unit` tests for its claim holds where its estimand is `value`, by its shape
    (src/claims/units.py shape_p: greater > 0, within |·| < margin, below < margin, above > −margin; a bootstrap
    statistic: > 0, or within its margin where it has one, as verdicts.decision_interval reads it). None where
    `value` is undefined (e.g. k90 of a curve without gain), or where the unit is not an estimate, bootstrap or Welch
    test (an exact or F test, a variance ratio, a correlation against a margin): their truth is not read here."""
    if isinstance(unit.result, hypothesis.Bootstrap):
        shape = "greater" if unit.margin is None else "within"
    elif isinstance(unit.result, hypothesis.Estimate) or unit.test_type == "welch":
        shape = unit.shape
    else:
        return None
    if not np.isfinite(value):
        return None
    value, margin = round(float(value), ROUNDING_ZERO), unit.margin
    return {
        "greater": lambda: value > 0,
        "within": lambda: abs(value) < margin,
        "below": lambda: value < margin,
        "above": lambda: value > -margin,
    }[shape]()


def _every(values) -> bool | None:
    """Three-valued AND: False where any is, True where all are, else unknown (None)."""
    return False if any(v is False for v in values) else True if all(v is True for v in values) else None


def _some(values) -> bool | None:
    """Three-valued OR: True where any is, False where all are, else unknown (None)."""
    return True if any(v is True for v in values) else False if values and all(v is False for v in values) else None


def claim_truths(expected: Evidence) -> dict[str, bool | None]:
    """Each claim's truth under the null whose expectation `expected` is (expected_evidence): each unit holds by
    unit_holds of its estimate there, with the full-vs-scratch gaps a claim that needs them needs (the rule's
    verdicts.needed_gaps); a universal claim holds where all its units do, an existential one where some unit does;
    None (unknown) where a deciding part is, and for a claim without units."""
    verdicts, _ = judge_claims(expected)
    gaps = {u.unit.key: u.unit for v in verdicts if v.id == "full_beats_scratch" for u in v.units}
    truths = {}
    for v in verdicts:
        claim, parts = v.claim, []
        for unit in (u.unit for u in v.units):
            needed = needed_gaps(claim, unit, gaps)
            parts.append(_every([unit_holds(unit, unit.estimate), *(g and unit_holds(g, g.estimate) for g in needed)]))
        truths[claim.id] = (_every(parts) if claim.every else _some(parts)) if parts else None
    return truths


def replicate_verdicts(ev: Evidence, null_name: str, levels: dict, seed: int, replicate: int) -> tuple[dict, float]:
    """({claim: verdict}, seconds) of replicate `replicate` (its generator seeded by (seed, replicate), so that a
    replicate is the same whatever the number of processes)."""
    start = time.perf_counter()
    evidence = null_replicate(ev, REPORT_NULLS[null_name], levels, np.random.default_rng([seed, replicate]))
    verdicts, _ = judge_claims(evidence)
    return {v.id: v.text for v in verdicts}, time.perf_counter() - start


@dataclass(frozen=True)
class WholeReport:
    """The verdicts of every replicate of a run's design under the global null, with each claim's truth there."""

    design: str
    null: str
    seed: int
    truths: dict  # claim id: True / False / None (unknown)
    every: dict  # claim id: universal (True) or existential
    verdicts: list  # per replicate, {claim id: verdict}
    seconds: list  # per replicate, its wall time (in its process)
    wall: float  # the whole table's wall time

    @property
    def reps(self) -> int:
        return len(self.verdicts)

    def wrong(self, claim: str, verdict: str) -> bool:
        """Supported where the claim is false, contradicted where it is true (never an undecided verdict)."""
        truth = self.truths.get(claim)
        return (verdict == "supported" and truth is False) or (verdict == "contradicted" and truth is True)

    def any_wrong(self, keep=lambda claim, verdict: True) -> int:
        """Replicates with at least one wrong verdict among those `keep(claim, verdict)` selects."""
        return sum(any(self.wrong(c, v) and keep(c, v) for c, v in verdicts.items()) for verdicts in self.verdicts)

    def unknown(self) -> int:
        """Replicates with a decided verdict of a claim whose truth under the null is unknown (counted as right)."""
        return sum(
            any(v in DECIDED and self.truths.get(c) is None for c, v in verdicts.items()) for verdicts in self.verdicts
        )

    def could_be_wrong_by_iut(self) -> list[str]:
        """Claims whose intersection-union verdict would be wrong here: universal ones false, existential ones true."""
        return [c for c, truth in self.truths.items() if truth is (not self.every[c])]


def design_text(ev: Evidence) -> str:
    """The design a replicate keeps: finished runs per task and size (conditions x trials), probes, weight change."""
    ok = ev.runs[ev.runs["status"] == "ok"]
    parts = [
        f"{task} n={size}: {rows['slug'].nunique()} conditions, trials {sorted(set(rows['trial'].astype(int)))} "
        f"({len(rows)} runs, {int(rows['plain'].sum()) if 'plain' in rows else len(rows)} plain)"
        for (task, size), rows in ok.groupby(["task", "size"])
    ]
    for task, rows in ev.probe.groupby("task") if not ev.probe.empty else ():
        seeds = rows["seed"].nunique() if "seed" in rows else 1
        parts.append(f"probes of {task}: {seeds} seeds x {rows['layer'].nunique()} layers")
    if not ev.weight_change.empty:
        runs = ev.weight_change.groupby([c for c in WEIGHT_RUN if c in ev.weight_change], dropna=False).ngroups
        parts.append(f"weight change of {runs} runs")
    parts.append(f"eval sets: {', '.join(f'{t} N={len(y)}' for t, y in sorted(ev.labels.items()))}")
    return "; ".join(parts)


def whole_report_table(
    ev: Evidence, levels: dict, reps: int, seed: int = 0, null_name: str = REPORT_NULL, jobs: int = 1
):
    """The whole report judged in `reps` replicates of `ev`'s design under the global null (null_replicate on
    `null_name`'s SDs around `levels`, common_levels(ev)), in `jobs` processes, with each claim's truth there
    (claim_truths)."""
    truths = claim_truths(expected_evidence(ev, levels))
    work = functools.partial(replicate_verdicts, ev, null_name, levels, seed)
    start = time.perf_counter()
    if jobs > 1:
        with concurrent.futures.ProcessPoolExecutor(jobs) as pool:
            results = list(pool.map(work, range(reps), chunksize=max(1, reps // (4 * jobs))))
    else:
        results = [work(r) for r in range(reps)]
    wall = time.perf_counter() - start
    every = {claim.id: claim.every for claim in CLAIMS}
    level_text = ", ".join(f"{kind} of {task}: {level:.3f}" for (kind, task), level in sorted(levels.items()))
    return WholeReport(
        f"{design_text(ev)}; common expected accuracy: {level_text}",
        null_name,
        seed,
        truths,
        every,
        [v for v, _ in results],
        [s for _, s in results],
        wall,
    )


def _exact(count: int, n: int) -> str:
    """count / n, its rate and its exact (Clopper-Pearson) 95% interval."""
    ci = stats.binomtest(count, n).proportion_ci(LEVEL, method="exact")
    return f"{count} / {n} | {count / n:.3f} | [{ci.low:.3f}, {ci.high:.3f}]"


def _null_text(null: Null) -> str:
    rates = f"; every run collapses with probability {null.collapse}" if null.collapse else ""
    rates += f"; nearly collapses with probability {null.near_b}" if null.near_b else ""
    return f"trial SD {null.trial_sd}, example SD {null.example_sd}{rates}"


def whole_report_markdown(result: WholeReport, alpha: float = ALPHA) -> str:
    """The table of the whole report's wrong verdicts under the global null, against what the rules promise."""
    n, iut = result.reps, result.could_be_wrong_by_iut()
    holm = lambda c, v: decided_by(v, result.every[c]) == "holm"  # noqa: E731
    lines = [
        f"Design: {result.design}.",
        "",
        f"Null: every condition of a task at one expected accuracy, every probe layer at another, every layer moving "
        f"alike (weight change: each run's layer labels permuted); the latent SDs and collapse rates of "
        f"REPORT_NULLS[{result.null!r}] ({_null_text(REPORT_NULLS[result.null])}) with the trial effect shared by a "
        f"trial's conditions and the example difficulty by a task's runs. {n} replicates, seed "
        f"{result.seed}; {np.mean(result.seconds):.1f} s per replicate (one process), {result.wall:.0f} s in all.",
        "",
        "| wrong verdicts | replicates with at least one | rate | exact 95% interval | what the rules promise |",
        "|---|---|---|---|---|",
        f"| any | {_exact(result.any_wrong(), n)} | ≤ α per intersection-union claim that could be wrong "
        f"({len(iut)}) plus α for the Holm family: ≤ {min(1, (len(iut) + 1) * alpha):.2f} by the union bound |",
        f'| a wrong "supported" | {_exact(result.any_wrong(lambda c, v: v == "supported"), n)} | – |',
        f'| a wrong "contradicted" | {_exact(result.any_wrong(lambda c, v: v == "contradicted"), n)} | – |',
        f"| decided by Holm (universal contradicted, existential supported) | {_exact(result.any_wrong(holm), n)} | "
        f"≤ α = {alpha} familywise |",
        f"| decided by intersection-union (universal supported, existential contradicted) | "
        f"{_exact(result.any_wrong(lambda c, v: not holm(c, v)), n)} | ≤ α = {alpha} for each claim alone, "
        f"≤ {min(1, len(iut) * alpha):.2f} for the {len(iut)} that could be wrong |",
        f"| (decided, truth under the null unknown: counted as right) | "
        f"{result.unknown()} / {n} | {result.unknown() / n:.3f} | – | – |",
        "",
        "| claim | universal | true under the null | supported | contradicted | undecided | wrong | rate | "
        "exact 95% interval |",
        "|---|---|---|---|---|---|---|---|---|",
    ]
    for claim, truth in result.truths.items():
        got = [verdicts[claim] for verdicts in result.verdicts]
        if all(v == "not run" for v in got):
            continue
        wrong = sum(result.wrong(claim, v) for v in got)
        truth_text = {True: "yes", False: "no", None: "unknown"}[truth]
        lines.append(
            f"| {claim} | {'yes' if result.every[claim] else 'no'} | {truth_text} | {got.count('supported')} | "
            f"{got.count('contradicted')} | {n - got.count('supported') - got.count('contradicted')} | "
            f"{_exact(wrong, n)} |"
        )
    return "\n".join(lines)


# --- which designs can decide ----------------------------------------------------------------------------


def test_type_of(row: Row) -> str:
    """The decidable() test type a row of the table measures."""
    if row.test.startswith("Welch"):
        return "welch"
    if row.test.startswith("Spearman rho >"):
        return "spearman-margin"
    if row.test.split(", crossed")[0] in CURVE_DIFFERENCES:
        return "bootstrap-difference"
    if row.test in ("k90", "Spearman rho vs probe", "max(curve) − max(probe)", "k90(probe) − k90(curve)"):
        return "bootstrap"
    return {"one-sided": "one-sided", "equivalence": "equivalence", "beyond": "beyond"}.get(
        row.test.split(" ")[0], "difference"
    )


def decidable_row(row: Row) -> tuple[bool, str]:
    """decidable() for the design a row of the table measures."""
    return decidable(test_type_of(row), row.trials, design=row.design)


# --- the table ----------------------------------------------------------------------------------------------


def _cell(value: float, fmt: str = ".3f") -> str:
    return "–" if math.isnan(value) else format(value, fmt)


HEADER = (
    f"| estimator | test | null | T | reps | size at {ALPHA} | size at {HOLM_LEVEL:.5f} | coverage | "
    "half-width / oracle | undefined | refused | decidable | targets missed |\n" + "|---" * 13 + "|"
)


def targets_missed(row: Row) -> str:
    """The targets a row misses, with 2 Monte Carlo SEs of slack on size and coverage."""
    checks = (("size", row.size_ok(2)), ("coverage", row.coverage_ok(2)), ("half-width", row.half_width_ok()))
    return ", ".join(name for name, ok in checks if not ok) or "–"


def markdown_row(row: Row) -> str:
    """A table line; "targets missed" applies 2 Monte Carlo SEs of slack to size and coverage."""
    return (
        f"| {row.estimator} | {row.test} | {row.null} | {row.trials} | {row.reps * row.tails:,} | {_cell(row.size)} | "
        f"{_cell(row.size_holm, '.5f')} | {_cell(row.coverage)} | {_cell(row.half_width, '.2f')} | "
        f"{_cell(row.undefined, '.2f')} | {_cell(row.refused, '.2f')} | {'yes' if decidable_row(row)[0] else 'no'} | "
        f"{targets_missed(row) if row.estimator in ('new', TRAINED) else '(baseline)'} |"
    )


def row_from_markdown(line: str) -> Row:
    """A Row from a line markdown_row printed (the estimate and Welch tables), so that the summary tables can be
    drawn from a run's printed output (`--summarise`)."""
    cells = [c.strip() for c in line.strip().strip("|").split("|")]
    estimator, test, null, trials, reps, size, size_holm, coverage, half, undefined, refused = cells[:11]

    def number(text: str) -> float:
        return math.nan if text == "–" else float(text)

    two_sided_null = {**NULLS, **TRAINED_NULLS}.get(null, Null(0, 0)).symmetric and null not in CHANCE_NULLS
    tails = 2 if test.startswith("one-sided") and two_sided_null else 1
    return Row(
        test,
        null,
        int(trials),
        int(reps.replace(",", "")) // tails,
        number(size),
        number(coverage),
        number(half),
        number(undefined),
        estimator,
        size_holm=number(size_holm),
        refused=number(refused),
        tails=tails,
    )


def estimate_summary(rows: list[Row]) -> str:
    """Two markdown tables of the estimate tests: per null and T, every test's size at ALPHA and HOLM_LEVEL by the
    estimator the claims use ("new"; TRAINED for trained_table's rows alone), with its coverage, half-width / oracle,
    refused share and the targets missed (2 Monte Carlo SEs of slack); then the one-sided test's size by each
    estimator measured (not for the trained runs' tables)."""
    cells = {(r.estimator, r.test.split(" ")[0], r.null, r.trials): r for r in rows}
    kinds = ("one-sided", "difference", "equivalence", "beyond")
    order = list(dict.fromkeys([*NULLS, *TRAINED_NULLS, *CHANCE_NULLS]))
    cases = sorted({(r.null, r.trials) for r in rows}, key=lambda c: (order.index(c[0]), c[1]))
    tested = "new" if any(r.estimator == "new" for r in rows) else TRAINED  # the trained runs' tables alone
    levels = f"{ALPHA} / {HOLM_LEVEL:.5f}"
    lines = [
        f"| null | T | reps | one-sided, size at {levels} | two-sided | TOST at the margin | p_beyond at the margin | "
        "coverage | half-width / oracle | refused | targets missed |",
        "|---" * 11 + "|",
    ]
    for null, trials in cases:
        new = [cells.get((tested, kind, null, trials)) for kind in kinds]
        if new[0] is None:
            continue
        sizes = [f"{_cell(r.size)} / {_cell(r.size_holm, '.5f')}" if r else "–" for r in new]
        missed = sorted({m for r in new if r for m in targets_missed(r).split(", ") if m != "–"})
        reps = "/".join(f"{r.reps * r.tails:,}" for r in (new[0], new[2]) if r)
        lines.append(
            f"| {null} | {trials} | {reps} | {' | '.join(sizes)} | {_cell(new[1].coverage)} | "
            f"{_cell(new[1].half_width, '.2f')} | {_cell(new[0].refused, '.2f')} | {', '.join(missed) or '–'} |"
        )
    if tested == TRAINED:
        return "\n".join(lines)
    lines += [
        "",
        "| null | T | " + " | ".join(f"{m}: size at {levels}" for m in ESTIMATORS) + " |",
        "|---" * (2 + len(ESTIMATORS)) + "|",
    ]
    for null, trials in cases:
        by = [cells.get((m, "one-sided", null, trials)) for m in ESTIMATORS]
        sizes = [f"{_cell(r.size)} / {_cell(r.size_holm, '.5f')}" if r else "–" for r in by]
        lines.append(f"| {null} | {trials} | {' | '.join(sizes)} |")
    return "\n".join(lines)


CORRELATION_HEADER = (
    "| method | design | latent ρ | estimand | heads | T imp | T reinit | reps | size | coverage | "
    "half-width / oracle | undefined | reported | targets missed |\n" + "|---" * 14 + "|"
)


def correlation_markdown_row(row: CorrelationRow) -> str:
    """A line of the correlation table; "reported": whether spearman_with_uncertainty reports this
    method at this number of heads (the permutation p always)."""
    from src.stats.correlation import correlation_interval  # the production rule, as it reports

    reported = row.test == PERMUTATION or correlation_interval(row.heads)[0] == row.test
    return (
        f"| {row.test} | {row.null} | {row.latent_rho:g} | {row.estimand:.3f} | {row.heads} | "
        f"{row.importance_trials} | {row.trials} | {row.reps} | {_cell(row.size)} | {_cell(row.coverage)} | "
        f"{_cell(row.half_width, '.2f')} | {_cell(row.undefined, '.2f')} | {'yes' if reported else 'no'} | "
        f"{targets_missed(row)} |"
    )


TABLES = (
    "estimates",
    "trained",
    "hurdle",
    "welch",
    "spearman-margin",
    "curves",
    "crossed-curves",
    "correlation",
    "training-check",
    "whole-report",
)
DEFAULT_TABLES = [t for t in TABLES if t != "whole-report"]  # the whole report reads a finished run


def main(argv=None) -> None:  # noqa: C901, PLR0912, PLR0915
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--reps", type=int, default=50_000, help="replicates per cell (estimate tests and Welch)")
    parser.add_argument(
        "--margin-reps",
        type=int,
        help="replicates per cell of the tests at the margin (TOST, p_beyond; default --reps)",
    )
    parser.add_argument("--examples", type=int, default=EXAMPLES, help="eval examples (estimate tests)")
    parser.add_argument("--trials", type=int, nargs="+", default=list(TRIALS), help="trials (estimate tests)")
    parser.add_argument(
        "--nulls",
        nargs="+",
        choices=list(dict.fromkeys([*NULLS, *TRAINED_NULLS, *CHANCE_NULLS])),
        help="nulls of the estimate tests (NULLS) or of the trained runs' (TRAINED_NULLS, CHANCE_NULLS); default all",
    )
    parser.add_argument(
        "--hurdle-contrasts",
        nargs="+",
        choices=list(HURDLE_CONTRASTS),
        default=list(HURDLE_CONTRASTS),
        help="the contrasts the hurdle table measures (default both)",
    )
    parser.add_argument("--crossed-reps", type=int, default=2000, help="replicates per cell (crossed seed_design)")
    parser.add_argument("--curve-reps", type=int, default=400, help="replicates per cell (curve statistics)")
    parser.add_argument("--resamples", type=int, default=200, help="bootstrap draws (curves)")
    parser.add_argument("--corr-reps", type=int, default=2000, help="replicates per cell (importance vs reinit)")
    parser.add_argument("--corr-heads", type=int, nargs="+", default=list(HEADS), help="numbers of heads measured")
    parser.add_argument(
        "--corr-methods", nargs="+", help=f"the intervals (measures.CORRELATION_INTERVALS) and {PERMUTATION!r} measured"
    )
    parser.add_argument(
        "--tables",
        nargs="+",
        choices=TABLES,
        default=DEFAULT_TABLES,
        help="which tables to measure (default all but whole-report)",
    )
    parser.add_argument("--report-reps", type=int, default=200, help="replicates of the whole report (whole-report)")
    parser.add_argument(
        "--report-null",
        choices=list(REPORT_NULLS),
        default=REPORT_NULL,
        help="the global null (latent SDs, collapse rates) the whole report's replicates take",
    )
    parser.add_argument("--jobs", type=int, default=1, help="processes judging the whole report's replicates")
    run = parser.add_argument_group("the finished run whose design the whole report's replicates keep")
    run.add_argument("--run-metrics", type=Path, default=Path("metrics"), help="its metrics/ folder")
    run.add_argument("--run-predictions", type=Path, default=Path("data/predictions.npz"), help="its predictions store")
    run.add_argument("--run-model", type=Path, default=Path("data/model"), help="its prepared model (base.json)")
    run.add_argument("--run-params", type=Path, default=Path("params.yaml"), help="its params.yaml")
    parser.add_argument("--seed", type=int, default=0)
    parser.add_argument(
        "--summarise", nargs="+", metavar="FILE", help="print the summary of estimate tables printed before, and stop"
    )
    args = parser.parse_args(argv)
    if args.summarise:
        text = "".join(Path(f).read_text() for f in args.summarise)
        lines = [line for line in text.splitlines() if line.startswith("| ") and "| estimator |" not in line]
        print(estimate_summary([row_from_markdown(line) for line in lines]))
        return
    evidence, levels = None, {}
    if "whole-report" in args.tables:  # bad input: one line, before any compute
        if args.report_reps < 1 or args.jobs < 1:
            sys.exit(f"error: --report-reps {args.report_reps}, --jobs {args.jobs}: each must be at least 1")
        try:
            evidence = read_run_evidence(args.run_metrics, args.run_predictions, args.run_model, args.run_params)
            levels = common_levels(evidence)
        except UserError as error:
            sys.exit(f"error: {error}")
    command = shlex.join(argv if argv is not None else sys.argv[1:])  # quoted, so it can be rerun as printed
    print(f"<!-- {datetime.datetime.now(datetime.UTC):%Y-%m-%d %H:%M} UTC: python -m tools.calibrate {command} -->")
    if "estimates" in args.tables:
        print(HEADER, flush=True)
        for name in [n for n in (args.nulls or NULLS) if n in NULLS]:  # one cell at a time, printed as measured
            for n_trials in args.trials:
                rows = estimate_table(
                    args.reps, args.seed, (n_trials,), (name,), n_examples=args.examples, margin_reps=args.margin_reps
                )
                print("\n".join(markdown_row(row) for row in rows), flush=True)
    if "trained" in args.tables:
        print(HEADER, flush=True)
        for name in [
            n for n in (args.nulls or [*TRAINED_NULLS, *CHANCE_NULLS]) if n in TRAINED_NULLS or n in CHANCE_NULLS
        ]:
            for n_trials in args.trials:  # one cell at a time, printed as measured
                rows = trained_table(args.reps, args.seed, (n_trials,), (name,), args.examples, args.margin_reps)
                print("\n".join(markdown_row(row) for row in rows), flush=True)
    if "hurdle" in args.tables:
        print(HURDLE_HEADER, flush=True)
        for contrast in args.hurdle_contrasts:
            for name in (*HURDLE_NULLS, *HURDLE_ALTERNATIVES):  # one cell at a time, printed as measured
                for n_trials in args.trials:
                    null, alternative = ([name], []) if name in HURDLE_NULLS else ([], [name])
                    rows = hurdle_table(args.reps, args.seed, (n_trials,), null, alternative, contrast)
                    print("\n".join(hurdle_markdown_row(row) for row in rows), flush=True)
    if "welch" in args.tables:
        print(HEADER, flush=True)
        print("\n".join(markdown_row(row) for row in welch_table(args.reps, args.seed, args.trials)), flush=True)
    if "spearman-margin" in args.tables:
        print(HEADER, flush=True)
        print("\n".join(markdown_row(row) for row in spearman_margin_table(args.reps, args.seed)), flush=True)
    if "curves" in args.tables:
        print(HEADER, flush=True)
        for n_trials in TRIALS:
            rows = curve_table(args.curve_reps, args.resamples, args.seed, (n_trials,))
            print("\n".join(markdown_row(row) for row in rows), flush=True)
        print("\n".join(markdown_row(row) for row in crossed_table(args.crossed_reps, args.seed)), flush=True)
    if "crossed-curves" in args.tables:
        print(HEADER, flush=True)
        for name in CROSSED_CURVE_NULLS:  # one cell at a time, printed as measured
            for design in CROSSED_CURVE_DESIGNS:
                rows = crossed_curve_table(args.curve_reps, args.resamples, args.seed, (design,), (name,), old=True)
                print("\n".join(markdown_row(row) for row in rows), flush=True)
    if "training-check" in args.tables:
        print(TRAINING_HEADER, flush=True)
        print("\n".join(training_markdown_row(row) for row in training_check_table(args.reps, args.seed)), flush=True)
    if "correlation" in args.tables:
        print(CORRELATION_HEADER, flush=True)
        for heads in args.corr_heads:  # one number of heads at a time, printed as measured
            for name in HEAD_DESIGNS:
                rows = correlation_table(args.corr_reps, (heads,), args.seed, args.corr_methods, (name,))
                print("\n".join(correlation_markdown_row(row) for row in rows), flush=True)
    if "whole-report" in args.tables:
        result = whole_report_table(evidence, levels, args.report_reps, args.seed, args.report_null, args.jobs)
        print(whole_report_markdown(result, evidence.settings.alpha), flush=True)


if __name__ == "__main__":
    main()
