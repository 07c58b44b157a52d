"""src/stats/hypothesis.py: the hand-written statistics against the textbook cases they reduce to (scipy, statsmodels,
sklearn, or a formula), and the library-backed ones against known values."""

import math

import numpy as np
import pytest
from scipy import stats
from sklearn.metrics import f1_score, matthews_corrcoef
from statsmodels.stats.weightstats import ttost_paired

from src.stats import hypothesis
from src.tasks.metrics import example_metric

TRIAL_SCORES_A = np.array([0.80, 0.85, 0.75, 0.90, 0.82])
DIFFERENCES = np.array([0.10, 0.15, 0.05, 0.20, 0.12])


def contrast_without_example_noise():
    """A vs B whose per-trial scores are all there is (the metric path that does not resample examples)."""
    labels = np.zeros(50, dtype=int)
    blank = np.zeros((5, 50))
    terms = [(1.0, blank, TRIAL_SCORES_A), (-1.0, blank, TRIAL_SCORES_A - DIFFERENCES)]
    return hypothesis.paired_contrast(terms, labels, example_metric("pearson"))


def test_without_eval_example_variance_the_contrast_is_the_paired_t_interval():
    estimate = contrast_without_example_noise()
    textbook = stats.ttest_1samp(DIFFERENCES, 0)
    low, high = estimate.interval(0.95)
    expected = textbook.confidence_interval(0.95)
    assert estimate.estimate == pytest.approx(DIFFERENCES.mean())
    assert (low, high) == (pytest.approx(expected.low), pytest.approx(expected.high))
    assert estimate.p_zero() == pytest.approx(textbook.pvalue)


def test_tost_of_a_trials_only_contrast_is_statsmodels_paired_tost():
    estimate = contrast_without_example_noise()
    for margin in (0.1, 0.2, 0.3):
        reference = ttost_paired(TRIAL_SCORES_A, TRIAL_SCORES_A - DIFFERENCES, -margin, margin)[0]
        assert estimate.p_equivalent(margin) == pytest.approx(reference)


def test_with_identical_trials_the_se_is_the_one_sample_t_of_paired_correctness_on_the_trials_df():
    rng = np.random.default_rng(1)
    labels = rng.integers(0, 2, 400)
    a = np.where(rng.random(400) < 0.8, labels, 1 - labels)
    b = np.where(rng.random(400) < 0.6, labels, 1 - labels)
    T = 4  # every trial predicts the same: only the eval examples vary
    terms = [
        (1.0, np.tile(a, (T, 1)), np.full(T, np.mean(a == labels))),
        (-1.0, np.tile(b, (T, 1)), np.full(T, np.mean(b == labels))),
    ]
    estimate = hypothesis.paired_contrast(terms, labels, example_metric("accuracy"))
    paired = (a == labels).astype(float) - (b == labels)
    # the one-sample t's SE (no sqrt(T/(T-1)) inflation), but on the trials' T - 1 df: 4 agreeing trials do not
    # show that the trials never vary
    se = paired.std(ddof=1) / math.sqrt(len(paired))
    assert estimate.estimate == pytest.approx(paired.mean())
    assert estimate.se == pytest.approx(se) and estimate.df == T - 1
    assert estimate.p_zero() == pytest.approx(2 * stats.t.sf(abs(paired.mean()) / se, T - 1))
    assert (estimate.trial_sd, estimate.fixed_se) == (pytest.approx(0.0, abs=1e-12), pytest.approx(estimate.se))


# A 3 trials x 4 examples table, small enough to check by hand.
TABLE = np.array([[1.0, 0.0, 1.0, 1.0], [0.0, 0.0, 1.0, 0.0], [1.0, 1.0, 1.0, 0.0]])


def test_crossed_variance_is_the_two_way_random_effects_estimate_from_statsmodels_mean_squares():
    from statsmodels.formula.api import ols
    from statsmodels.stats.anova import anova_lm

    rows = [(t, n, TABLE[t, n]) for t in range(3) for n in range(4)]
    frame = __import__("pandas").DataFrame(rows, columns=["trial", "example", "d"])
    ms = anova_lm(ols("d ~ C(trial) + C(example)", frame).fit())["mean_sq"]  # residual = interaction
    ms_t, ms_e, ms_te = ms["C(trial)"], ms["C(example)"], ms["Residual"]
    assert ms_t > ms_te and ms_e > ms_te  # no component truncated in this table
    v = hypothesis.crossed_variance(TABLE)
    assert v.variance == pytest.approx((ms_t + ms_e - ms_te) / 12)
    assert v.df == 2  # the trials' df
    assert v.trial_variance == pytest.approx(ms_t / 4) and v.trial_df == 2
    assert v.variance == pytest.approx(v.trial_variance / 3 + v.fixed_variance)


