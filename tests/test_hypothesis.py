"""src/stats/hypothesis.py: the hand-written statistics against the textbook cases they reduce to (scipy, statsmodels,
sklearn, or a formula), and the library-backed ones against known values."""

import math

import numpy as np
import pytest
from scipy import stats
from sklearn.metrics import f1_score, matthews_corrcoef
from statsmodels.stats.weightstats import ttost_paired

from src.stats import hypothesis

TRIAL_SCORES_A = np.array([0.80, 0.85, 0.75, 0.90, 0.82])
DIFFERENCES = np.array([0.10, 0.15, 0.05, 0.20, 0.12])


def contrast_without_example_noise(resamples=40_000):
    """A vs B whose per-trial scores are all there is (the metric path that does not resample examples)."""
    labels = np.zeros(50, dtype=int)
    blank = np.zeros((5, 50))
    terms = [(1.0, blank, TRIAL_SCORES_A), (-1.0, blank, TRIAL_SCORES_A - DIFFERENCES)]
    return hypothesis.paired_contrast(terms, labels, "pearson", resamples, seed=0)


def test_without_eval_example_variance_the_multibootstrap_is_the_paired_t_interval():
    estimate = contrast_without_example_noise()
    textbook = stats.ttest_1samp(DIFFERENCES, 0)
    low, high = estimate.interval(0.95)
    expected = textbook.confidence_interval(0.95)
    assert estimate.estimate == pytest.approx(DIFFERENCES.mean())
    assert (low, high) == (pytest.approx(expected.low, abs=2e-3), pytest.approx(expected.high, abs=2e-3))
    assert estimate.p_zero() == pytest.approx(textbook.pvalue, rel=0.05)


def test_tost_from_the_multibootstrap_is_statsmodels_paired_tost():
    estimate = contrast_without_example_noise()
    for margin in (0.1, 0.2, 0.3):
        reference = ttost_paired(TRIAL_SCORES_A, TRIAL_SCORES_A - DIFFERENCES, -margin, margin)[0]
        assert estimate.p_equivalent(margin) == pytest.approx(reference, rel=0.05, abs=1e-4)


def test_with_identical_trials_the_se_is_the_eval_bootstrap_of_paired_correctness():
    rng = np.random.default_rng(1)
    labels = rng.integers(0, 2, 400)
    a = np.where(rng.random(400) < 0.8, labels, 1 - labels)
    b = np.where(rng.random(400) < 0.6, labels, 1 - labels)
    T = 4  # every trial predicts the same: only the eval examples vary
    terms = [
        (1.0, np.tile(a, (T, 1)), np.full(T, np.mean(a == labels))),
        (-1.0, np.tile(b, (T, 1)), np.full(T, np.mean(b == labels))),
    ]
    estimate = hypothesis.paired_contrast(terms, labels, "accuracy", 20_000, seed=0)
    paired = (a == labels).astype(float) - (b == labels)
    textbook_se = paired.std(ddof=0) / math.sqrt(len(paired))  # the bootstrap SE of a mean
    assert estimate.estimate == pytest.approx(paired.mean())
    assert estimate.se == pytest.approx(textbook_se * math.sqrt(T / (T - 1)), rel=0.03)


def test_one_trial_has_no_interval_and_no_p():
    labels = np.array([0, 1, 1])
    estimate = hypothesis.paired_contrast(
        [(1.0, np.array([[0, 1, 1]]), np.array([1.0]))], labels, "accuracy", 100, seed=0
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
    got = hypothesis.example_weighted_metric(metric, predictions, labels, np.ones((1, 300)), np.zeros(3))[0]
    assert got == pytest.approx([reference(labels, p) for p in predictions])


def test_holm_by_hand_and_nan_left_out():
    # Holm 1979: sorted p 0.005, 0.01, 0.03, 0.04 times 4, 3, 2, 1, made monotone
    assert hypothesis.holm([0.01, 0.04, 0.03, 0.005, math.nan])[:4] == pytest.approx([0.03, 0.06, 0.06, 0.02])
    assert math.isnan(hypothesis.holm([0.01, math.nan])[1])


def test_exact_permutation_p_of_a_perfect_rank_order_over_four_points():
    # 24 orderings, 1 gives rho = 1 and 1 gives rho = -1: two-sided p = 2/24
    assert hypothesis.exact_permutation_p([1, 2, 3, 4], [10, 20, 30, 40]) == pytest.approx(2 / 24)


def test_planned_trials_reach_the_power_by_the_noncentral_t():
    effect, sd, alpha = 0.05, 0.06, 0.01
    n = hypothesis.trials_for_difference(effect, sd, alpha)

    def power(trials):
        shift = effect / (sd / math.sqrt(trials))
        critical = stats.t.ppf(1 - alpha / 2, trials - 1)
        return stats.nct.sf(critical, trials - 1, shift) + stats.nct.cdf(-critical, trials - 1, shift)

    assert power(n) >= 0.8 > power(n - 1)
    assert hypothesis.trials_for_difference(0.0, sd, alpha) is None


def test_planned_trials_for_equivalence_meet_their_definition():
    margin, sd, alpha = 0.05, 0.04, 0.05
    n = hypothesis.trials_for_equivalence(0.01, sd, margin, alpha)

    def enough(trials):
        return (margin - 0.01) * math.sqrt(trials) / sd >= stats.t.ppf(1 - alpha, trials - 1) + stats.t.ppf(
            0.8, trials - 1
        )

    assert enough(n) and not enough(n - 1)
    assert hypothesis.trials_for_equivalence(0.06, sd, margin, alpha) is None  # observed effect beyond the margin


def test_bootstrap_p_and_intervals_of_draws():
    boot = hypothesis.Bootstrap(1.0, np.array([1.0] * 90 + [-1.0] * 10 + [math.nan] * 5), 12)
    assert boot.p_zero() == pytest.approx(0.2) and boot.undefined_share == pytest.approx(5 / 105)
    assert boot.p_equivalent(0.5) == pytest.approx(0.9) and boot.p_beyond(0.5) == 0.0
