"""A metric's chance level: the score of the best constant prediction, checked against the metric itself."""

import math

import numpy as np
import pytest

from src.claims.evidence import chance_score
from src.tasks.metrics import score, squad_scores

MRPC_DEV = np.array([1] * 279 + [0] * 129)  # GLUE MRPC's dev set: 279 of 408 pairs are paraphrases


@pytest.mark.parametrize("metric", ["accuracy", "f1", "mcc"])
@pytest.mark.parametrize("positive", [0.3, 0.684])
def test_the_chance_level_is_the_best_constant_predictions_score(metric, positive):
    labels = (np.arange(1000) < positive * 1000).astype(int)
    best = max(score((metric,), np.full(labels.size, c), labels)[metric] for c in (0, 1))
    assert chance_score(metric, labels) == pytest.approx(best)


def test_mrpcs_f1_chance_is_always_paraphrase_as_seed_004_reports_and_squads_is_always_no_answer():
    assert chance_score("f1", MRPC_DEV) == pytest.approx(0.812, abs=0.001)  # 004 §5.6: F1 0.812 at any k
    answerable = np.array([1, 0, 0, 1, 0])
    no_answer = (answerable == 0).astype(float)  # "no answer" scores 1 on an unanswerable question, 0 on the others
    assert chance_score("squad_f1", answerable) == squad_scores(no_answer, no_answer, answerable)["squad_f1"]
    assert chance_score("pearson", np.zeros(0)) == 0.0 and math.isnan(chance_score("accuracy", np.zeros(0)))
