"""Spearman rho above a margin (permutation_affects_tasks_alike): its size at the boundary and its power at the
paper's own correlations (spearman_margin_table)."""

from __future__ import annotations

import math

import numpy as np

from src.stats import correlation, hypothesis
from tools.calibrate.row import ALPHA, HOLM_LEVEL, Row

SPEARMAN_MARGIN = 0.5  # the claim's margin (permutation.RELATIVELY_HIGH)
SPEARMAN_PAIRS = (4, 5, 6, 10, 15, 30)  # 10: Table 1's N (001 §5)
# Table 1's sample rhos over its 10 permutations (0.72 SST-2 ~ QNLI, 0.83 QNLI ~ CoLA), taken as population values
PAPER_RHOS = (0.72, 0.83)
POWER = "power"  # the estimator of a row measured beyond the null


def copula_rhos(reps: int, n: int, spearman_rho: float, rng: np.random.Generator) -> np.ndarray:
    """Sample Spearman rhos of `reps` samples of n pairs from the Gaussian copula whose population Spearman rho is
    `spearman_rho` (Pearson 2 sin(pi rho / 6), Kruskal 1958). Ranks do not see the marginals, so any continuous
    scores with that dependence give the same rates."""
    pearson = 2 * math.sin(math.pi * spearman_rho / 6)
    x = rng.standard_normal((reps, n))
    y = pearson * x + math.sqrt(1 - pearson**2) * rng.standard_normal((reps, n))
    return hypothesis.spearman_rows(x, y)


def spearman_margin_table(
    reps: int, seed: int = 0, pairs=SPEARMAN_PAIRS, power_rhos=PAPER_RHOS, power_pairs=(10, 15, 30)
) -> list[Row]:
    """correlation.spearman_above's one-sided size at the null boundary (population rho = the margin), with samples
    drawn apart from the null it reads (its own fixed seed), at each number of `pairs`; then its power (estimator
    POWER, the rejection rate in `size`) at each population rho of `power_rhos` and each of `power_pairs`.
    `trials` holds the number of pairs (the claim's trials); no interval is printed, so coverage is NaN."""
    rng = np.random.default_rng(seed)
    test = f"Spearman rho > {SPEARMAN_MARGIN} (simulated null at the margin)"
    cells = [(n, SPEARMAN_MARGIN, "new") for n in pairs] + [(n, r, POWER) for r in power_rhos for n in power_pairs]
    rows = []
    for n, rho_s, estimator in cells:
        p_for, _ = correlation.spearman_above(copula_rhos(reps, n, rho_s, rng), n, SPEARMAN_MARGIN)
        rows.append(
            Row(
                test,
                f"Gaussian copula at rho = {rho_s}",
                n,
                reps,
                float(np.mean(p_for < ALPHA)),
                math.nan,
                math.nan,
                estimator=estimator,
                size_holm=float(np.mean(p_for < HOLM_LEVEL)),
            )
        )
    return rows
