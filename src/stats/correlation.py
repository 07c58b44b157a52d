"""Spearman rho over attention heads (head importance against the head-reinit effect) with
the interval whose calibration tools/calibrate.py measured at that number of heads, and the test
of a Spearman rho against a margin (tools/calibrate.py spearman_margin_table)."""

from __future__ import annotations

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


# the candidate intervals of rho over heads, whose calibration tools/calibrate.py measures and
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


def spearman_above(rho, n: int, margin: float):
    """One-sided p's (for: ρ > margin, against: ρ < margin) of a Spearman ρ (a number or an array of them)
    from n pairs, by Fisher's z with Bonett & Wright's (2000) variance (1 + ρ²/2) / (n − 3). Its size at the
    boundary (population ρ = margin) is measured by tools/calibrate.py (spearman_margin_table); validity
    says from how many pairs it decides ("spearman-margin")."""
    rho = np.clip(rho, -0.999999, 0.999999)
    z = (np.arctanh(rho) - math.atanh(margin)) / np.sqrt((1 + rho**2 / 2) / (n - 3))
    return scipy_stats.norm.sf(z), scipy_stats.norm.cdf(z)
