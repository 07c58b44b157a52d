"""The head-importance-vs-reinit correlation (metrics/head_importance_vs_reinit.csv): heads simulated with a latent
importance and reinit effect (simulate_heads), the coverage of its intervals and the size of its permutation p
(correlation_table)."""

from __future__ import annotations

import functools
import itertools
import math
from dataclasses import dataclass

import numpy as np
from scipy import stats

from src.stats import hypothesis
from tools.calibrate.row import ALPHA, LEVEL, Row, shown, targets_missed


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
        f"{row.importance_trials} | {row.trials} | {row.reps} | {shown(row.size)} | {shown(row.coverage)} | "
        f"{shown(row.half_width, '.2f')} | {shown(row.undefined, '.2f')} | {'yes' if reported else 'no'} | "
        f"{targets_missed(row)} |"
    )
