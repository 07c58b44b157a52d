"""src/stats/collapse.py: collapse rates with exact intervals and exact comparisons, against the textbook cases."""

import math

import numpy as np
import pytest
from scipy import stats

from src.stats.collapse import collapse_rate, compare_collapse


def test_no_collapse_in_three_runs_has_the_rule_of_three_like_exact_upper_bound():
    # Clopper-Pearson with 0 of n: the upper end solves (1 - p)^n = alpha / 2
    rate = collapse_rate([False, False, False])
    assert (rate.collapsed, rate.runs, rate.rate) == (0, 3, 0.0)
    assert rate.interval == pytest.approx((0.0, 1 - 0.025 ** (1 / 3)))
    assert math.isnan(collapse_rate([]).rate) and math.isnan(collapse_rate([]).interval[0])


def test_paired_comparison_is_the_exact_binomial_test_of_the_discordant_trials():
    a = np.array([1, 1, 1, 0, 1, 0, 0, 1], dtype=bool)
    b = np.array([0, 0, 1, 0, 0, 0, 0, 0], dtype=bool)  # 4 trials where only A collapsed, none only B
    comparison = compare_collapse(a, b, paired=True)
    assert comparison.p == pytest.approx(2 * 0.5**4) and comparison.test.startswith("McNemar exact")
    assert (comparison.a.collapsed, comparison.b.collapsed) == (5, 1)
    with pytest.raises(ValueError, match="one run of each per trial"):
        compare_collapse(a, b[:4], paired=True)


def test_unpaired_comparison_is_boschloos_exact_test_and_none_collapsed_gives_one():
    a, b = [True] * 4 + [False] * 6, [True] * 0 + [False] * 12
    comparison = compare_collapse(a, b, paired=False)
    assert comparison.p == pytest.approx(stats.boschloo_exact([[4, 0], [6, 12]]).pvalue)
    assert compare_collapse([False] * 3, [False] * 3, paired=True).p == 1.0
