"""Spearman rho above a margin (permutation_affects_tasks_alike): its size at the boundary (spearman_margin_table)."""

from __future__ import annotations

import math

import numpy as np

from src.stats import correlation, hypothesis, validity
from tools.calibrate.row import ALPHA, HOLM_LEVEL, Row

SPEARMAN_MARGIN = 0.5  # the claim's margin (permutation.RELATIVELY_HIGH)
# 4, 10: below the rule (it refuses them); the rule's SPEARMAN_MARGIN_MIN_PAIRS and above
SPEARMAN_PAIRS = (4, 10, validity.MIN_TRIALS["spearman-margin"][0], 20, 30)


def spearman_margin_table(reps: int, seed: int = 0, pairs=SPEARMAN_PAIRS) -> list[Row]:
    """correlation.spearman_above's one-sided size at the null boundary: pairs from a Gaussian copula whose
    population Spearman rho is exactly the margin (Pearson 2 sin(pi rho / 6), Kruskal 1958). Ranks do not
    see the marginals, so any continuous scores with that dependence give the same rates. `trials` holds the
    number of pairs (the claim's trials); no interval is printed, so coverage is NaN."""
    rng = np.random.default_rng(seed)
    pearson = 2 * math.sin(math.pi * SPEARMAN_MARGIN / 6)
    rows = []
    for n in pairs:
        x = rng.standard_normal((reps, n))
        y = pearson * x + math.sqrt(1 - pearson**2) * rng.standard_normal((reps, n))
        rho = hypothesis.spearman_rows(x, y)
        p_for, _ = correlation.spearman_above(rho, n, SPEARMAN_MARGIN)
        test = f"Spearman rho > {SPEARMAN_MARGIN} (Fisher z, Bonett-Wright)"
        rows.append(
            Row(
                test,
                "Gaussian copula at the margin",
                n,
                reps,
                float(np.mean(p_for < ALPHA)),
                math.nan,
                math.nan,
                size_holm=float(np.mean(p_for < HOLM_LEVEL)),
            )
        )
    return rows
