"""Task metrics: GLUE's official definitions, computed with scikit-learn and scipy, and SQuAD 2.0's."""

from __future__ import annotations

import math
import re
import string
from collections import Counter

import numpy as np
from scipy import stats
from sklearn.metrics import accuracy_score, f1_score, matthews_corrcoef


def score(metric_names: tuple[str, ...], predictions: np.ndarray, labels: np.ndarray) -> dict[str, float]:
    """`predictions` are class ids for classification tasks, real scores for regression."""
    functions = {
        "accuracy": lambda: accuracy_score(labels, predictions),
        "f1": lambda: f1_score(labels, predictions),
        "mcc": lambda: matthews_corrcoef(labels, predictions),
        "pearson": lambda: stats.pearsonr(predictions, labels).statistic,
        "spearman": lambda: stats.spearmanr(predictions, labels).statistic,
    }
    return {name: float(functions[name]()) for name in metric_names}


# --- SQuAD 2.0's official F1 and exact match -------------------------------------------------
# The behaviour of the official evaluate-v2.0.py (Rajpurkar et al. 2018; the same code is in
# transformers' squad_metrics.py): an answer is lower-cased, stripped of punctuation, of the
# articles a / an / the and of extra whitespace; a question's score is the best over its gold
# answers; an unanswerable question's gold is the empty string, and the empty prediction
# ("no answer") scores 1 against it and 0 against any span, and vice versa. Rewritten here,
# checked against hand-computed cases in tests/test_span_qa.py.

_ARTICLES = re.compile(r"\b(a|an|the)\b", re.UNICODE)
_PUNCTUATION = set(string.punctuation)


def normalize_answer(text: str) -> str:
    text = "".join(ch for ch in text.lower() if ch not in _PUNCTUATION)
    return " ".join(_ARTICLES.sub(" ", text).split())


def exact_match(gold: str, prediction: str) -> float:
    return float(normalize_answer(gold) == normalize_answer(prediction))


def token_f1(gold: str, prediction: str) -> float:
    gold_tokens, predicted = normalize_answer(gold).split(), normalize_answer(prediction).split()
    if not gold_tokens or not predicted:  # no answer on either side: 1 if both, else 0
        return float(gold_tokens == predicted)
    same = sum((Counter(gold_tokens) & Counter(predicted)).values())
    if same == 0:
        return 0.0
    precision, recall = same / len(predicted), same / len(gold_tokens)
    return 2 * precision * recall / (precision + recall)


def best_over_golds(golds: list[str], prediction: str) -> tuple[float, float]:
    """(F1, exact match) of one question, each the best over its gold answers. Golds that
    normalise to nothing are dropped, and a question without any has the gold '' (no answer)."""
    golds = [g for g in golds if normalize_answer(g)] or [""]
    return max(token_f1(g, prediction) for g in golds), max(exact_match(g, prediction) for g in golds)


def squad_scores(f1: np.ndarray, exact: np.ndarray, answerable: np.ndarray) -> dict[str, float]:
    """The official summary (src/tasks/registry.py SQUAD_METRICS) from per-question F1 and
    exact match, as fractions (the official script prints them x 100): over every question,
    and over the answerable (HasAns) and unanswerable (NoAns) ones; NaN for a part without
    questions."""

    def mean(values: np.ndarray) -> float:
        return float(values.mean()) if len(values) else math.nan

    has = answerable.astype(bool)
    return {
        "squad_f1": mean(f1),
        "squad_exact": mean(exact),
        "HasAns_f1": mean(f1[has]),
        "HasAns_exact": mean(exact[has]),
        "NoAns_f1": mean(f1[~has]),
        "NoAns_exact": mean(exact[~has]),
    }
