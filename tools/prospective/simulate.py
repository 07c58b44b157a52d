"""A unit's decision probabilities through the report's own test, and a claim's from its units'.

A unit's estimate on T trials is drawn by src/stats/power.py (decision_probability: the estimate ~ N(effect,
trial_sd^2 / T + fixed_se^2), the trial variance ~ trial_sd^2 chi2(T - 1) / (T - 1), the eval set drawn
afresh) as a batched `Estimate` read by `units.shape_p`, the function the report's units call, so the p's are
the report's own."""

from __future__ import annotations

import math
from dataclasses import dataclass

import numpy as np

from src.claims.units import shape_p
from src.stats import correlation, hypothesis
from src.stats.hypothesis import Estimate
from src.stats.power import decision_probability
from src.stats.validity import MIN_TRIALS

SPEARMAN = "spearman"  # a unit's shape: Spearman rho over `trials` pairs above `margin` (correlation.spearman_above)


@dataclass(frozen=True)
class UnitModel:
    """One unit of a claim on a design: its label, the preset study and (task, size) whose trials it reads, its
    contrast's components (trial_sd: one trial's SD; fixed_se: the eval set's SE, which trials do not shrink),
    the effect it is simulated at, its shape (units.shape_p) and margin, and whether the unit's test is the
    trial-only t (slopes over trials: no eval-set part)."""

    label: str
    study: str
    task: str
    size: int
    trial_sd: float
    fixed_se: float
    effect: float
    fixed_df: float  # the eval set's df (its examples - 1); NaN: no eval-set part
    shape: str = "greater"
    margin: float | None = None
    trials_only: bool = False
    conditions: tuple[str, ...] = ()  # the conditions whose runs it reads, for the cost ("cond@task": another task's)


def unit_probabilities(
    unit: UnitModel, trials: int, level_for: float, level_against: float, reps: int, rng: np.random.Generator
) -> tuple[float, float]:
    """(P(p for < level_for), P(p against < level_against)) at `trials`, by power.decision_probability on the
    same draws for both sides; (0, 0) below 3 trials, where src/stats/validity.py refuses every estimate test."""
    if unit.shape == SPEARMAN:
        return spearman_probabilities(unit, trials, level_for, level_against, reps, rng)
    if trials < 3:
        return 0.0, 0.0
    design = Estimate(0.0, 0.0, trials, fixed_se=0.0 if unit.trials_only else unit.fixed_se)
    seed = int(rng.integers(2**63))
    return tuple(  # type: ignore[return-value]
        decision_probability(
            lambda e, side=side: shape_p(e, unit.shape, unit.margin)[side],
            level,
            unit.effect,
            unit.trial_sd,
            trials,
            design,
            draws=reps,
            seed=seed,
        )
        for side, level in ((0, level_for), (1, level_against))
    )


def spearman_probabilities(
    unit: UnitModel, pairs: int, level_for: float, level_against: float, reps: int, rng: np.random.Generator
) -> tuple[float, float]:
    """The report's test of Spearman rho > margin (correlation.spearman_above: the share of its simulated null
    at the margin, population rho = margin under a Gaussian copula, at or beyond the observed rho) on `pairs`
    pairs drawn from a Gaussian copula whose Spearman rho is the unit's effect (latent Pearson r =
    2 sin(pi rho / 6)), rho computed as the report does (hypothesis.spearman_rows); (0, 0) below the pairs from
    which src/stats/validity.py lets it decide. The test is discrete at few pairs: below 5 pairs rho = 1 has
    p 0.134, so it cannot reach 0.05 there (docs/calibration.md)."""
    if pairs < MIN_TRIALS["spearman-margin"][0]:
        return 0.0, 0.0
    r = 2 * math.sin(math.pi * unit.effect / 6)
    x = rng.standard_normal((reps, pairs))
    y = r * x + math.sqrt(1 - r * r) * rng.standard_normal((reps, pairs))
    rho = hypothesis.spearman_rows(x, y)
    p_for, p_against = correlation.spearman_above(rho, pairs, unit.margin)
    return float(np.mean(p_for <= level_for)), float(np.mean(p_against <= level_against))


@dataclass(frozen=True)
class Outcome:
    supported: float
    contradicted: float

    @property
    def undecided(self) -> float:
        return max(0.0, 1.0 - self.supported - self.contradicted)


def combine(every: bool, fors: list[float], againsts: list[float]) -> Outcome:
    """A claim's outcome from its units' probabilities, the units taken as independent (distinct (task, size)
    cells or conditions; units sharing a condition's runs are positively correlated, which this ignores).
    Universal: supported when every unit is "for" at alpha (intersection-union), contradicted when any is
    "against" at its Holm level; existential the mirror. The Holm side is computed at Bonferroni's alpha / m
    (Holm's first step), so its probability is a lower bound. Supported and contradicted are taken as
    disjoint (a unit "for" at alpha and another "against" at alpha / m both in one report is counted twice:
    the undecided share is floored at 0)."""
    if not fors:
        return Outcome(0.0, 0.0)
    all_for, any_against = float(np.prod(fors)), 1.0 - float(np.prod([1.0 - p for p in againsts]))
    if every:
        return Outcome(all_for, any_against)
    any_for, all_against = 1.0 - float(np.prod([1.0 - p for p in fors])), float(np.prod(againsts))
    return Outcome(any_for, all_against)
