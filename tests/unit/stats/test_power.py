"""src/stats/power.py: the decision probability against statsmodels' t-test power where the eval set has no
part, against a simulation of raw trial scores that shares one eval-set offset where it has one, and the
assurance on the same eval set against its limit as the trials grow."""

import math
import time

import numpy as np
import pytest
from scipy import stats
from statsmodels.stats.power import TTestPower

from src.stats.hypothesis import Estimate
from src.stats.power import DRAWS, assurance, decision_probability

TOLERANCE = 4 * math.sqrt(0.25 / DRAWS)  # four Monte Carlo SEs of a probability


def greater(estimate):
    return estimate.p_greater()


@pytest.mark.parametrize(
    ("effect", "trials", "level"), [(0.5, 5, 0.05), (0.3, 20, 0.01), (0.8, 3, 0.05), (0, 10, 0.05)]
)
def test_without_an_eval_set_part_it_is_the_one_sample_t_tests_power(effect, trials, level):
    expected = TTestPower().power(effect_size=effect, nobs=trials, alpha=level, alternative="larger")
    assert decision_probability(greater, level, effect, 1.0, trials) == pytest.approx(expected, abs=TOLERANCE)


def test_with_an_eval_set_part_it_is_a_simulation_of_trial_scores_sharing_one_eval_set_offset():
    """Raw trial scores x_t ~ N(effect, sd^2) plus one offset ~ N(0, fixed^2) that every trial shares (the eval
    set), tested by the t on T - 1 df with SE^2 = s^2 / T + fixed^2, the test that an Estimate without an
    eval-set df is; and TOST within a margin."""
    effect, sd, fixed, trials, level, margin = 0.03, 0.04, 0.01, 6, 0.05, 0.06
    rng = np.random.default_rng(3)
    scores = rng.normal(effect, sd, (20_000, trials)) + rng.normal(0, fixed, (20_000, 1))
    se = np.sqrt(scores.var(axis=1, ddof=1) / trials + fixed**2)
    critical = stats.t.ppf(1 - level, trials - 1)
    mean = scores.mean(axis=1)
    design = Estimate(0.0, 0.0, trials, fixed_se=fixed)
    power = decision_probability(greater, level, effect, sd, trials, design)
    assert power == pytest.approx(np.mean(mean / se > critical), abs=TOLERANCE)
    within = np.mean(((mean + margin) / se > critical) & ((margin - mean) / se > critical))
    tost = decision_probability(lambda e: e.p_equivalent(margin), level, effect, sd, trials, design)
    assert tost == pytest.approx(within, abs=TOLERANCE)
    # the eval set's part lowers the power: without it the same trials decide more often
    assert decision_probability(greater, level, effect, sd, trials) > power + 0.05


def test_assurance_on_the_same_eval_set_tends_to_what_that_eval_set_allows():
    """Observed 0.01 on an eval set with SE 0.01, the trial SD nearly known (1,000 df): however many trials,
    the test reads SE 0.01, so it decides only where the effect on this eval set exceeds z(0.95) x 0.01; that
    effect is N(0.01, sd^2 / n) given the runs (the eval set's deviation is in the estimate and stays)."""
    sd, n = 0.02, 4
    observed = Estimate(0.01, math.sqrt(sd**2 / n + 0.01**2), n, n - 1.0, sd, 1000.0, 0.01)
    limit = stats.norm.sf((stats.norm.ppf(0.95) * 0.01 - 0.01) / (sd / math.sqrt(n)))
    assert assurance(greater, 0.05, observed, 1_000_000) == pytest.approx(limit, abs=TOLERANCE)
    # a few trials decide less often than that limit, and the same seed gives the same answer
    few = assurance(greater, 0.05, observed, 5)
    assert few < limit and few == assurance(greater, 0.05, observed, 5)
    assert math.isnan(assurance(greater, 0.05, Estimate(0.01, math.nan, 1), 5))  # one trial: no trial variance


def test_assurance_is_below_the_power_at_a_well_measured_effect_when_the_sd_is_uncertain():
    """At 3 trials the trial SD's scaled inverse chi-square on 2 df has a heavy upper tail: the chance that 10
    trials decide is well below the power at the observed effect and SD, which the old planner promised."""
    observed = Estimate(0.05, 0.05 / math.sqrt(3), 3, 2.0, 0.05, 2.0, 0.0)
    power = decision_probability(greater, 0.05, 0.05, 0.05, 10)
    assert power > 0.85 and assurance(greater, 0.05, observed, 10) < power - 0.2


def test_a_call_is_fast():
    observed = Estimate(0.02, 0.01, 3, 2.0, 0.015, 2.0, 0.005)
    start = time.perf_counter()
    for _ in range(10):
        assurance(lambda e: e.p_equivalent(0.03), 0.05, observed, 7)
    assert (time.perf_counter() - start) / 10 < 0.2  # about 5 ms on an idle core; 0.2 s leaves room for load
