"""Span QA predictions: each question's best answer span over its windows, against the null
([CLS]) score, and the null-score threshold fitted on training data.

As HF's run_qa.py (utils_qa.postprocess_qa_predictions) and BERT's run_squad.py: a span is a
start token and an end token of the context, end >= start, at most `max_answer_tokens` long;
its score is start logit + end logit; a question's null score is the smallest [CLS] start +
end over its windows, and it is answered "no answer" when null score - best span score
exceeds the threshold. Unlike their n-best shortlist (the 20 best starts and ends), every
valid span is scored, so the best span is exact.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from src.tasks.metrics import best_over_golds
from src.tasks.splits import SpanSplit


@dataclass(frozen=True)
class Decoded:
    """Per question: the best span's text, null score - best span score (+inf where no
    window has context), and the F1 / exact match of the span and of "no answer"."""

    texts: list[str]
    answerable: np.ndarray  # int8
    null_margin: np.ndarray
    f1_span: np.ndarray
    exact_span: np.ndarray
    f1_null: np.ndarray
    exact_null: np.ndarray

    def scored(self, threshold: float) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
        """(F1, exact match, answered 'no answer') per question at this threshold."""
        no_answer = self.null_margin > threshold
        return (
            np.where(no_answer, self.f1_null, self.f1_span),
            np.where(no_answer, self.exact_null, self.exact_span),
            no_answer,
        )

    def best_null_threshold(self) -> float:
        """The threshold with the best mean F1 on these questions: the official evaluate-v2.0
        find_best_thresh (questions sorted by null margin, switched one by one from "no
        answer" to their span). Fitted on held-out training questions only; where no switch helps,
        just below the smallest margin, so every question is answered "no answer"."""
        order = np.argsort(self.null_margin, kind="stable")
        gains = np.cumsum((self.f1_span - self.f1_null)[order])
        margins = self.null_margin[order]
        if len(gains) == 0 or gains.max() <= 0:
            return float(np.nextafter(margins[0], -np.inf)) if len(margins) else 0.0
        return float(margins[int(np.argmax(gains))])


def best_span(start: np.ndarray, end: np.ndarray, in_context: np.ndarray, max_tokens: int) -> tuple[float, int, int]:
    """(score, start token, end token) of the best span of one window; score -inf if none."""
    start = np.where(in_context, start, -np.inf)
    end = np.where(in_context, end, -np.inf)
    best = (-np.inf, 0, 0)
    for width in range(min(max_tokens, len(start))):  # end = start + width
        candidates = start[: len(start) - width] + end[width:]
        i = int(np.argmax(candidates))
        if candidates[i] > best[0]:
            best = (float(candidates[i]), i, i + width)
    return best


def decode(split: SpanSplit, outputs: np.ndarray) -> Decoded:
    """`outputs`: per window of `split`, its [2, tokens] start / end logits."""
    questions = split.examples
    best_score = np.full(questions, -np.inf)
    null = np.full(questions, np.inf)
    chars = np.zeros((questions, 2), dtype=np.int64)
    for window, logits in enumerate(outputs):
        question = int(split.question_of_window[window])
        first = split.offsets[window]
        spans = split.char_spans[first : first + logits.shape[1]]
        null[question] = min(null[question], float(logits[0, 0] + logits[1, 0]))
        score, i, j = best_span(logits[0], logits[1], spans[:, 0] >= 0, split.max_answer_tokens)
        if score > best_score[question]:
            best_score[question] = score
            chars[question] = spans[i, 0], spans[j, 1]
    asked = np.unique(split.question_of_window)  # a training subset holds some questions only
    texts = [split.contexts[q][chars[q, 0] : chars[q, 1]] if np.isfinite(best_score[q]) else "" for q in asked]
    golds = [split.golds[q] for q in asked]
    span_scores = np.array([best_over_golds(g, t) for g, t in zip(golds, texts)]).reshape(-1, 2)
    null_scores = np.array([best_over_golds(g, "") for g in golds]).reshape(-1, 2)
    return Decoded(
        texts=texts,
        answerable=split.answerable[asked],
        null_margin=null[asked] - best_score[asked],
        f1_span=span_scores[:, 0],
        exact_span=span_scores[:, 1],
        f1_null=null_scores[:, 0],
        exact_null=null_scores[:, 1],
    )
