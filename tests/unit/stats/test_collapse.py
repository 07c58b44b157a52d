"""src/stats/collapse.py: collapse rates with exact intervals and exact comparisons, against the textbook cases."""

import math

import numpy as np
import pytest
from scipy import stats

from src.stats.collapse import Hurdle, collapse_rate, collapse_sides, compare_collapse, hurdle


def test_no_collapse_in_three_runs_has_the_rule_of_three_like_exact_upper_bound():
    # Clopper-Pearson with 0 of n: the upper end solves (1 - p)^n = alpha / 2
    rate = collapse_rate([False, False, False])
    assert (rate.collapsed, rate.runs, rate.rate) == (0, 3, 0.0)
    assert rate.interval == pytest.approx((0.0, 1 - 0.025 ** (1 / 3)))
    assert math.isnan(collapse_rate([]).rate) and math.isnan(collapse_rate([]).interval[0])


def test_paired_comparison_is_the_exact_binomial_test_of_the_discordant_trials():
    a = np.array([1, 1, 1, 0, 1, 0, 0, 1], dtype=bool)
    b = np.array([0, 0, 1, 0, 0, 0, 0, 0], dtype=bool)  # 4 trials where only A collapsed, none only B
    comparison = compare_collapse(a, b)
    assert comparison.p == pytest.approx(stats.binomtest(4, 4).pvalue) == pytest.approx(2 * 0.5**4)
    assert comparison.test.startswith("McNemar exact") and (comparison.a.collapsed, comparison.b.collapsed) == (5, 1)
    b[[3, 6]] = True  # 2 trials where only B collapsed: the two-sided binomial test of 4 against 2 at 1/2
    assert compare_collapse(a, b).p == pytest.approx(stats.binomtest(4, 6).pvalue)
    with pytest.raises(ValueError, match="one run of each per trial"):
        compare_collapse(a, b[:4])
    assert compare_collapse([False] * 3, [False] * 3).p == 1.0 and math.isnan(compare_collapse([], []).p)


def test_two_conditions_collapse_test_is_mcnemars_one_sided_exact_test_of_the_discordant_trials():
    a = np.array([[1, 1, 1, 0, 1, 0, 0, 1], [0] * 8], dtype=bool)  # a batch of two comparisons
    b = np.array([[0, 0, 1, 0, 0, 0, 1, 0], [0] * 8], dtype=bool)  # first: 4 trials only A collapsed, 1 only B
    favour, against, reachable = collapse_sides([a, b], (1, -1))
    assert favour[0] == pytest.approx(stats.binomtest(4, 5, alternative="less").pvalue)
    assert against[0] == pytest.approx(stats.binomtest(4, 5, alternative="greater").pvalue)
    assert reachable[0] == pytest.approx(0.5**5)
    assert (favour[1], against[1], reachable[1]) == (1.0, 1.0, 1.0)  # no discordant trial
    assert collapse_sides(np.zeros((2, 0), dtype=bool), (1, -1)) == (1.0, 1.0, 1.0)  # no trial: nothing to test


def test_a_contrasts_collapse_test_is_the_exact_permutation_of_each_trials_collapses_over_its_conditions():
    # (1, -2, 1) over 3 trials, the middle condition collapsed in every one: each trial's one collapse falls on the
    # middle with probability 1/3 under H0, so S = -6 (collapses on the negative weight: favouring the contrast)
    # has probability (1/3)^3 and is the smallest S
    flags = np.array([[0, 0, 0], [1, 1, 1], [0, 0, 0]], dtype=bool)
    favour, against, reachable = collapse_sides(flags, (1, -2, 1))
    assert favour == pytest.approx(1 / 27) and against == 1.0 and reachable == pytest.approx(1 / 27)
    # a trial where 2 of 3 collapsed: its S_t is -1 (an outer and the middle, p 2/3) or 2 (both outer, p 1/3);
    # with one more trial whose single collapse is outer (S_t 1 w.p. 2/3, -2 w.p. 1/3): S = 0 observed
    flags = np.array([[1, 1], [1, 0], [0, 0]], dtype=bool)
    law = [(-1 + 1, 2 / 3 * 2 / 3), (-1 - 2, 2 / 3 * 1 / 3), (2 + 1, 1 / 3 * 2 / 3), (2 - 2, 1 / 3 * 1 / 3)]
    favour, against, _ = collapse_sides(flags, (1, -2, 1))
    assert favour == pytest.approx(sum(p for s, p in law if s <= 0)) == pytest.approx(7 / 9)
    assert against == pytest.approx(sum(p for s, p in law if s >= 0)) == pytest.approx(7 / 9)
    with pytest.raises(ValueError, match="2 conditions for a contrast of 3"):
        collapse_sides(flags[:2], (1, -2, 1))


def test_the_hurdle_is_the_bonferroni_of_its_parts_where_both_can_reject_else_the_trained_part_alone():
    h = Hurdle(
        rate=(np.array([0.03, 0.2, 0.3]), np.array([1.0, 0.9, 0.8])),
        trained=(np.array([0.5, math.nan, 0.8]), np.array([0.01, math.nan, 0.2])),
        rate_counts=np.array([True, True, False]),
    )
    assert h.p_greater == pytest.approx([0.06, 0.4, 0.8]) and h.p_less == pytest.approx([0.02, 1.0, 0.2])
    # parts that point opposite ways, each below alpha / 2
    assert h.disagree(0.1).tolist() == [True, False, False] and not h.disagree(0.05).any()
    # the rate part counts where its exact test can reach alpha: 2^-d <= alpha with d discordant trials (5 at 0.05)
    a = np.array([[1, 1, 1, 1, 1, 0], [1, 1, 1, 1, 0, 0]], dtype=bool)
    ones = (np.ones(2), np.ones(2))
    assert hurdle([a, np.zeros_like(a)], (1, -1), ones, 0.05).rate_counts.tolist() == [True, False]
    assert hurdle([a, np.zeros_like(a)], (1, -1), ones, 0.1).rate_counts.tolist() == [True, True]
    # three conditions: one collapse per trial reaches (1/3)^T at best, 1/27 at 3 trials: 0.05, not 0.03
    middle = np.array([[0, 0, 0], [1, 1, 1], [0, 0, 0]], dtype=bool)
    assert not hurdle(middle, (1, -2, 1), (1.0, 1.0), 0.03).rate_counts
    assert hurdle(middle, (1, -2, 1), (1.0, 1.0), 0.05).rate_counts
