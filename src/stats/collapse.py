"""A run's collapse as an outcome in its own right: each condition's collapse rate with an exact
interval, and an exact comparison of two conditions' rates.

Which runs count as collapsed is the caller's rule (a majority-class share threshold); here are the
statistics of the counts. What comes from scipy: the Clopper-Pearson interval
(scipy.stats.binomtest(...).proportion_ci(method="exact")), Boschloo's exact test of two
independent binomials (scipy.stats.boschloo_exact), and the exact binomial test on the discordant
pairs (McNemar's exact test) for runs paired by trial.

A comparison of two conditions' scores where runs collapse is a two-part (hurdle) outcome
(`hurdle`): every run counts in exactly one part, its collapse (the rates, by McNemar's exact test)
or, where neither condition's run of a trial collapsed, its score (the trained runs' contrast, whose
test the caller passes in), the parts combined by Bonferroni. Its calibration is measured in
docs/calibration.md (tools/calibrate.py hurdle_table).
"""

from __future__ import annotations

import functools
import math
from dataclasses import dataclass

import numpy as np
from scipy import stats


@dataclass(frozen=True)
class CollapseRate:
    """`collapsed` of `runs` runs collapsed; `interval`: the exact (Clopper-Pearson) interval of the rate."""

    collapsed: int
    runs: int
    interval: tuple[float, float]

    @property
    def rate(self) -> float:
        return self.collapsed / self.runs if self.runs else math.nan


def collapse_rate(collapsed, level: float = 0.95) -> CollapseRate:
    """The collapse rate of one condition's runs (`collapsed`: one boolean per run) with its exact
    `level` interval; an empty interval (NaN) without runs."""
    flags = np.asarray(collapsed, dtype=bool)
    count, runs = int(flags.sum()), len(flags)
    if not runs:
        return CollapseRate(0, 0, (math.nan, math.nan))
    return CollapseRate(count, runs, _exact_interval(count, runs, level))


@functools.lru_cache(maxsize=4096)  # a report asks for the same few (count, runs) pairs hundreds of times
def _exact_interval(count: int, runs: int, level: float) -> tuple[float, float]:
    ci = stats.binomtest(count, runs).proportion_ci(confidence_level=level, method="exact")
    return float(ci.low), float(ci.high)


@dataclass(frozen=True)
class CollapseComparison:
    """Two conditions' collapse rates and the two-sided exact p of H0: equal rates (`test` names it)."""

    a: CollapseRate
    b: CollapseRate
    p: float
    test: str


def compare_collapse(a, b, paired: bool) -> CollapseComparison:
    """Whether conditions A and B (one boolean per run each) collapse at different rates.

    `paired`: runs i of A and B share a trial (its training subset and seeds), so their collapses
    may be correlated; McNemar's exact test conditions on the trials where exactly one of the two
    collapsed and is exact whatever that correlation (two-sided binomial test of the discordant
    counts at 1/2). Unpaired: Boschloo's exact test of two independent binomials (two-sided),
    uniformly more powerful than Fisher's. p is 1 where neither condition has a collapsed run."""
    a, b = np.asarray(a, dtype=bool), np.asarray(b, dtype=bool)
    rates = collapse_rate(a), collapse_rate(b)
    if not (len(a) and len(b)) or not (a.any() or b.any()):
        return CollapseComparison(*rates, 1.0 if len(a) and len(b) else math.nan, "none collapsed")
    if paired:
        if len(a) != len(b):
            raise ValueError(f"paired collapse comparison needs one run of each per trial: {len(a)} vs {len(b)}")
        only_a, only_b = int((a & ~b).sum()), int((~a & b).sum())
        p = stats.binomtest(only_a, only_a + only_b).pvalue if only_a + only_b else 1.0
        return CollapseComparison(*rates, float(p), "McNemar exact (paired by trial)")
    table = [[int(a.sum()), int(b.sum())], [int((~a).sum()), int((~b).sum())]]
    return CollapseComparison(*rates, float(stats.boschloo_exact(table).pvalue), "Boschloo exact")


