"""Task metrics, computed with scikit-learn and scipy (GLUE's official definitions)."""

from __future__ import annotations

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