def test_crossed_variance_by_hand():
    # grand mean 7/12; trial means 3/4, 1/4, 3/4; example means 2/3, 1/3, 1, 1/3
    ms_t = 4 * ((3 / 4 - 7 / 12) ** 2 * 2 + (1 / 4 - 7 / 12) ** 2) / 2
    ms_e = 3 * ((2 / 3 - 7 / 12) ** 2 + 2 * (1 / 3 - 7 / 12) ** 2 + (1 - 7 / 12) ** 2) / 3
    total = 12 * TABLE.var() * 11 / 11  # total sum of squares = 12 * population variance
    ms_te = (total - 2 * ms_t - 3 * ms_e) / 6
    assert hypothesis.crossed_variance(TABLE).variance == pytest.approx((ms_t + ms_e - ms_te) / 12)


def test_three_crossed_factors_give_the_random_effects_estimate_from_statsmodels_mean_squares():
    """Subsets x draws x examples (a crossed seed_design): Var = (MS_S + MS_D + MS_E - MS_SD -
    MS_SE - MS_DE + MS_SDE) / (S D N) when no component is truncated, with Satterthwaite's df."""
    import pandas as pd
    from statsmodels.formula.api import ols
    from statsmodels.stats.anova import anova_lm

    rng = np.random.default_rng(0)  # a table where no component estimates negative
    S, D, N = 3, 4, 6
    d = (
        rng.normal(size=(S, 1, 1)) * 2
        + rng.normal(size=(1, D, 1)) * 2
        + rng.normal(size=(1, 1, N)) * 2
        + rng.normal(size=(S, D, 1))
        + rng.normal(size=(S, 1, N))
        + rng.normal(size=(1, D, N))
        + rng.normal(size=(S, D, N)) * 0.5
    )
    frame = pd.DataFrame(
        [(s, r, n, d[s, r, n]) for s in range(S) for r in range(D) for n in range(N)], columns=["s", "r", "n", "y"]
    )
    table = anova_lm(ols("y ~ C(s) + C(r) + C(n) + C(s):C(r) + C(s):C(n) + C(r):C(n)", frame).fit())
    ms = table["mean_sq"].to_dict()
    m = [ms[k] for k in ("C(s)", "C(r)", "C(n)", "C(s):C(r)", "C(s):C(n)", "C(r):C(n)", "Residual")]
    components = [  # Moebius inversion of the expected mean squares: every one positive here
        m[0] - m[3] - m[4] + m[6],
        m[1] - m[3] - m[5] + m[6],
        m[2] - m[4] - m[5] + m[6],
        m[3] - m[6],
        m[4] - m[6],
        m[5] - m[6],
    ]
    assert all(c > 0 for c in components)
    signs = [1, 1, 1, -1, -1, -1, 1]
    v = hypothesis.crossed_variance(d, factors=3)
    total = sum(sign * x for sign, x in zip(signs, m))
    assert v.variance == pytest.approx(total / (S * D * N))
    assert v.fixed_variance == pytest.approx(components[2] / (S * D) / N)  # s2_E / N
    assert v.df == 2  # the smaller factor's levels - 1
    assert v.variance == pytest.approx(v.trial_variance / (S * D) + v.fixed_variance)
    # two factors are the trials x examples estimate, batch axes element-wise
    assert hypothesis.crossed_variance(np.stack([TABLE, TABLE])).variance == pytest.approx(
        [hypothesis.crossed_variance(TABLE).variance] * 2
    )


