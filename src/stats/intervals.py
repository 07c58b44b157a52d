"""Means and 95% confidence intervals over trials (paper App. B).

The half-width is t_{0.975, n-1} * s / sqrt(n) with the sample standard deviation
(ddof=1) and the t quantile of the actual number of trials. (The paper's released
code used a fixed t = 2.667 with ddof=0 whatever n was; we do not.)
"""

from __future__ import annotations

import math

import numpy as np
from scipy import stats


def mean_ci(values, confidence: float = 0.95) -> tuple[float, float, int]:
    """(mean, half-width, n); the half-width is NaN for a single trial: one run has no spread."""
    x = np.asarray(values, dtype=float)
    n = len(x)
    if n == 0:
        return math.nan, math.nan, 0
    if n == 1:
        return float(x[0]), math.nan, 1
    half = stats.t.ppf(0.5 + confidence / 2, df=n - 1) * x.std(ddof=1) / math.sqrt(n)
    return float(x.mean()), float(half), n
