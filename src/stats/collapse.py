"""A run's collapse as an outcome in its own right: each condition's collapse rate with an exact
interval, and an exact comparison of two conditions' rates.

Which runs count as collapsed is the caller's rule (a majority-class share threshold); here are the
statistics of the counts. What comes from scipy: the Clopper-Pearson interval
(scipy.stats.binomtest(...).proportion_ci(method="exact")), Boschloo's exact test of two
independent binomials (scipy.stats.boschloo_exact), and the exact binomial test on the discordant
pairs (McNemar's exact test) for runs paired by trial.
"""

from __future__ import annotations

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
    ci = stats.binomtest(count, runs).proportion_ci(confidence_level=level, method="exact")
    return CollapseRate(count, runs, (float(ci.low), float(ci.high)))


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
