"""The probability that a test of an `Estimate` decides: at a given true effect (power), and averaged over
what the observed runs leave uncertain of the effect and of the trial SD (assurance; O'Hagan, Stevens &
Campbell 2005). Both are simulated THROUGH the Estimate's own p methods, on one batched Estimate of many
draws, so they stay right whatever test Estimate implements (the t on its df, or any combined test that
reads its variance components): nothing here restates a test's critical value.

A draw of T trials: the trial variance s^2 ~ sigma^2 chi2(df) / df (df = T - 1 for independent trials),
independent of the estimate (normal theory), and the estimate ~ N(effect, sigma^2 / T + fixed_se^2), the
eval set's part fixed_se (what more trials do not shrink) taken as observed. Every field the draw does not
set (the eval set's SE and whatever else the Estimate carries of its eval set) is the design's.
"""

from __future__ import annotations

import math
from collections.abc import Callable
from dataclasses import replace

import numpy as np

from src.stats.hypothesis import Estimate

DRAWS = 4000  # the Monte Carlo SE of a probability is at most 0.5 / sqrt(4000) = 0.008
SEED = 0

PValues = Callable[[Estimate], np.ndarray]  # a test of a batched Estimate: its p per draw


def simulated(
    design: Estimate,
    effect: np.ndarray | float,
    trial_sd: np.ndarray | float,
    trials: int,
    rng: np.random.Generator,
    eval_set_drawn: bool = True,
    df: float | None = None,
) -> Estimate:
    """A batched Estimate of what `trials` trials would show, one draw per element of `effect` and `trial_sd`
    (broadcast together): the trial variance ~ trial_sd^2 chi2(df) / df on `df` (None: trials - 1, independent
    trials) and the estimate ~ N(effect, trial_sd^2 / trials + fixed_se^2), with the design's fixed_se.
    `eval_set_drawn` False leaves the eval set's part out of the estimate's spread: `effect` is then the effect
    on this eval set, whose own deviation is already in it (assured). The test still reads the eval set's SE."""
    effect, trial_sd = np.broadcast_arrays(np.asarray(effect, dtype=float), np.asarray(trial_sd, dtype=float))
    df = trials - 1 if df is None else df
    variance = trial_sd**2 * rng.chisquare(df, effect.shape) / df
    fixed = design.fixed_se**2
    spread = np.sqrt(trial_sd**2 / trials + (fixed if eval_set_drawn else 0.0))
    estimate = effect + spread * rng.standard_normal(effect.shape)
    return replace(
        design,
        estimate=estimate,  # type: ignore[arg-type]  # batched: Estimate's p methods work element-wise
        se=np.sqrt(variance / trials + fixed),  # type: ignore[arg-type]
        n=trials,
        df=float(df),
        trial_sd=np.sqrt(variance),  # type: ignore[arg-type]
        trial_df=float(df),
    )


def decision_probability(
    p_of: PValues,
    level: float,
    effect: float,
    trial_sd: float,
    trials: int,
    design: Estimate | None = None,
    draws: int = DRAWS,
    seed: int = SEED,
) -> float:
    """The probability that the test `p_of` reaches p < `level` with `trials` trials when the true effect is
    `effect` and one trial's SD `trial_sd`, the eval set drawn afresh with the SE of `design` (its fixed_se and
    every other field of its eval set; None: no eval-set part). `draws` seeded draws."""
    design = Estimate(0.0, 0.0, trials) if design is None else design
    rng = np.random.default_rng(seed)
    batch = simulated(design, np.full(draws, effect), trial_sd, trials, rng)
    return float(np.mean(np.asarray(p_of(batch)) < level))


def assured(
    observed: Estimate, trials: int, rng: np.random.Generator, draws: int = DRAWS, df: float | None = None
) -> Estimate | None:
    """A batched Estimate of what `trials` trials on the SAME eval set would show, over the uncertainty the
    observed runs leave: sigma^2 ~ trial_sd^2 trial_df / chi2(trial_df) (its scaled inverse chi-square, the
    posterior under the Jeffreys prior), then the effect on this eval set ~ N(observed, sigma^2 / n): the eval
    set's own deviation is in the observed estimate and stays in the new one, so only the trial part is
    uncertain (flat prior), and the new estimate ~ N(that effect, sigma^2 / trials). As trials grow the
    estimate tends to the effect on this eval set, and the test still reads the eval set's SE: a test that
    eval set blocks stays blocked. `df`: the new design's df (simulated). None when the observed runs give
    no trial variance."""
    sd, trial_df = float(observed.trial_sd), float(observed.trial_df)
    if not (np.isfinite(sd) and np.isfinite(trial_df) and trial_df > 0 and observed.n >= 2):
        return None
    sigma = sd * np.sqrt(trial_df / rng.chisquare(trial_df, draws))
    effect = observed.estimate + sigma / math.sqrt(observed.n) * rng.standard_normal(draws)
    return simulated(observed, effect, sigma, trials, rng, eval_set_drawn=False, df=df)


def assurance(
    p_of: PValues, level: float, observed: Estimate, trials: int, draws: int = DRAWS, seed: int = SEED
) -> float:
    """The probability that `trials` trials on the same eval set give p < `level` under the test `p_of`,
    averaged over the effect's and the trial SD's uncertainty given the `observed` Estimate (assured); NaN
    without a trial variance."""
    batch = assured(observed, trials, np.random.default_rng(seed), draws)
    return math.nan if batch is None else float(np.mean(np.asarray(p_of(batch)) < level))
