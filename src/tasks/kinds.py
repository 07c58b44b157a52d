"""Task kinds: what training, scoring and the report need to know about a kind of label.

A kind says how many outputs the task head has, the loss, how logits become per-example
predictions, how those are stored compactly in a result, when a run counts as collapsed,
and what the report may resample. The kinds are classification, regression and extractive
span QA (SQuAD 2.0: a start/end logit per token, decoded per question in src/tasks/spans.py);
a new kind is one more subclass registered in KINDS.

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
    token_level = False  # the head scores every token (span QA), not one pooled vector per sequence
    fits_null_threshold = False  # after training, a threshold is fitted on held-out training data (span QA)

    def head_outputs(self, num_labels: int) -> int:
        return num_labels

    def loss(self, logits, labels):
        raise NotImplementedError

    def predict(self, logits):
        """Per-example predictions (a CPU numpy array) from a batch's logits."""
        raise NotImplementedError

    def batch_outputs(self, logits, lengths: np.ndarray) -> np.ndarray:
        """What evaluation keeps of a batch, one entry per sequence (`lengths`: its real tokens)."""
        return self.predict(logits)

    def score(self, task, split, outputs: np.ndarray, null_threshold: float | None = None) -> dict:
        """scores (task.metrics), majority_share and the per-example predictions to store."""
        from src.tasks.metrics import score

        return {
            "scores": score(task.metrics, outputs, split.labels),
            "majority_share": self.majority_share(outputs),
            "predictions": outputs,
        }

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


class SpanQA(TaskKind):
    """Extractive QA with unanswerable questions (SQuAD 2.0). Sequences are windows of a
    question's context (src/data/tokens.py SpanSplit); the head gives each token a start and
    an end logit; labels are the answer's start and end token ([CLS] = 0 when the window has
    none). A question's prediction is its best span over its windows, or "no answer" when the
    null ([CLS]) score beats it by more than a threshold fitted on held-out training questions. The
    stored per-question prediction is its F1 (float16), so the report resamples questions;
    majority_share is the share of "no answer" predictions: collapsed like a classifier
    predicting one class."""

    name = "span_qa"
    label_dtype = np.int64
    prediction_dtype = object  # per window: [2, tokens] start / end logits
    resamples_examples = True
    token_level = True
    fits_null_threshold = True

    def head_outputs(self, num_labels: int) -> int:
        return 2  # a start and an end logit per token

    def loss(self, logits, labels):
        from torch import nn

        logits = logits.float()
        start = nn.functional.cross_entropy(logits[..., 0], labels[:, 0])
        end = nn.functional.cross_entropy(logits[..., 1], labels[:, 1])
        return (start + end) / 2  # BertForQuestionAnswering's loss

    def batch_outputs(self, logits, lengths: np.ndarray) -> np.ndarray:
        values = logits.float().cpu().numpy()
        out = np.empty(len(lengths), dtype=object)
        for row, n in enumerate(lengths):
            out[row] = values[row, :n].T  # padding dropped
        return out

    def score(self, task, split, outputs: np.ndarray, null_threshold: float | None = None) -> dict:
        from src.tasks import spans
        from src.tasks.metrics import squad_scores

        decoded = spans.decode(split, outputs)
        # Without a fitted threshold (per-epoch eval curves): HF run_qa.py's default, 0.
        f1, exact, no_answer = decoded.scored(0.0 if null_threshold is None else null_threshold)
        return {
            "scores": squad_scores(f1, exact, decoded.answerable),
            "majority_share": float(no_answer.mean()),
            "predictions": f1.astype(np.float32),
        }

    def fit_null_threshold(self, split, outputs: np.ndarray) -> float:
        from src.tasks import spans

        return spans.decode(split, outputs).best_null_threshold()


KINDS: dict[str, TaskKind] = {kind.name: kind for kind in (Classification(), Regression(), SpanQA())}
