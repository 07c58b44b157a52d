"""A condition the model cannot take is refused with a message naming the condition. Part of
the bad-input tests (unit/params/test_bad_params.py lists the others)."""

import re

import pytest

from src.conditions.condition import Condition
from tests.support import H, L

# --- conditions the model cannot take ----------------------------------------------------------


@pytest.mark.parametrize(
    "condition, message",
    [
        pytest.param(
            Condition("rt_sentiment", 10, 0, 3, scheme="window"),
            (
                "unknown scheme 'window'; allowed: progressive | "
                "block_reinit | block_preserve | single_layer | permutation | head | remove"
            ),
            id="unknown-scheme",
        ),
        pytest.param(
            Condition("rt_sentiment", 10, 0, 3, scheme="single_layer", layer=0),
            "rt_sentiment n=10 single0_e3 trial 0 does not fit a model with 6 encoder layers and 12 attention heads",
            id="layer-zero",
        ),
        pytest.param(
            Condition("rt_sentiment", 10, 0, 3, scheme="head", layer=1, head_index=0, keep_layernorm=True),
            (
                "rt_sentiment n=10 layer1_head0_keep_layernorm_e3 "
                "trial 0: the lr multiplier and keep-LayerNorm modifiers "
                "apply to schemes that reinitialise whole layers "
                "(progressive, block_reinit, block_preserve, single_layer)"
            ),
            id="modifier-on-head-scheme",
        ),
        pytest.param(
            Condition("rt_sentiment", 10, 0, 3, k=3, lr_multiplier=0.0),
            "rt_sentiment n=10 k3_lr0x_e3 trial 0: lr multiplier must be > 0",
            id="lr-multiplier-zero",
        ),
    ],
)
def test_condition_check_names_the_condition(condition, message):
    with pytest.raises(ValueError, match=re.escape(message)):
        condition.check(L, H)
