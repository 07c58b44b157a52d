"""src/stats/intervals.py: confidence intervals use the t quantile of the real n and the sample std."""

import math

import numpy as np
import pytest

from src.stats.intervals import mean_ci


def test_mean_ci_by_hand():
    mean, half, n = mean_ci([0.70, 0.80, 0.90])
    # s = 0.1 (ddof 1), t_{0.975, 2} = 4.3027: half-width = 4.3027 * 0.1 / sqrt(3)
    assert (mean, n) == (pytest.approx(0.8), 3)
    assert half == pytest.approx(4.302653 * 0.1 / math.sqrt(3), rel=1e-5)
    # not the released code's fixed t = 2.667 with ddof 0
    assert half != pytest.approx(2.667 * np.std([0.7, 0.8, 0.9]) / math.sqrt(3), rel=1e-2)


def test_single_trial_has_no_interval():
    mean, half, n = mean_ci([0.5])
    assert mean == 0.5 and math.isnan(half) and n == 1
