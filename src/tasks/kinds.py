"""Task kinds: what training, scoring and the report need to know about a kind of label.

A kind says how many outputs the task head has, the loss, how logits become per-example
predictions, how those are stored compactly in a result, when a run counts as collapsed,
and what the report may resample. Today's kinds are classification and regression; a
new kind (extractive span QA) is one more subclass registered in KINDS.

torch is imported inside the methods that need it, so the validate stage stays cheap.
"""

from __future__ import annotations

import base64

import numpy as np

COLLAPSE_SHARE = 0.99  # a run predicting one class for >= 99% of the eval set is "collapsed"


class TaskKind:
    name: str
    label_dtype: type
    prediction_dtype: type
    resamples_examples: bool  # the report may resample eval examples (else trials only)

    def head_outputs(self, num_labels: int) -> int:
        return num_labels

    def loss(self, logits, labels):
        raise NotImplementedError

    def predict(self, logits):
        """Per-example predictions (a CPU numpy array) from a batch's logits."""
        raise NotImplementedError

    def majority_share(self, predictions: np.ndarray) -> float | None:
        """The share of the most common prediction (None where the kind has no classes)."""
        return None

    @staticmethod
    def collapsed(majority_share: float | None) -> bool:
        """The collapse rule: one class predicted for (nearly) every eval example."""
        return majority_share is not None and majority_share >= COLLAPSE_SHARE

    def encode_predictions(self, predictions: np.ndarray) -> dict:
        """Per-example predictions, compact enough to keep in every result JSON: class ids as
        int8 (or int16 beyond 127 classes), regression scores as float16, base64-encoded."""
        if np.issubdtype(predictions.dtype, np.integer):
            dtype = "int8" if predictions.max(initial=0) < 128 else "int16"
        else:
            dtype = "float16"
        return {"dtype": dtype, "base64": base64.b64encode(predictions.astype(dtype).tobytes()).decode("ascii")}


def decode_predictions(encoded: dict) -> np.ndarray:
    return np.frombuffer(base64.b64decode(encoded["base64"]), dtype=encoded["dtype"])


class Classification(TaskKind):
    name = "classification"
    label_dtype = np.int64
    prediction_dtype = np.int64
    resamples_examples = True

    def loss(self, logits, labels):
        from torch import nn

        return nn.functional.cross_entropy(logits.float(), labels)

    def predict(self, logits):
        return logits.argmax(-1).cpu().numpy()

    def majority_share(self, predictions: np.ndarray) -> float | None:
        return float(np.bincount(predictions).max() / len(predictions))


class Regression(TaskKind):
    name = "regression"
    label_dtype = np.float32
    prediction_dtype = np.float32
    resamples_examples = False  # Pearson / Spearman are not means over examples

    def head_outputs(self, num_labels: int) -> int:
        return 1

    def loss(self, logits, labels):
        from torch import nn

        return nn.functional.mse_loss(logits.squeeze(-1).float(), labels.float())

    def predict(self, logits):
        return logits.squeeze(-1).cpu().numpy()


KINDS: dict[str, TaskKind] = {kind.name: kind for kind in (Classification(), Regression())}
