"""Tokenised splits, training subsets and padded batches.

A task is tokenised once (in the data stage) and saved as flat arrays; every
condition then reads the same token ids, so no condition re-tokenises and no two
conditions can disagree about the text.
"""

from __future__ import annotations

from collections import Counter
from dataclasses import dataclass

import numpy as np
import pandas as pd
import torch

from src.core.errors import ParamsError
from src.core.seeds import derive_seed
from src.tasks.kinds import TaskKind
from src.tasks.splits import SpanSplit, TokenizedSplit


def tokenize(
    df: pd.DataFrame, text_fields: tuple[str, ...], kind: TaskKind, tokenizer, max_length: int
) -> TokenizedSplit:
    columns = [df[field].tolist() for field in text_fields]
    encoded = tokenizer(*columns, truncation=True, max_length=max_length, return_token_type_ids=True)
    lengths = [len(x) for x in encoded["input_ids"]]
    return TokenizedSplit(
        ids=np.concatenate(encoded["input_ids"]).astype(np.int32),
        type_ids=np.concatenate(encoded["token_type_ids"]).astype(np.int8),
        offsets=np.concatenate([[0], np.cumsum(lengths)]).astype(np.int64),
        labels=df["label"].to_numpy().astype(kind.label_dtype),
        pad_id=tokenizer.pad_token_id,
    )


@dataclass(frozen=True)
class UnknownWords:
    """How much of a text a tokenizer cannot spell: words (as its own pre-tokenizer splits
    them) with a piece mapped to the unknown token."""

    words: int
    unknown: int
    examples: tuple[str, ...]  # the most frequent unknown words

    @property
    def rate(self) -> float:
        return self.unknown / self.words if self.words else 0.0


def unknown_words(texts: list[str], tokenizer, examples: int = 5) -> UnknownWords:
    """The [UNK] words of `texts`. A tokenizer without an unknown token (byte-level BPE:
    RoBERTa, ModernBERT) spells every word, so its count is 0."""
    encoded = tokenizer(list(texts), add_special_tokens=False)
    unk = tokenizer.unk_token_id
    found: Counter[str] = Counter()
    words = 0
    for i, encoding in enumerate(encoded.encodings):
        word_ids = encoding.word_ids
        words += word_ids[-1] + 1 if word_ids else 0  # one sequence: its words are numbered 0, 1, ...
        if unk is None or unk not in encoding.ids:
            continue
        for word in sorted({w for w, token in zip(word_ids, encoding.ids) if token == unk}):
            start, end = encoding.word_to_chars(word)
            found[texts[i][start:end]] += 1
    return UnknownWords(words, sum(found.values()), tuple(word for word, _ in found.most_common(examples)))


def tokenize_spans(df: pd.DataFrame, tokenizer, max_length: int, stride: int, max_answer_tokens: int) -> SpanSplit:
    """(question, context) pairs cut into windows of at most `max_length` tokens, consecutive
    windows of a context overlapping by `stride` tokens (the approach of HF's run_qa.py, with
    the fast tokenizer's offset mappings). `df` has question, context, answers (the gold
    texts, [] if unanswerable) and answer_start (the first gold's character offset, -1)."""
    questions = [q.lstrip() for q in df["question"]]  # run_qa.py: leading spaces waste window room
    longest = max(len(ids) for ids in tokenizer(questions, add_special_tokens=False)["input_ids"])
    if longest + 3 + stride >= max_length:  # [CLS] q [SEP] ... [SEP]: the context must advance
        raise ParamsError(
            f"params.yaml: model.max_length = {max_length} is invalid; allowed: more than the longest question "
            f"({longest} tokens) + 3 special tokens + data.qa_stride ({stride}), so every window holds context"
        )
    encoded = tokenizer(
        questions,
        df["context"].tolist(),
        truncation="only_second",
        max_length=max_length,
        stride=stride,
        return_overflowing_tokens=True,
        return_offsets_mapping=True,
        return_token_type_ids=True,
    )
    labels, spans = [], []
    for window, question in enumerate(encoded["overflow_to_sample_mapping"]):
        in_context = np.array([s == 1 for s in encoded.sequence_ids(window)])
        offsets = np.array(encoded["offset_mapping"][window], dtype=np.int32).reshape(-1, 2)
        offsets[~in_context] = -1
        spans.append(offsets)
        start, end = 0, 0  # [CLS]: no answer in this window
        first = int(df["answer_start"].iloc[question])
        if first >= 0:
            last = first + len(df["answers"].iloc[question][0])
            starts = np.flatnonzero(in_context & (offsets[:, 0] <= first) & (offsets[:, 1] > first))
            ends = np.flatnonzero(in_context & (offsets[:, 0] < last) & (offsets[:, 1] >= last))
            if len(starts) and len(ends):  # the whole answer lies inside this window
                start, end = int(starts[0]), int(ends[-1])
        labels.append((start, end, question))
    lengths = [len(x) for x in encoded["input_ids"]]
    return SpanSplit(
        ids=np.concatenate(encoded["input_ids"]).astype(np.int32),
        type_ids=np.concatenate(encoded["token_type_ids"]).astype(np.int8),
        offsets=np.concatenate([[0], np.cumsum(lengths)]).astype(np.int64),
        labels=np.array(labels, dtype=np.int64).reshape(-1, 3),
        pad_id=tokenizer.pad_token_id,
        char_spans=np.concatenate(spans),
        contexts=df["context"].tolist(),
        golds=[list(a) for a in df["answers"]],
        max_answer_tokens=max_answer_tokens,
    )


