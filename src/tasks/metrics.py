"""Task metrics: GLUE's official definitions, computed with scikit-learn and scipy, and SQuAD 2.0's;
and the same metrics as functions of the eval examples (ExampleMetric), which the report's tests
resample."""

from __future__ import annotations

import math
import re
import string
from collections import Counter
from dataclasses import dataclass

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
# checked against hand-computed cases in tests/unit/tasks/test_span_qa.py.

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


# --- the metrics as functions of the eval examples ---------------------------------------------
# What the report's tests resample: src/stats/hypothesis.py imports nothing from the project, so
# its callers pass one of these. Accuracy, F1 and MCC (binary) are functions of the confusion
# counts, SQuAD F1 a mean over questions: under a bootstrap draw of the eval examples each is
# computed from weighted counts (or a weighted mean), with the same definitions as `score` and
# `squad_scores` above, and its example-jackknife pseudo-values linearise it. Regression
# correlations are not resampled over examples (example_metric gives None).


def _from_confusion(name: str, tp, fp, fn, tn) -> np.ndarray:
    """F1 or MCC from (weighted) confusion counts, elementwise; sklearn's convention: 0 where undefined."""
    with np.errstate(invalid="ignore", divide="ignore"):
        if name == "f1":
            value = 2 * tp / (2 * tp + fp + fn)
        else:
            value = (tp * tn - fp * fn) / np.sqrt((tp + fp) * (tp + fn) * (tn + fp) * (tn + fn))
    return np.nan_to_num(value, nan=0.0)


def _confusion(predictions: np.ndarray, labels: np.ndarray) -> tuple[np.ndarray, ...]:
    """Per-example indicators (tp, fp, fn, tn), each shaped like `predictions` (binary labels)."""
    positive, truth = (predictions == 1).astype(float), (labels == 1).astype(float)
    return positive * truth, positive * (1 - truth), (1 - positive) * truth, (1 - positive) * (1 - truth)


@dataclass(frozen=True)
class ExampleMetric:
    """A metric of the eval examples, as src/stats/hypothesis.py resamples it (its ExampleMetric
    protocol). `predictions` are class ids, or for span QA each question's F1."""

    name: str  # accuracy | f1 | mcc | squad_f1

    def weighted(self, predictions: np.ndarray, labels: np.ndarray, example_counts: np.ndarray) -> np.ndarray:
        """The metric of every trial (rows of `predictions`, [T, N]) under each bootstrap draw's
        example multiplicities (`example_counts`, [B, N]): [B, T]. Accuracy, F1 and MCC from
        weighted counts, SQuAD F1 as the weighted mean of per-question F1."""
        if self.name == "accuracy":
            return example_counts @ (predictions == labels).T.astype(float) / labels.size
        if self.name == "squad_f1":  # span QA: the stored predictions are each question's F1, the metric their mean
            return example_counts @ predictions.T.astype(float) / labels.size
        return _from_confusion(self.name, *(example_counts @ c.T for c in _confusion(predictions, labels)))

    def pseudo_values(self, predictions: np.ndarray, labels: np.ndarray) -> np.ndarray:
        """Example-jackknife pseudo-values N*m_t - (N-1)*m_t(-n) of each trial's metric m_t
        ([..., T, N] for predictions [..., T, N]): their mean over examples is the metric's
        jackknife estimate and their spread its example variance (Tukey 1958). For accuracy
        they are exactly the per-example correctness, so a variance computed from them is the
        textbook one; for F1 and MCC they linearise the metric around the trial's counts."""
        if self.name == "accuracy":
            return (predictions == labels).astype(float)
        if self.name == "squad_f1":  # a mean over questions of the stored per-question F1
            return predictions.astype(float)
        counts = _confusion(predictions, labels)
        totals = [c.sum(axis=-1, keepdims=True) for c in counts]
        n = labels.shape[-1]
        whole = _from_confusion(self.name, *totals)
        left_out = _from_confusion(self.name, *(t - c for t, c in zip(totals, counts)))
        return n * whole - (n - 1) * left_out


EXAMPLE_METRICS = {name: ExampleMetric(name) for name in ("accuracy", "squad_f1", "f1", "mcc")}


def example_metric(name: str) -> ExampleMetric | None:
    """The ExampleMetric of the metric `name`; None for a metric the tests do not resample over
    the eval examples (regression correlations, or no per-example predictions): its tests
    resample the trials alone."""
    return EXAMPLE_METRICS.get(name)