def test_a_component_that_estimates_negative_is_truncated_and_the_df_are_the_trials():
    # every trial the same up to a shift that is smaller than the interaction: MS_T < MS_TE. The trial
    # component is set to 0 and the variance falls back to MS_E / (T N) (the trials' part is MS_TE / (T N),
    # what the interaction alone gives); the df stay T - 1, where they were MS_E's N - 1
    rng = np.random.default_rng(3)
    d = rng.normal(size=(5, 200)) + rng.normal(size=200) * 3
    d -= d.mean(axis=1, keepdims=True)  # trial means equal: MS_T = 0
    v = hypothesis.crossed_variance(d)
    n_t, n_e = d.shape
    ms_e = n_t * d.mean(axis=0).var(ddof=1)
    ms_te = ((d - d.mean(axis=0)) ** 2).sum() / ((n_t - 1) * (n_e - 1))
    assert v.variance == pytest.approx(ms_e / (n_t * n_e)) and v.df == n_t - 1
    assert v.trial_variance == pytest.approx(ms_te / n_e) and v.trial_df == n_t - 1


def test_without_an_eval_set_component_the_test_is_the_paired_t_over_trial_means():
    # no example effect (MS_E < MS_TE: s2_E floored) and a trial effect: the variance is MS_T / (T N), the
    # trial means' s^2 / T, on T - 1 df: exactly the one-sample t of the trial means (the paired t)
    rng = np.random.default_rng(1)  # a draw whose MS_E falls below MS_TE
    d = (rng.random((4, 300)) < 0.7).astype(float) - (rng.random((4, 300)) < 0.68) + rng.normal(0, 0.05, (4, 1))
    v = hypothesis.crossed_variance(d)
    means = d.mean(axis=1)
    assert v.fixed_variance == 0 and v.df == 3
    assert v.variance == pytest.approx(means.var(ddof=1) / 4)
    estimate = hypothesis.Estimate(float(means.mean()), float(np.sqrt(v.variance)), 4, float(v.df))
    assert estimate.p_greater() == pytest.approx(stats.ttest_1samp(means, 0, alternative="greater").pvalue)


def test_three_agreeing_trials_do_not_claim_the_examples_df():
    # per-trial contrasts 0.074, 0.082, 0.096 on 500 examples (the case that gave p = 1e-10 on 499 df): the
    # trial component floors at 0 and the df stays near the trials' 2, so p is of the trial t's order
    rng = np.random.default_rng(0)
    rows = []
    for shift in (0.074, 0.082, 0.096):
        a = rng.random(500) < 0.8
        b = rng.random(500) < 0.8 - shift
        rows.append(a.astype(float) - b)
    d = np.array(rows)
    v = hypothesis.crossed_variance(d)
    assert v.df < 10
    means = d.mean(axis=1)
    estimate = hypothesis.Estimate(float(means.mean()), float(np.sqrt(v.variance)), 3, float(v.df))
    assert estimate.p_greater() > 1e-4


def test_the_pigeonhole_bootstrap_of_a_crossed_design_reduces_to_the_one_way_bootstrap_of_its_factors():
    # trial t of a 4 x 3 design: subset t // 3, draw t % 3. Each draw's weight is the product of its subset's
    # and its draw's multiplicities (Owen 2007), so a curve that only depends on the subset is resampled
    # exactly as a one-way bootstrap of the subsets: Var = (1/S) * mean over subsets of (a_s - mean)^2
    subsets, draws = 4, 3
    weights = hypothesis.trial_multiplicities(12, 40_000, np.random.default_rng(5), (subsets, draws))
    by_subset = weights.reshape(-1, subsets, draws)
    assert np.all(weights.sum(axis=1) == 12)
    assert np.all(by_subset == by_subset.sum(axis=2, keepdims=True) * by_subset.sum(axis=1, keepdims=True) / 12)
    a = np.array([0.1, 0.4, 0.2, 0.9])
    means = weights @ np.repeat(a, draws) / 12
    assert means.var() == pytest.approx(np.mean((a - a.mean()) ** 2) / subsets, rel=0.03)
    with pytest.raises(ValueError, match="covers 12 trials, not 9"):
        hypothesis.trial_multiplicities(9, 10, np.random.default_rng(0), (subsets, draws))