def training_subset(pool_size: int, size: int, task: str, trial: int, seed: int) -> np.ndarray:
    """The training examples of (task, size, trial): a fresh random subset per trial (paper App. B).

    A pure function of its arguments, so every k of the same trial trains on the same
    examples (paired comparisons across k), and a condition run alone on another
    machine draws exactly the same subset.
    """
    if size > pool_size:
        raise ValueError(f"training size {size} is larger than the {pool_size} training examples of task {task!r}")
    rng = np.random.default_rng(subset_seed(seed, task, size, trial))
    return np.sort(rng.choice(pool_size, size=size, replace=False))


def subset_seed(seed: int, task: str, size: int, trial: int) -> int:
    """The seed training_subset draws (task, size, trial)'s examples with: what a result records."""
    return derive_seed(seed, "subset", task, size, trial)


def held_out_subset(pool_size: int, subset: np.ndarray, task: str, trial: int, seed: int) -> np.ndarray:
    """Training-pool examples that (task, size, trial) does not train on, as many as it trains on
    (all that are left where fewer are): what span QA fits its no-answer threshold on, so the fit
    is out of sample, as the official evaluation's and seed 004's. A pure function of its
    arguments, like the subset. Empty when the subset is the whole pool."""
    rest = np.setdiff1d(np.arange(pool_size), subset)
    rng = np.random.default_rng(derive_seed(seed, "held_out", task, len(subset), trial))
    return np.sort(rng.choice(rest, size=min(len(rest), len(subset)), replace=False))


def batches(
    lengths: np.ndarray, batch_size: int, generator: np.random.Generator | None, group_by_length: bool = False
) -> list[np.ndarray]:
    """Index batches.

    Evaluation (no generator): sorted by length, so batches pad little and the order
    never changes the scores. Training: shuffled; with `group_by_length`, each chunk of
    50 batches is sorted by length before cutting and the batches are shuffled again
    (HF's group_by_length). Random batches of 8 RT sentences pad to ~1.6x their real
    tokens; grouped ones to almost none, and CPU time is about linear in tokens.
    """
    if generator is None:
        order = np.argsort(lengths, kind="stable")
        return [order[i : i + batch_size] for i in range(0, len(order), batch_size)]
    order = generator.permutation(len(lengths))
    if not group_by_length:
        return [order[i : i + batch_size] for i in range(0, len(order), batch_size)]
    chunk = 50 * batch_size
    plan = []
    for start in range(0, len(order), chunk):
        part = order[start : start + chunk]
        part = part[np.argsort(-lengths[part], kind="stable")]
        plan += [part[i : i + batch_size] for i in range(0, len(part), batch_size)]
    return [plan[i] for i in generator.permutation(len(plan))]


def collate(split: TokenizedSplit, indices: np.ndarray) -> dict[str, torch.Tensor]:
    """Pad one batch to its own longest sequence (dynamic padding)."""
    lengths = split.lengths[indices]
    width = int(lengths.max())
    input_ids = np.full((len(indices), width), split.pad_id, dtype=np.int64)
    type_ids = np.zeros((len(indices), width), dtype=np.int64)
    mask = np.zeros((len(indices), width), dtype=np.int64)
    for row, (i, n) in enumerate(zip(indices, lengths)):
        start = split.offsets[i]
        input_ids[row, :n] = split.ids[start : start + n]
        type_ids[row, :n] = split.type_ids[start : start + n]
        mask[row, :n] = 1
    return {
        "input_ids": torch.from_numpy(input_ids),
        "token_type_ids": torch.from_numpy(type_ids),
        "attention_mask": torch.from_numpy(mask),
        "labels": torch.from_numpy(split.labels[indices]),
    }
