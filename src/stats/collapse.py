"""A run's collapse as an outcome in its own right: each condition's collapse rate with an exact
interval, and an exact comparison of two conditions' rates paired by trial.

Which runs count as collapsed is the caller's rule (a majority-class share threshold); here are the
statistics of the counts. What comes from scipy: the Clopper-Pearson interval
(scipy.stats.binomtest(...).proportion_ci(method="exact")). Hand-written, as scipy has no exact
within-trial permutation test of a weighted contrast of binary outcomes: collapse_sides, which is
McNemar's exact test for two conditions (tests/unit/stats/test_collapse.py checks it against scipy).

A contrast of conditions' scores where runs collapse is a two-part (hurdle) outcome (`hurdle`):
every run counts in exactly one part, its collapse (the rates, by collapse_sides) or, where no
condition's run of a trial collapsed, its score (the trained runs' contrast, whose test the caller
passes in), the parts combined by Bonferroni. Its calibration is measured in docs/calibration.md
(tools/calibrate.py hurdle_table).
"""

from __future__ import annotations

import functools
import itertools
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


def compare_collapse(a, b) -> CollapseComparison:
    """Whether conditions A and B collapse at different rates, their runs paired by trial (`a`, `b`: one boolean
    per trial; run t of each shares trial t's subset and seeds, so their collapses may be correlated). McNemar's
    exact test, two-sided: it conditions on the trials where exactly one of the two collapsed and is exact whatever
    that correlation; its one-sided p's are collapse_sides', and under H0 the discordant count is symmetric, so the
    two-sided p is twice the smaller. p is 1 where no run collapsed."""
    a, b = np.asarray(a, dtype=bool), np.asarray(b, dtype=bool)
    if len(a) != len(b):
        raise ValueError(f"paired collapse comparison needs one run of each per trial: {len(a)} vs {len(b)}")
    rates, test = (collapse_rate(a), collapse_rate(b)), "McNemar exact (paired by trial)"
    if not len(a):
        return CollapseComparison(*rates, math.nan, test)
    favour, against, _ = collapse_sides([a, b], (1, -1))
    return CollapseComparison(*rates, min(1.0, 2 * float(min(favour, against))), test)


ROUNDING = 9  # decimals a sum of weights is kept to, so that 1 - 2 + 1 and 0 are one value


@functools.lru_cache(maxsize=256)
def _trial_law(weights: tuple[float, ...], collapsed: int) -> tuple[np.ndarray, np.ndarray]:
    """The values of sum_c w_c flag_c over one trial where `collapsed` of its runs collapsed, each set of
    `collapsed` conditions equally likely (H0), with their probabilities."""
    sums = [round(sum(chosen), ROUNDING) for chosen in itertools.combinations(weights, collapsed)]
    values, counts = np.unique(sums, return_counts=True)
    return values, counts / len(sums)


@functools.lru_cache(maxsize=4096)  # a batch of replicates repeats the same few collapse counts
def _statistic_law(weights: tuple[float, ...], collapsed: tuple[int, ...]) -> tuple[np.ndarray, np.ndarray]:
    """The exact null distribution (sorted values, probabilities) of S = sum over trials of sum_c w_c flag_c given
    how many runs collapsed in each trial: the trials' laws (_trial_law) convolved."""
    law = {0.0: 1.0}
    for count in collapsed:
        values, probs = _trial_law(weights, count)
        step: dict[float, float] = {}
        for total, p_total in law.items():
            for value, p_value in zip(values, probs):
                key = round(total + float(value), ROUNDING)
                step[key] = step.get(key, 0.0) + p_total * float(p_value)
        law = step
    values = np.array(sorted(law))
    return values, np.array([law[v] for v in values])


