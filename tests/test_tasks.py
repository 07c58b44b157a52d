"""The embedded tasks, built from the pinned VADER sdist, and the task registry."""

import pandas as pd
import pytest

from src import artifacts, tasks


def test_rt_sentiment_labels_by_sign_and_drops_near_neutral():
    sentences = pd.DataFrame({"sentence": ["a", "b", "c", "d"], "rating": [2.0, -0.5, 0.79, -3.1]})
    out = tasks.rt_sentiment(sentences, neutral_band=0.8)
    assert out["sentence"].tolist() == ["a", "d"] and out["label"].tolist() == [1, 0]


def test_bigram_shift_inverts_exactly_two_adjacent_words_in_labelled_sentences():
    originals = [f"w{i} w{i + 1} w{i + 2} w{i + 3} w{i + 4}" for i in range(400)]
    out = tasks.bigram_shift(pd.DataFrame({"sentence": originals + ["same same"]}), seed=0)
    assert len(out) == 400  # "same same" cannot be shifted
    assert 150 < out["label"].sum() < 250
    for original, (shifted, label) in zip(originals, out.itertuples(index=False)):
        a, b = original.split(), shifted.split()
        diff = [i for i in range(len(a)) if a[i] != b[i]]
        assert (diff == []) if label == 0 else (len(diff) == 2 and diff[1] == diff[0] + 1 and a[diff[0]] == b[diff[1]])


def test_real_rt_sentences_from_the_pinned_sdist():
    sentences = tasks.read_rt_sentences(artifacts.fetch(artifacts.VADER_SDIST))
    assert len(sentences) == 10603  # 10,605 lines, two sentences duplicated
    assert sentences["rating"].between(-4, 4).all()
    train, eval_, note = tasks.build_embedded("rt_sentiment", eval_size=500, neutral_band=0.8, seed=0)
    assert (len(train), len(eval_)) == (9110, 500)
    assert not set(train["sentence"]) & set(eval_["sentence"])
    assert "|mean rating| >= 0.8" in note


def test_sha256_mismatch_is_refused(tmp_path, monkeypatch):
    monkeypatch.setenv("TRANSFER_CACHE", str(tmp_path))
    (tmp_path / "pypi").mkdir()
    (tmp_path / "pypi" / artifacts.VADER_SDIST.filename).write_bytes(b"not the real file")
    with pytest.raises(artifacts.ArtifactError, match=r"vaderSentiment-3.3.2.tar.gz: sha256 \w+ does not match the pinned 5d7c06e0"):
        artifacts.fetch(artifacts.VADER_SDIST)


def test_missing_package_file_is_named():
    with pytest.raises(artifacts.ArtifactError, match="has no file vaderSentiment-3.3.2/nope.txt"):
        artifacts.read_member(artifacts.fetch(artifacts.VADER_SDIST), "vaderSentiment-3.3.2/nope.txt")


def test_unknown_task_lists_the_known_ones():
    with pytest.raises(ValueError, match="unknown task 'sst5'; known tasks: rt_sentiment, bigram_shift, sst2"):
        tasks.get_task("sst5")


def test_registry_metrics_follow_glue():
    assert tasks.get_task("cola").metrics[0] == "mcc"
    assert tasks.get_task("mrpc").metrics == ("f1", "accuracy")
    stsb = tasks.get_task("stsb")
    assert (stsb.label_kind, stsb.num_labels, stsb.metrics) == ("regression", 1, ("pearson", "spearman"))
