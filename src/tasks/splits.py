"""Tokenised splits as stored in data/tasks/<task>/tokens.npz (one writer, one reader).

A task is tokenised once (in the data stage, src/data/tokens.py) and saved as flat arrays;
every condition then reads the same token ids. Read with numpy alone, so the report can read
a task's eval labels without torch."""

from __future__ import annotations

import json
from dataclasses import dataclass
from pathlib import Path

import numpy as np


@dataclass
class TokenizedSplit:
    """Ragged token sequences stored flat: example i is ids[offsets[i]:offsets[i+1]]."""

    ids: np.ndarray  # int32
    type_ids: np.ndarray  # int8, segment A/B for sentence pairs
    offsets: np.ndarray  # int64, len = n + 1
    labels: np.ndarray  # int64 (classes) or float32 (scores)
    pad_id: int  # the tokenizer's padding id: the tokens carry it, so no stage loads a tokenizer to batch them

    def __len__(self) -> int:
        return len(self.offsets) - 1

    @property
    def lengths(self) -> np.ndarray:
        return np.diff(self.offsets)

    @property
    def examples(self) -> int:
        """Examples a training size counts (one sequence each here; a question's windows in SpanSplit)."""
        return len(self)

    @property
    def example_labels(self) -> np.ndarray:
        """One label per example, what the report resamples against."""
        return self.labels

    def of_examples(self, examples: np.ndarray) -> TokenizedSplit:
        """The sequences of these examples (a training subset)."""
        return self.subset(examples)

    def _tokens_of(self, indices: np.ndarray) -> np.ndarray:
        return (
            np.concatenate([np.arange(self.offsets[i], self.offsets[i + 1]) for i in indices])
            if len(indices)
            else np.zeros(0, dtype=np.int64)
        )

    def subset(self, indices: np.ndarray) -> TokenizedSplit:
        lengths = self.lengths[indices]
        offsets = np.concatenate([[0], np.cumsum(lengths)])
        take = self._tokens_of(indices)
        return TokenizedSplit(self.ids[take], self.type_ids[take], offsets, self.labels[indices], self.pad_id)


@dataclass
class SpanSplit(TokenizedSplit):
    """Extractive QA: each sequence is one window (question + a stretch of its context), and
    an example is a question with all its windows. `labels` is [windows, 3]: the answer's
    start and end token in the window ([CLS] = 0 for both when the window does not hold the
    whole answer, or the question has none) and the question's index. `char_spans` maps
    every token to its characters in the context ([-1, -1] for question and special tokens)."""

    char_spans: np.ndarray  # int32 [tokens, 2]
    contexts: list[str]
    golds: list[list[str]]  # gold answer texts per question ([] = unanswerable)
    max_answer_tokens: int = 0  # the longest span a prediction may take (a task setting: in tokens.npz)

    @property
    def examples(self) -> int:
        return len(self.contexts)

    @property
    def question_of_window(self) -> np.ndarray:
        return self.labels[:, 2]

    @property
    def answerable(self) -> np.ndarray:
        return np.array([bool(g) for g in self.golds], dtype=np.int8)

    @property
    def example_labels(self) -> np.ndarray:
        return self.answerable

    def of_examples(self, examples: np.ndarray) -> SpanSplit:
        return self.subset(np.flatnonzero(np.isin(self.question_of_window, examples)))

    def subset(self, indices: np.ndarray) -> SpanSplit:
        windows = super().subset(indices)  # question indices in labels still refer to every question
        spans = self.char_spans[self._tokens_of(indices)]
        return SpanSplit(
            **vars(windows),
            char_spans=spans,
            contexts=self.contexts,
            golds=self.golds,
            max_answer_tokens=self.max_answer_tokens,
        )


def save_splits(path: Path, splits: dict[str, TokenizedSplit]) -> None:
    arrays = {
        f"{name}.{field}": np.asarray(getattr(split, field))
        for name, split in splits.items()
        for field in TokenizedSplit.__dataclass_fields__
    }
    for name, split in splits.items():
        if isinstance(split, SpanSplit):  # texts as UTF-8 JSON bytes: no pickled objects in the file
            arrays[f"{name}.char_spans"] = split.char_spans
            texts = {"contexts": split.contexts, "golds": split.golds, "max_answer_tokens": split.max_answer_tokens}
            arrays[f"{name}.span_texts"] = np.frombuffer(json.dumps(texts).encode(), dtype=np.uint8)
    np.savez(path, allow_pickle=False, **arrays)  # numbers only: the file loads without pickle


def load_split(path: Path, name: str) -> TokenizedSplit:
    with np.load(path) as z:
        fields = {field: z[f"{name}.{field}"] for field in TokenizedSplit.__dataclass_fields__}
        fields["pad_id"] = int(fields["pad_id"])
        if f"{name}.char_spans" not in z.files:
            return TokenizedSplit(**fields)
        texts = json.loads(z[f"{name}.span_texts"].tobytes().decode())
        return SpanSplit(**fields, char_spans=z[f"{name}.char_spans"], **texts)