def collapse_sides(a, b) -> tuple[np.ndarray, np.ndarray]:
    """The one-sided exact McNemar p's of conditions A and B's collapses paired by trial (`a`, `b`: booleans
    [..., T], one per trial, over any leading batch axes): (small p: A collapses less often than B, small p: A
    collapses more often). Conditional on the trials where exactly one of the two collapsed, the count where
    only A did is Binomial(discordant, 1/2) under equal rates; 1 where no trial is discordant."""
    a, b = np.asarray(a, dtype=bool), np.asarray(b, dtype=bool)
    only_a, only_b = (a & ~b).sum(axis=-1), (~a & b).sum(axis=-1)
    discordant = only_a + only_b
    return stats.binom.cdf(only_a, discordant, 0.5), stats.binom.sf(only_a - 1, discordant, 0.5)


HURDLE_PARTS = 2  # Bonferroni: where both parts can reject, each part's p is compared against alpha / 2


@dataclass(frozen=True)
class Hurdle:
    """A two-part comparison of conditions A and B whose runs may collapse, H0: the same collapse rate AND the
    same trained runs' score. `rate`: the one-sided p's that A collapses less / more often (collapse_sides);
    `trained`: the one-sided p's that A's trained runs score higher / lower than B's, on the trials where
    neither collapsed (NaN with too few such trials: that part then cannot reject). A is better than B where
    either part says so: p_greater = min(1, 2 min(rate less, trained higher)) (Bonferroni, valid whatever the
    dependence between the parts), p_less likewise, where the rate part can reject at all (`rate_counts`);
    elsewhere the trained part's p alone. Every field is an array over any batch axes.

    `rate_counts` (Tarone 1990): whether the rate part's exact test could reach the report's alpha with its
    discordant trials d, i.e. 2^-d <= alpha (d >= 5 at 0.05). A test that cannot reach the level costs no
    share of it. Valid at every level <= alpha: given d, McNemar's count is Binomial(d, 1/2) under H0 and the
    trained part's p is valid given which trials collapsed, so each branch holds its level given d."""

    rate: tuple[np.ndarray, np.ndarray]
    trained: tuple[np.ndarray, np.ndarray]
    rate_counts: np.ndarray

    def _combined(self, rate: np.ndarray, trained: np.ndarray) -> np.ndarray:
        trained = np.nan_to_num(np.asarray(trained, dtype=float), nan=1.0)
        both = np.minimum(1.0, HURDLE_PARTS * np.fmin(np.asarray(rate, dtype=float), trained))
        return np.where(self.rate_counts, both, trained)

    @property
    def p_greater(self) -> np.ndarray:
        """Small p: A is better (collapses less often, or its trained runs score higher)."""
        return self._combined(self.rate[0], self.trained[0])

    @property
    def p_less(self) -> np.ndarray:
        """Small p: A is worse (collapses more often, or its trained runs score lower)."""
        return self._combined(self.rate[1], self.trained[1])

    def disagree(self, alpha: float) -> np.ndarray:
        """Where the parts point opposite ways, each significant at alpha / 2: one says A is better and the other
        that it is worse (both p_greater and p_less reject; the unit reports it rather than a direction)."""
        return (self.p_greater < alpha) & (self.p_less < alpha)


def hurdle(a_collapsed, b_collapsed, trained: tuple, alpha: float) -> Hurdle:
    """The Hurdle of conditions A and B from their collapses paired by trial (booleans [..., T]) and the trained
    runs' one-sided p's (higher, lower) from the caller's test of the trials where neither collapsed; `alpha`:
    the largest level its p's are compared against (the report's alpha; Holm's levels are smaller)."""
    a, b = np.asarray(a_collapsed, dtype=bool), np.asarray(b_collapsed, dtype=bool)
    discordant = (a != b).sum(axis=-1)
    return Hurdle(collapse_sides(a, b), trained, 0.5**discordant <= alpha)