def test_f1_and_mcc_pseudo_values_give_the_leave_one_out_jackknife_variance():
    rng = np.random.default_rng(4)
    labels = rng.integers(0, 2, 60)
    predictions = np.where(rng.random(60) < 0.75, labels, 1 - labels)
    keep = np.ones(60, dtype=bool)
    for metric, reference in (("f1", f1_score), ("mcc", matthews_corrcoef)):
        left_out = []
        for n in range(60):
            keep[n] = False
            left_out.append(reference(labels[keep], predictions[keep]))
            keep[n] = True
        left_out = np.array(left_out)
        jackknife_variance = 59 / 60 * ((left_out - left_out.mean()) ** 2).sum()  # Efron & Tibshirani eq. 11.5
        pseudo = example_metric(metric).pseudo_values(predictions[None], labels)[0]
        assert pseudo.var(ddof=1) / 60 == pytest.approx(jackknife_variance)
    assert np.array_equal(example_metric("accuracy").pseudo_values(predictions, labels), predictions == labels)


def test_one_trial_has_no_interval_and_no_p():
    labels = np.array([0, 1, 1])
    estimate = hypothesis.paired_contrast(
        [(1.0, np.array([[0, 1, 1]]), np.array([1.0]))], labels, example_metric("accuracy")
    )
    assert estimate.n == 1 and all(
        math.isnan(v) for v in (*estimate.interval(), estimate.p_zero(), estimate.p_equivalent(0.1))
    )


@pytest.mark.parametrize(
    "metric, reference", [("f1", f1_score), ("mcc", matthews_corrcoef), ("accuracy", lambda y, p: np.mean(y == p))]
)
def test_metrics_under_unit_example_weights_are_sklearns(metric, reference):
    rng = np.random.default_rng(2)
    labels = rng.integers(0, 2, 300)
    predictions = np.stack([np.where(rng.random(300) < q, labels, 1 - labels) for q in (0.9, 0.7, 0.55)])
    got = example_metric(metric).weighted(predictions, labels, np.ones((1, 300)))[0]
    assert got == pytest.approx([reference(labels, p) for p in predictions])


def test_holm_by_hand_and_nan_left_out():
    # Holm 1979: sorted p 0.005, 0.01, 0.03, 0.04 times 4, 3, 2, 1, made monotone
    assert hypothesis.holm([0.01, 0.04, 0.03, 0.005, math.nan])[:4] == pytest.approx([0.03, 0.06, 0.06, 0.02])
    assert math.isnan(hypothesis.holm([0.01, math.nan])[1])


def test_exact_permutation_p_of_a_perfect_rank_order_over_four_points():
    # 24 orderings, 1 gives rho = 1 and 1 gives rho = -1: two-sided p = 2/24
    assert hypothesis.exact_permutation_p([1, 2, 3, 4], [10, 20, 30, 40]) == pytest.approx(2 / 24)


def test_one_sided_p_is_the_one_sided_t_test_at_any_bound():
    x = np.array([0.03, 0.05, 0.01, 0.04])
    estimate = hypothesis.Estimate(x.mean(), x.std(ddof=1) / 2, 4, df=3.0)
    for bound in (0.0, 0.02):
        assert estimate.p_greater(bound) == pytest.approx(stats.ttest_1samp(x, bound, alternative="greater").pvalue)
        assert estimate.p_less(bound) == pytest.approx(stats.ttest_1samp(x, bound, alternative="less").pvalue)


def test_variance_ratio_p_is_the_one_sided_f_test():
    a, b = np.array([1.0, 3.0, 5.0, 9.0]), np.array([2.0, 2.5, 3.0])
    expected = stats.f.sf(np.var(a, ddof=1) / np.var(b, ddof=1), 3, 2)
    assert hypothesis.variance_ratio_p(a, b) == pytest.approx(expected)


def test_spearman_rows_pairs_row_with_row_as_scipy():
    rng = np.random.default_rng(0)
    a, b = rng.normal(size=(20, 7)), rng.normal(size=(20, 7))
    b[3] = 1.0  # a constant row: undefined
    expected = [stats.spearmanr(x, y).statistic if np.ptp(y) else math.nan for x, y in zip(a, b)]
    np.testing.assert_allclose(hypothesis.spearman_rows(a, b), expected)


@pytest.mark.parametrize("alternative", ["two-sided", "greater", "less"])
def test_exact_spearman_p_is_scipys_permutation_test(alternative):
    x, y = np.array([0.1, 0.4, 0.2, 0.9, 0.5, 0.5]), np.array([1.0, 2.0, 2.0, 5.0, 3.0, 4.0])  # ties included
    expected = stats.permutation_test(
        (x,), lambda a: stats.spearmanr(a, y).statistic, permutation_type="pairings", alternative=alternative
    ).pvalue
    assert hypothesis.exact_spearman_p(x, y, alternative) == pytest.approx(expected)


