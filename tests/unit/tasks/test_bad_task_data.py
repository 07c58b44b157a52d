"""Bad task data (the embedded tasks' neutral band and eval size) is refused with a message
naming the params key and what is allowed. Part of the bad-input tests
(unit/params/test_bad_params.py lists the others)."""

import re

import pandas as pd
import pytest

from src.core.errors import ParamsError


def test_a_neutral_band_that_keeps_one_sign_only_names_neutral_band():
    from src.tasks.embedded import rt_sentiment

    sentences = pd.DataFrame({"sentence": ["a", "b", "c"], "rating": [3.5, 1.0, -2.0]})
    with pytest.raises(
        ParamsError,
        match=re.escape(
            "params.yaml: data.neutral_band = 3.0 is invalid; "
            "allowed: a band that keeps sentences of both signs "
            "(it keeps 1 of 3)"
        ),
    ):
        rt_sentiment(sentences, 3.0)


def test_an_eval_size_that_leaves_no_training_data_names_eval_size():
    from src.tasks.embedded import split_eval

    with pytest.raises(
        ParamsError,
        match=re.escape("params.yaml: data.eval_size = 3 is invalid; allowed: fewer than the task's 3 examples"),
    ):
        split_eval(pd.DataFrame({"sentence": ["a", "b", "c"], "label": [0, 1, 0]}), 3, 0)
