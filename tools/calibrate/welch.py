"""The weight-change claims' two-sample test (welch_table)."""

from __future__ import annotations

from dataclasses import replace

import numpy as np
from scipy import stats

from src.stats import hypothesis
from tools.calibrate.nulls import TRIALS
from tools.calibrate.row import ALPHA, HOLM_LEVEL, LEVEL, Row

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
                tails = [
                    np.mean(p[:, None] < [ALPHA, HOLM_LEVEL], axis=0)
                    for p in map(np.asarray, (e.p_greater(), e.p_less()))
                ]
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