def test_exact_spearman_p_beyond_eight_points_is_scipys_random_permutation_test_and_holds_its_size():
    # 12 points: 20,000 random pairings. A fresh seed-0 generator per pairing once made all of them the same
    # one, and p 1e-4 (or 1) for nearly any data
    rng = np.random.default_rng(5)
    x = rng.normal(size=12)
    y = x + rng.normal(size=12)
    expected = stats.permutation_test(
        (x,), lambda a, axis: hypothesis.spearman_rows(y, a), permutation_type="pairings", vectorized=True, rng=1
    ).pvalue
    assert 0.01 < expected < 0.3
    assert hypothesis.exact_spearman_p(x, y) == pytest.approx(expected, abs=4 * np.sqrt(expected / 9999))
    null = [hypothesis.exact_spearman_p(rng.normal(size=12), rng.normal(size=12)) for _ in range(400)]
    assert np.mean(np.array(null) < 0.05) < 0.05 + 3 * np.sqrt(0.05 * 0.95 / 400)


def test_bootstrap_p_and_intervals_of_draws():
    boot = hypothesis.Bootstrap(1.0, np.array([1.0] * 90 + [-1.0] * 10 + [math.nan] * 5), 12)
    assert boot.p_zero() == pytest.approx(0.2) and boot.undefined_share == pytest.approx(5 / 105)
    assert boot.p_equivalent(0.5) == pytest.approx(0.9)
    assert boot.p_beyond(0.5) == pytest.approx(1 / 101)  # no draw within the margin: floored at 1/(B+1), B = 100
    assert boot.p_greater() == pytest.approx(0.1)
    assert boot.p_less() == pytest.approx(0.9) and boot.p_less(2.0) == pytest.approx(1 / 101)


def test_bootstrap_p_is_never_below_one_over_draws_plus_one():
    boot = hypothesis.Bootstrap(1.0, np.ones(999), 10)
    assert boot.p_zero() == boot.p_greater() == pytest.approx(1 / 1000)
    assert hypothesis.holm([boot.p_zero(), 0.5])[0] > 0


def test_p_beyond_counts_both_tails():
    # est 0.11, SE 0.03, margin 0.02, df 2 -> 0.072 (one tail alone gave 0.048)
    estimate = hypothesis.Estimate(0.11, 0.03, 3, df=2.0)
    assert estimate.p_beyond(0.02) == pytest.approx(0.072, abs=5e-4)
    assert hypothesis.Estimate(-0.11, 0.03, 3, df=2.0).p_beyond(0.02) == pytest.approx(estimate.p_beyond(0.02))


def test_one_sided_p_is_half_the_two_sided_on_its_side():
    estimate = hypothesis.Estimate(0.05, 0.02, 5, df=4.0)
    assert estimate.p_greater() == pytest.approx(estimate.p_zero() / 2)
    assert hypothesis.Estimate(-0.05, 0.02, 5, df=4.0).p_greater() == pytest.approx(1 - estimate.p_zero() / 2)


def test_intersection_union_p_is_the_largest_and_undefined_with_a_unit_missing():
    assert hypothesis.intersection_union([0.01, 0.04, 0.003]) == 0.04
    assert math.isnan(hypothesis.intersection_union([0.01, math.nan]))
    assert math.isnan(hypothesis.intersection_union([]))


def test_two_sample_is_welchs_statistic_on_the_smaller_sample_s_df():
    # Welch's t statistic (scipy) with Hsu's conservative df min(n_a, n_b) - 1, element-wise over a batch
    rng = np.random.default_rng(7)
    a, b = rng.normal(0.3, 1, (4, 5)), rng.normal(0, 3, (4, 8))
    e = hypothesis.two_sample(a, b)
    welch = stats.ttest_ind(a, b, axis=1, equal_var=False)
    assert e.estimate / e.se == pytest.approx(welch.statistic) and e.df == 4
    assert e.p_greater() == pytest.approx(stats.t.sf(welch.statistic, 4))
    assert np.all(e.p_zero() > welch.pvalue)  # fewer df than Satterthwaite's: never smaller p
    assert math.isnan(hypothesis.two_sample([1.0], [2.0, 3.0]).p_greater())
