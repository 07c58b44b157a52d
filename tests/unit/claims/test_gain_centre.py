"""The gain centre (probing.gain_centre): where a curve's gain over layer 0 arrives, on its running maximum."""

import math

import pytest

from src.claims.families.probing import gain_centre


def test_a_gain_at_the_first_layer_centres_at_1_and_at_the_last_at_l():
    assert gain_centre([0.5, 0.9, 0.9, 0.9]) == pytest.approx(1.0)
    assert gain_centre([0.5, 0.5, 0.5, 0.9]) == pytest.approx(3.0)
    assert math.isnan(gain_centre([0.6, 0.5, 0.55, 0.6]))  # no gain over layer 0


def test_a_curve_that_dips_keeps_its_centre_within_its_layers():
    # on the raw curve the steps +0.30, -0.29, +0.00 give a centre of 3 - (0.30 + 0.01) / 0.01 = -28
    centre = gain_centre([0.50, 0.80, 0.51, 0.51])
    assert 1.0 <= centre <= 3.0 and centre == pytest.approx(1.0)