def collapse_sides(flags, weights) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """The one-sided exact p's of a contrast's collapses, its runs paired by trial: `flags` booleans [C, ..., T]
    (condition c's run of trial t (nearly) collapsed, over any batch axes between), `weights` the contrast's C
    weights. A collapse lowers a run's score, so S = sum_t sum_c w_c flag[c, t] is small where the collapses fall
    on the conditions weighted negative. Under H0 a trial's collapses fall on its conditions exchangeably: given
    how many of its C runs collapsed, every set of that many conditions is equally likely, so S has an exact
    distribution given those counts (a permutation test within trials). Returns (small p: the collapses favour
    the contrast, P(S <= s); small p: they go against it, P(S >= s); the smallest p either side could reach given
    the counts). With two conditions and weights (1, -1) it is McNemar's exact test of the discordant trials."""
    flags, weights = np.asarray(flags, dtype=bool), tuple(float(w) for w in weights)
    if flags.shape[0] != len(weights):
        raise ValueError(f"collapse flags of {flags.shape[0]} conditions for a contrast of {len(weights)}")
    batch = flags.shape[1:-1]
    counts = flags.sum(axis=0).reshape(math.prod(batch), flags.shape[-1])  # -1 cannot be inferred with no trials
    observed = np.tensordot(np.array(weights), flags, axes=1).sum(axis=-1).reshape(-1)
    favour, against, reachable = (np.empty(len(observed)) for _ in range(3))
    for i, (row, s) in enumerate(zip(counts, observed)):
        values, probs = _statistic_law(weights, tuple(sorted(int(c) for c in row)))
        s = round(float(s), ROUNDING)
        favour[i], against[i] = probs[values <= s].sum(), probs[values >= s].sum()
        reachable[i] = min(probs[0], probs[-1])
    favour, against, reachable = (np.minimum(1.0, p).reshape(batch) for p in (favour, against, reachable))
    return favour, against, reachable


HURDLE_PARTS = 2  # Bonferroni: where both parts can reject, each part's p is compared against alpha / 2


@dataclass(frozen=True)
class Hurdle:
    """A two-part test of a contrast sum_c w_c score_c > 0 (weights summing to 0) whose runs may collapse, H0: a
    trial's collapses fall on its conditions exchangeably (the same collapse rate) AND the trained runs' contrast
    is 0. `rate`: the one-sided p's that the collapses favour / go against the contrast (collapse_sides; for "A
    beats B", that A collapses less / more often); `trained`: the one-sided p's that the trained runs' contrast is
    > 0 / < 0, on the trials where no condition's run collapsed (NaN with too few such trials: that part then
    cannot reject). The contrast is positive where either part says so: p_greater = min(1, 2 min(rate favour,
    trained > 0)) (Bonferroni, valid whatever the dependence between the parts), p_less likewise, where the rate
    part can reject at all (`rate_counts`); elsewhere the trained part's p alone. Every field is an array over
    any batch axes.

    `rate_counts` (Tarone 1990): whether the rate part's exact test could reach the report's alpha given how many
    runs collapsed in each trial (for two conditions: 2^-d <= alpha with d discordant trials, d >= 5 at 0.05). A
    test that cannot reach the level costs no share of it. Valid at every level <= alpha: given those counts the
    rate part's test is exact under H0 and the trained part's p is valid given which trials collapsed, so each
    branch holds its level given the counts."""

    rate: tuple[np.ndarray, np.ndarray]
    trained: tuple[np.ndarray, np.ndarray]
    rate_counts: np.ndarray

    def _combined(self, rate: np.ndarray, trained: np.ndarray) -> np.ndarray:
        trained = np.nan_to_num(np.asarray(trained, dtype=float), nan=1.0)
        both = np.minimum(1.0, HURDLE_PARTS * np.fmin(np.asarray(rate, dtype=float), trained))
        return np.where(self.rate_counts, both, trained)

    @property
    def p_greater(self) -> np.ndarray:
        """Small p: the contrast is positive (its collapses favour it, or its trained runs' contrast is > 0)."""
        return self._combined(self.rate[0], self.trained[0])

    @property
    def p_less(self) -> np.ndarray:
        """Small p: the contrast is negative (its collapses go against it, or its trained runs' contrast is < 0)."""
        return self._combined(self.rate[1], self.trained[1])

    def disagree(self, alpha: float) -> np.ndarray:
        """Where the parts point opposite ways, each significant at alpha / 2: one says the contrast is positive and
        the other that it is negative (both p_greater and p_less reject; the unit reports it rather than a
        direction)."""
        return (self.p_greater < alpha) & (self.p_less < alpha)


def hurdle(flags, weights, trained: tuple, alpha: float) -> Hurdle:
    """The Hurdle of a contrast from its conditions' collapses paired by trial (`flags` booleans [C, ..., T], one
    row per weight of `weights`) and the trained runs' one-sided p's (> 0, < 0) from the caller's test of the
    trials where no condition's run collapsed; `alpha`: the largest level its p's are compared against (the
    report's alpha; Holm's levels are smaller)."""
    favour, against, reachable = collapse_sides(flags, weights)
    return Hurdle((favour, against), trained, reachable <= alpha)
