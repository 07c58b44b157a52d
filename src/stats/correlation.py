"""Spearman rho over attention heads (head importance against the head-reinit effect) with
the interval whose calibration tools/calibrate/heads.py measured at that number of heads, and the test
of a Spearman rho against a margin by its simulated null at the boundary (tools/calibrate/spearman_margin.py
spearman_margin_table)."""

from __future__ import annotations

import functools
import math

import numpy as np
from scipy import stats as scipy_stats

from src.stats import hypothesis

BOOTSTRAP_RESAMPLES = 2000  # intervals over heads; the seed is fixed, so the table is reproducible


def percentile_interval(importance: np.ndarray, drop: np.ndarray, level: float = 0.95) -> tuple[float, float]:
    """Percentile bootstrap of Spearman rho over heads. scipy.stats.bootstrap returns NaN as soon
    as one resample is degenerate (every head drawn the same: rho undefined), which with a few
    heads is most tables; those resamples are left out here instead."""
    draws = np.random.default_rng(0).integers(0, len(drop), (BOOTSTRAP_RESAMPLES, len(drop)))
    resampled = hypothesis.spearman_rows(importance[draws], drop[draws])
    finite = resampled[np.isfinite(resampled)]
    if not len(finite):
        return np.nan, np.nan
    low, high = np.percentile(finite, [50 * (1 - level), 50 * (1 + level)])
    return float(low), float(high)


def fisher_interval(importance: np.ndarray, drop: np.ndarray, level: float = 0.95) -> tuple[float, float]:
    """Fisher z of Spearman rho with Bonett & Wright's (2000) standard error for it,
    sqrt((1 + rho^2 / 2) / (n - 3)). At rho = +-1 the interval is that point."""
    rho, n = hypothesis.spearman(importance, drop), len(drop)
    with np.errstate(divide="ignore"):
        z = np.arctanh(rho)
    half = scipy_stats.norm.ppf(0.5 + level / 2) * math.sqrt((1 + rho**2 / 2) / (n - 3))
    return float(np.tanh(z - half)), float(np.tanh(z + half))


# the candidate intervals of rho over heads, whose calibration tools/calibrate/heads.py measures and
# from which correlation_interval picks the one reported at a number of heads
CORRELATION_INTERVALS = {
    "percentile bootstrap": percentile_interval,
    "Fisher z, Bonett-Wright SE": fisher_interval,
}


# the fewest heads from which spearman_with_uncertainty reports each interval (in order of preference),
# as calibration.correlation_table measured them (docs/calibration.md; tests/unit/stats/test_calibration.py
# re-measures the cells)
CORRELATION_INTERVAL_FROM = {"Fisher z, Bonett-Wright SE": 5}


def correlation_interval(heads: int) -> tuple[str | None, str]:
    """The interval of rho over heads that spearman_with_uncertainty reports at `heads` heads
    (a name in CORRELATION_INTERVALS), or None and why not.

    - Fisher z with the Bonett-Wright SE covers the estimand under every design, latent rho
      and trial count from 5 heads to 72 (and 144, measured for it alone), and is the narrower
      of the two where both cover.
    - The percentile bootstrap over heads excludes 0 in 12-14%
      of tables with no relation at 5 heads (its size) and under-covers slightly at 6 (about
      0.93 where the latent rho is not 0); it covers from 12 heads.
    - At 4 heads neither covers (0.85-0.92): rho is +-1 in 1 of 12 tables even with no
      relation, and both intervals are then that point. Fewer heads were not measured."""
    methods = [m for m, fewest in CORRELATION_INTERVAL_FROM.items() if heads >= fewest]
    if methods:
        return methods[0], ""
    return None, f"none: not calibrated at {heads} heads (docs/calibration.md)"


def spearman_with_uncertainty(importance: np.ndarray, drop: np.ndarray) -> dict:
    """Spearman rho, its interval over heads where one is calibrated at this number of heads
    (correlation_interval; `interval` names the method, or says why there is none),
    and the permutation p (two-sided; every pairing up to 8 heads: hypothesis.exact_spearman_p)."""
    if len(importance) < 3 or np.ptp(importance) == 0 or np.ptp(drop) == 0:
        return {
            "spearman": np.nan,
            "ci_low": np.nan,
            "ci_high": np.nan,
            "interval": "none: fewer than 3 heads, or a constant column",
            "p_permutation": np.nan,
        }
    method, why_not = correlation_interval(len(drop))
    low, high = CORRELATION_INTERVALS[method](importance, drop) if method else (np.nan, np.nan)
    return {
        "spearman": hypothesis.spearman(importance, drop),
        "ci_low": low,
        "ci_high": high,
        "interval": method or why_not,
        "p_permutation": hypothesis.exact_spearman_p(importance, drop),
    }


NULL_DRAWS = 200_000  # samples of the boundary's Spearman rho per number of pairs: p resolved to 5e-6
NULL_SEED = 1958  # fixed, so every report reads the same null; apart from the calibration's seeds


@functools.cache
def boundary_null(n: int, margin: float) -> np.ndarray:
    """The sorted Spearman rho of NULL_DRAWS samples of n pairs at the null boundary: a Gaussian copula whose
    population Spearman rho is `margin` (Pearson 2 sin(pi margin / 6), Kruskal 1958). Ranks do not see the
    marginals, so any continuous scores with that dependence have this law. Simulated once per (n, margin)."""
    rng = np.random.default_rng(NULL_SEED)
    pearson = 2 * math.sin(math.pi * margin / 6)
    chunks = []
    for start in range(0, NULL_DRAWS, 50_000):
        x = rng.standard_normal((min(50_000, NULL_DRAWS - start), n))
        y = pearson * x + math.sqrt(1 - pearson**2) * rng.standard_normal(x.shape)
        chunks.append(hypothesis.spearman_rows(x, y))
    null = np.sort(np.concatenate(chunks))
    null.flags.writeable = False
    return null


def spearman_above(rho, n: int, margin: float):
    """One-sided p's (for: ρ > margin, against: ρ < margin) of a Spearman ρ (a number or an array of them) from n
    pairs: the share of boundary_null's draws (population ρ = margin) at or above ρ, and at or below it, as
    (1 + hits) / (1 + draws). Exact under a Gaussian copula at any n up to the simulation's resolution, where
    Fisher's z with Bonett & Wright's variance exceeded its size below 15 pairs (1.2x nominal at the Holm level
    at 10, Table 1's N). Its size at the boundary and its power are measured by tools/calibrate/spearman_margin.py
    (spearman_margin_table); validity says from how many pairs it decides ("spearman-margin")."""
    null = boundary_null(n, margin)
    rho = np.asarray(rho, dtype=float)
    tolerance = 1e-12  # ties of the observed rho with a draw's count as at or beyond it
    above = len(null) - np.searchsorted(null, rho - tolerance, side="left")
    below = np.searchsorted(null, rho + tolerance, side="right")
    return (1 + above) / (1 + len(null)), (1 + below) / (1 + len(null))
