"""src/tasks/kinds.py: what each task kind says about its head, loss, predictions, collapse
rule and the compact encoding of predictions that every result stores."""

import math

import numpy as np
import pandas as pd
import pytest
import torch

from src.tasks.kinds import COLLAPSE_SHARE, KINDS, Classification, Regression, SpanQA, decode_predictions

CLASSIFICATION, REGRESSION = KINDS["classification"], KINDS["regression"]


# Every kind written out, not rebuilt from KINDS: a wrong entry (a kind under another's name, a
# flag or dtype changed) fails here.
# name: (class, label dtype, prediction dtype, resamples_examples, token_level, fits_null_threshold)
EXPECTED_KINDS = {
    "classification": (Classification, np.int64, np.int64, True, False, False),
    "regression": (Regression, np.float32, np.float32, False, False, False),
    "span_qa": (SpanQA, np.int64, object, True, True, True),
}


def test_the_registry_holds_each_kind_under_its_name():
    assert list(KINDS) == ["classification", "regression", "span_qa"]
    for name, (cls, labels, predictions, resamples, token_level, null_threshold) in EXPECTED_KINDS.items():
        kind = KINDS[name]
        assert type(kind) is cls and kind.name == name, name
        assert (kind.label_dtype, kind.prediction_dtype) == (labels, predictions), name
        assert (kind.token_level, kind.fits_null_threshold) == (token_level, null_threshold), name
        # the report resamples eval examples only where the metric is a mean over examples
        assert kind.resamples_examples == resamples, name


def test_head_outputs_one_logit_per_class_and_one_score_for_regression():
    assert CLASSIFICATION.head_outputs(2) == 2 and CLASSIFICATION.head_outputs(5) == 5
    assert REGRESSION.head_outputs(1) == 1 and REGRESSION.head_outputs(5) == 1


def test_classification_loss_is_the_mean_cross_entropy_by_hand():
    logits = torch.tensor([[2.0, 0.0, -1.0], [0.5, 0.5, 3.0]])
    labels = torch.tensor([0, 1])
    by_hand = [
        -math.log(math.exp(row[label]) / sum(math.exp(v) for v in row)) for row, label in zip(logits.tolist(), [0, 1])
    ]
    assert CLASSIFICATION.loss(logits, labels).item() == pytest.approx(sum(by_hand) / 2, rel=1e-6)
    # computed in float32 whatever the autocast dtype of the logits
    assert CLASSIFICATION.loss(logits.to(torch.bfloat16), labels).dtype == torch.float32


def test_regression_loss_is_the_mean_squared_error_of_the_single_output():
    logits = torch.tensor([[1.0], [2.5], [4.0]])  # [batch, 1] as the head gives it
    labels = torch.tensor([1.5, 2.5, 3.0])
    assert REGRESSION.loss(logits, labels).item() == pytest.approx((0.25 + 0.0 + 1.0) / 3)
    assert REGRESSION.loss(logits.to(torch.bfloat16), labels).dtype == torch.float32


def test_predict_gives_class_ids_or_scores_as_numpy():
    logits = torch.tensor([[0.1, 0.9], [2.0, -1.0], [0.0, 0.3]])
    classes = CLASSIFICATION.predict(logits)
    assert isinstance(classes, np.ndarray) and classes.tolist() == [1, 0, 1]
    scores = REGRESSION.predict(torch.tensor([[0.25], [4.5]]))
    assert isinstance(scores, np.ndarray) and scores.shape == (2,) and scores.tolist() == [0.25, 4.5]


def test_majority_share_and_the_collapse_rule():
    assert CLASSIFICATION.majority_share(np.array([0, 1, 1, 1])) == 0.75
    assert CLASSIFICATION.majority_share(np.array([2, 2, 2, 2])) == 1.0
    assert REGRESSION.majority_share(np.array([0.5, 0.5, 0.5])) is None  # scores have no classes
    assert COLLAPSE_SHARE == 0.99
    # 99 of 100 examples one class: collapsed; 98 of 100 (or 0.989) not; no classes: never
    assert CLASSIFICATION.collapsed(CLASSIFICATION.majority_share(np.array([1] * 99 + [0])))
    assert not CLASSIFICATION.collapsed(CLASSIFICATION.majority_share(np.array([1] * 98 + [0, 0])))
    assert not CLASSIFICATION.collapsed(0.989) and CLASSIFICATION.collapsed(1.0)
    assert not REGRESSION.collapsed(None)


@pytest.mark.parametrize(
    "predictions, dtype",
    [
        (np.array([0, 1, 1, 0, 1], dtype=np.int64), "int8"),
        (np.array([0, 127, 5], dtype=np.int64), "int8"),
        (np.array([3, 128], dtype=np.int64), "int16"),  # class 128 does not fit an int8
        (np.array([0, 128, 300, 7], dtype=np.int64), "int16"),
        (np.array([], dtype=np.int64), "int8"),
    ],
)
def test_class_ids_round_trip_exactly_in_the_smallest_integer_type(predictions, dtype):
    encoded = CLASSIFICATION.encode_predictions(predictions)
    assert encoded["dtype"] == dtype and set(encoded) == {"dtype", "base64"}
    decoded = decode_predictions(encoded)
    assert decoded.dtype == dtype and decoded.tolist() == predictions.tolist()


def test_regression_scores_round_trip_as_float16():
    scores = np.array([0.0, 1.2345, 4.999, 2.5, -0.75], dtype=np.float32)
    encoded = REGRESSION.encode_predictions(scores)
    decoded = decode_predictions(encoded)
    assert encoded["dtype"] == "float16" and decoded.dtype == np.float16
    assert np.allclose(decoded, scores, atol=2e-3) and decoded[3] == 2.5  # float16 keeps 3 significant digits
    assert len(encoded["base64"]) == 4 * math.ceil(2 * len(scores) / 3)  # two bytes a score


def test_a_kind_sets_the_dtype_of_the_labels_it_tokenises(tiny_model_dir):
    from src.data.tokens import tokenize
    from src.model.base import load_tokenizer

    tokenizer = load_tokenizer(tiny_model_dir)
    df = pd.DataFrame({"sentence": ["a good film", "bad"], "label": [4.25, 1.0]})
    assert tokenize(df, ("sentence",), REGRESSION, tokenizer, 16).labels.dtype == np.float32
    df = pd.DataFrame({"sentence": ["a good film", "bad"], "label": [1, 0]})
    assert tokenize(df, ("sentence",), CLASSIFICATION, tokenizer, 16).labels.dtype == np.int64
