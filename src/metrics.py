"""Task metrics, computed with scikit-learn and scipy (GLUE's official definitions)."""

from __future__ import annotations

import base64

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


def encode_predictions(predictions: np.ndarray) -> dict:
    """Per-example predictions, compact enough to keep in every result JSON: class ids as
    int8 (or int16 beyond 127 classes), regression scores as float16, base64-encoded."""
    if np.issubdtype(predictions.dtype, np.integer):
        dtype = "int8" if predictions.max(initial=0) < 128 else "int16"
    else:
        dtype = "float16"
    return {"dtype": dtype, "base64": base64.b64encode(predictions.astype(dtype).tobytes()).decode("ascii")}


def decode_predictions(encoded: dict) -> np.ndarray:
    return np.frombuffer(base64.b64decode(encoded["base64"]), dtype=encoded["dtype"])
