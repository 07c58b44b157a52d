"""Variance components of a crossed design without replication (Dodge et al. 2020's question:
how much of a condition's spread comes from the data a run saw, how much from its random draws).

Each run is one cell of an S x D table: training subset s (rows) crossed with random draw d
(columns: reinit, head, order and dropout seeds together). The two-way random-effects model
y = mu + a_s + b_d + e has expected mean squares E[MS_subset] = s2_e + D s2_a,
E[MS_draws] = s2_e + S s2_b, E[MS_residual] = s2_e (the interaction is not separable from the
error with one run per cell). statsmodels gives the ANOVA (sums of squares, F tests); the
method-of-moments estimates from the EMS, truncated at 0, are written here (statsmodels has
no crossed random-effects EMS).
"""

from __future__ import annotations

import math

import pandas as pd
from statsmodels.formula.api import ols
from statsmodels.stats.anova import anova_lm

COMPONENT_COLUMNS = [
    "subsets",
    "seeds",
    "ms_subset",
    "ms_draws",
    "ms_residual",
    "p_subset",
    "p_draws",
    "var_subset",
    "var_draws",
    "var_residual",
    "share_subset",
    "share_draws",
    "share_residual",
]


def crossed_components(cells: pd.DataFrame) -> dict:
    """`cells`: columns subset, draws, value; one row per (subset, draws) pair of a complete
    S x D table. Returns the COMPONENT_COLUMNS; p values are the ANOVA's F tests
    (non-significance is inconclusive, not "no spread from this source")."""
    subsets, seeds = cells["subset"].nunique(), cells["draws"].nunique()
    if len(cells) != subsets * seeds or subsets < 2 or seeds < 2:
        raise ValueError(f"a complete crossed table needs every (subset, draws) pair once: {len(cells)} runs")
    anova = anova_lm(ols("value ~ C(subset) + C(draws)", data=cells).fit())
    ms = anova["sum_sq"] / anova["df"]
    ms_subset, ms_draws, ms_residual = ms["C(subset)"], ms["C(draws)"], ms["Residual"]
    variance = {
        "subset": max(0.0, (ms_subset - ms_residual) / seeds),
        "draws": max(0.0, (ms_draws - ms_residual) / subsets),
        "residual": ms_residual,
    }
    total = sum(variance.values())
    return {
        "subsets": subsets,
        "seeds": seeds,
        "ms_subset": ms_subset,
        "ms_draws": ms_draws,
        "ms_residual": ms_residual,
        "p_subset": anova.loc["C(subset)", "PR(>F)"],
        "p_draws": anova.loc["C(draws)", "PR(>F)"],
        **{f"var_{name}": v for name, v in variance.items()},
        **{f"share_{name}": v / total if total > 0 else math.nan for name, v in variance.items()},
    }
