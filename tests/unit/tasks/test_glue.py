"""Tests for src/tasks/glue.py: the real GLUE files in ../shared/glue beside the clone (skipped if absent),
tiny malformed folders under tmp_path, and the hub path's failures online (its offline cache, read end to end:
tests/e2e/test_glue_hub_offline.py)."""

import re
from pathlib import Path

import pytest

from src.tasks.glue import GLUE_TASKS, GlueFormatError, GlueSplits, load_glue, read_glue_tsv, task_format
from tests.support import REPO

REAL_GLUE = REPO.parent / "shared" / "glue"

needs_real_glue = pytest.mark.skipif(
    not REAL_GLUE.is_dir(), reason=f"{REAL_GLUE} (original GLUE TSV files) not present"
)


def write_task(root: Path, folder: str, train: str | None, dev: str | None) -> Path:
    d = root / folder
    d.mkdir(parents=True)
    if train is not None:
        (d / "train.tsv").write_text(train, encoding="utf-8")
    if dev is not None:
        (d / "dev.tsv").write_text(dev, encoding="utf-8")
    return root


def raises(match: str):
    return pytest.raises(GlueFormatError, match=re.escape(match))


# --- real files -----------------------------------------------------------------------


@needs_real_glue
@pytest.mark.parametrize(
    "task, n_train, n_dev, labels",
    [
        ("sst2", 67349, 872, {0, 1}),
        ("cola", 8551, 1043, {0, 1}),
        ("mrpc", 3668, 408, {0, 1}),
        ("rte", 2490, 277, {0, 1}),
        ("wnli", 635, 71, {0, 1}),
    ],
)
def test_real_tasks(task, n_train, n_dev, labels):
    s = load_glue(task, REAL_GLUE)
    fields = list(GLUE_TASKS[task].text_fields)
    for df, n in ((s.train, n_train), (s.eval, n_dev)):
        assert list(df.columns) == fields + ["label"]
        assert len(df) == n
        assert str(df["label"].dtype) == "int64"
        assert set(df["label"]) == labels
    assert s.eval_source == "dev" and s.note == ""


@needs_real_glue
def test_real_label_mapping_matches_hf():
    # Label counts from PROVENANCE.tsv; HF maps entailment=0, not_entailment=1.
    rte = load_glue("rte", REAL_GLUE)
    assert rte.train["label"].value_counts().to_dict() == {0: 1249, 1: 1241}
    sst2 = load_glue("sst2", REAL_GLUE)
    assert sst2.train["label"].value_counts().to_dict() == {1: 37569, 0: 29780}
    # First rows, checking column order, BOM handling and quotes kept verbatim.
    mrpc = load_glue("mrpc", REAL_GLUE)
    assert mrpc.eval.loc[0, "sentence2"].startswith('" The foodservice pie business')
    assert mrpc.eval.loc[0, "label"] == 1
    cola = load_glue("cola", REAL_GLUE)
    assert cola.eval.loc[0, "sentence"] == "The sailors rode the breeze clear of the rocks."


@needs_real_glue
def test_real_qnli_needs_carving():
    with raises("QNLI/train.tsv not found") as e:
        load_glue("qnli", REAL_GLUE)
    assert "carve_train_from_dev=True" in str(e.value)


@needs_real_glue
def test_real_qnli_carved():
    s = load_glue("qnli", REAL_GLUE, carve_train_from_dev=True, eval_fraction=0.5, seed=0)
    assert list(s.train.columns) == ["question", "sentence", "label"]
    assert len(s.train) + len(s.eval) == 5463
    assert abs(len(s.train) - len(s.eval)) <= 1
    # QNLI dev has no duplicate (question, sentence) pairs, so rows can be keyed by text.
    dev = read_glue_tsv(REAL_GLUE / "QNLI" / "dev.tsv", GLUE_TASKS["qnli"])
    rows = lambda df: set(df.itertuples(index=False, name=None))  # noqa: E731
    assert not rows(s.train) & rows(s.eval)
    assert rows(s.train) | rows(s.eval) == rows(dev) and len(rows(dev)) == 5463
    assert s.eval_source == "dev rows not used for train (train carved from dev, seed 0)"
    assert "train = 2732 of 5463 dev rows" in s.note
    assert set(s.train["label"]) == set(s.eval["label"]) == {0, 1}


# --- carving on a tiny folder (no real data needed) ------------------------------------


def tiny_rte(tmp_path, n=20):
    rows = "".join(f"{i}\tpremise {i}\thypothesis {i}\tentailment\n" for i in range(n))
    return write_task(tmp_path, "RTE", None, "index\tsentence1\tsentence2\tlabel\n" + rows)


def test_carve_is_seeded_and_partitions_dev(tmp_path):
    root = tiny_rte(tmp_path)
    a = load_glue("rte", root, carve_train_from_dev=True, eval_fraction=0.25, seed=3)
    b = load_glue("rte", root, carve_train_from_dev=True, eval_fraction=0.25, seed=3)
    c = load_glue("rte", root, carve_train_from_dev=True, eval_fraction=0.25, seed=4)
    assert isinstance(a, GlueSplits)
    assert (len(a.train), len(a.eval)) == (15, 5)
    assert a.train.equals(b.train) and a.eval.equals(b.eval)
    assert not a.eval.equals(c.eval)
    assert sorted(a.train["sentence1"].tolist() + a.eval["sentence1"].tolist()) == sorted(
        f"premise {i}" for i in range(20)
    )
    assert "seed 3" in a.eval_source


def test_carve_rejects_bad_fraction(tmp_path):
    with raises("eval_fraction must be in (0, 1), got 1.0"):
        load_glue("rte", tiny_rte(tmp_path), carve_train_from_dev=True, eval_fraction=1.0)


# --- STS-B and CRLF/BOM variants (no real STS-B folder here) ---------------------------

STSB_HEADER = "index\tgenre\tfilename\tyear\told_index\tsource1\tsource2\tsentence1\tsentence2\tscore\n"


def stsb_row(i, s1="A man plays.", s2="A man is playing.", score="4.250"):
    return f"{i}\tmain-captions\tMSRvid\t2012test\t0001\tnone\tnone\t{s1}\t{s2}\t{score}\n"


def test_stsb_float_labels(tmp_path):
    root = write_task(
        tmp_path,
        "STS-B",
        STSB_HEADER + stsb_row(0) + stsb_row(1, score="0"),
        STSB_HEADER + stsb_row(0, score="5.000"),
    )
    s = load_glue("stsb", root)
    assert list(s.train.columns) == ["sentence1", "sentence2", "label"]
    assert str(s.train["label"].dtype) == "float64"
    assert s.train["label"].tolist() == [4.25, 0.0]
    assert s.eval["label"].tolist() == [5.0]


def test_crlf_bom_and_quotes(tmp_path):
    hdr = "\ufeffQuality\t#1 ID\t#2 ID\t#1 String\t#2 String\r\n"
    row = '1\t1\t2\tHe said " hi .\tShe said "bye" .\r\n'
    s = load_glue("mrpc", write_task(tmp_path, "MRPC", hdr + row, hdr + row))
    assert s.train.loc[0, "sentence1"] == 'He said " hi .'
    assert s.train.loc[0, "sentence2"] == 'She said "bye" .'


# --- clear errors ---------------------------------------------------------------------

SST2_OK = "sentence\tlabel\ngood movie\t1\nbad movie\t0\n"


def test_unknown_task():
    with pytest.raises(ValueError, match="unknown GLUE task 'mnli'; known tasks: sst2, "):
        load_glue("mnli", "/nonexistent")


def test_missing_glue_dir(tmp_path):
    with raises(f"GLUE folder {tmp_path / 'nope'} does not exist"):
        load_glue("sst2", tmp_path / "nope")


def test_missing_task_folder(tmp_path):
    with raises(f"task folder {tmp_path / 'SST-2'} not found"):
        load_glue("sst2", tmp_path)


def test_missing_train(tmp_path):
    write_task(tmp_path, "SST-2", None, SST2_OK)
    with raises(f"{tmp_path / 'SST-2' / 'train.tsv'} not found") as e:
        load_glue("sst2", tmp_path)
    assert (
        "add 'sst2' to data.glue_carve_train_from_dev in params.yaml (carve_train_from_dev=True) "
        "to carve train/eval out of dev" in str(e.value)
    )


def test_missing_dev(tmp_path):
    write_task(tmp_path, "SST-2", SST2_OK, None)
    with raises(f"{tmp_path / 'SST-2' / 'dev.tsv'} not found"):
        load_glue("sst2", tmp_path)


def test_wrong_column_count(tmp_path):
    write_task(tmp_path, "SST-2", SST2_OK + "stray\ttab\t1\n", SST2_OK)
    with raises(f"{tmp_path / 'SST-2' / 'train.tsv'}, line 4: expected 2 tab-separated columns, found 3"):
        load_glue("sst2", tmp_path)


def test_wrong_column_count_headerless_cola(tmp_path):
    good = "gj04\t1\t\tFine sentence.\n"
    write_task(tmp_path, "CoLA", good, good + "gj04\t1\tFine sentence.\n")
    with raises(f"{tmp_path / 'CoLA' / 'dev.tsv'}, line 2: expected 4 tab-separated columns, found 3"):
        load_glue("cola", tmp_path)


def test_bad_header(tmp_path):
    write_task(tmp_path, "SST-2", "text\tlabel\ngood\t1\n", SST2_OK)
    with raises(
        f"{tmp_path / 'SST-2' / 'train.tsv'}, line 1: unexpected header "
        "['text', 'label']; expected exactly ['sentence', 'label']"
    ):
        load_glue("sst2", tmp_path)


def test_stsb_header_missing_score(tmp_path):
    hdr = STSB_HEADER.replace("\tscore", "\tsimilarity")
    write_task(tmp_path, "STS-B", hdr + stsb_row(0), hdr + stsb_row(0))
    with raises("line 1: unexpected header") as e:
        load_glue("stsb", tmp_path)
    assert "expected at least the columns ['sentence1', 'sentence2', 'score']" in str(e.value)


def test_unknown_label(tmp_path):
    dev = "index\tsentence1\tsentence2\tlabel\n0\ta\tb\tentailment\n1\ta\tb\tcontradiction\n"
    write_task(tmp_path, "RTE", dev, dev)
    with raises(
        f"{tmp_path / 'RTE' / 'train.tsv'}, line 3: unknown label 'contradiction'; "
        "allowed values: entailment, not_entailment"
    ):
        load_glue("rte", tmp_path)


def test_unknown_binary_label(tmp_path):
    write_task(tmp_path, "SST-2", SST2_OK, SST2_OK + "meh\t2\n")
    with raises(f"{tmp_path / 'SST-2' / 'dev.tsv'}, line 4: unknown label '2'; allowed values: 0, 1"):
        load_glue("sst2", tmp_path)


def test_empty_text(tmp_path):
    dev = "index\tquestion\tsentence\tlabel\n0\tWhy?\t \tentailment\n"
    write_task(tmp_path, "QNLI", dev, dev)
    with raises(f"{tmp_path / 'QNLI' / 'train.tsv'}, line 2: empty text field 'sentence'"):
        load_glue("qnli", tmp_path)


def test_stsb_non_numeric_score(tmp_path):
    write_task(tmp_path, "STS-B", STSB_HEADER + stsb_row(0), STSB_HEADER + stsb_row(0) + stsb_row(1, score="high"))
    with raises(f"{tmp_path / 'STS-B' / 'dev.tsv'}, line 3: STS-B score 'high' is not a number"):
        load_glue("stsb", tmp_path)


def test_stsb_score_out_of_range(tmp_path):
    write_task(tmp_path, "STS-B", STSB_HEADER + stsb_row(0, score="7"), STSB_HEADER + stsb_row(0))
    with raises("line 2: STS-B score '7' is outside [0, 5]"):
        load_glue("stsb", tmp_path)


def test_empty_file(tmp_path):
    write_task(tmp_path, "SST-2", "sentence\tlabel\n", SST2_OK)
    with raises(f"{tmp_path / 'SST-2' / 'train.tsv'}: no data rows"):
        load_glue("sst2", tmp_path)


# --- hub path -------------------------------------------------------------------------


def test_hub_unreachable_fails_at_once(monkeypatch):
    datasets = pytest.importorskip("datasets")
    monkeypatch.setattr(datasets.config, "HF_HUB_OFFLINE", False)
    monkeypatch.setattr("src.core.downloads.hub_reachable", lambda: False)
    monkeypatch.setattr(
        datasets,
        "load_dataset",
        lambda *a, **k: pytest.fail("an unreachable hub must not be asked (its client retries for ~30 s)"),
    )
    with raises("could not load nyu-mll/glue/rte: the Hugging Face hub is unreachable") as e:
        load_glue("rte", None)
    assert "set a local GLUE folder" in str(e.value)
    assert "embedded offline tasks" in str(e.value)


def test_hub_that_fails_mid_load(monkeypatch):
    datasets = pytest.importorskip("datasets")
    monkeypatch.setattr(
        datasets.config, "HF_HUB_OFFLINE", False
    )  # online: offline, see tests/e2e/test_glue_hub_offline.py
    monkeypatch.setattr("src.core.downloads.hub_reachable", lambda: True)
    calls = []

    def offline(*args, **kwargs):
        calls.append(args)
        raise ConnectionError("Couldn't reach 'nyu-mll/glue' on the Hub")

    monkeypatch.setattr(datasets, "load_dataset", offline)
    with raises("could not load nyu-mll/glue/rte: the Hugging Face hub is unreachable") as e:
        load_glue("rte", None)
    assert "set a local GLUE folder" in str(e.value)
    assert calls == [("nyu-mll/glue", "rte")]


def test_hub_conversion(monkeypatch):
    # Shape of what load_dataset returns, without the network: idx is dropped,
    # columns follow the HF text-field order, labels keep the HF ids.
    datasets = pytest.importorskip("datasets")

    def fake(path, name):
        split = datasets.Dataset.from_dict({"question": ["q?"], "sentence": ["s."], "label": [1], "idx": [0]})
        return datasets.DatasetDict({"train": split, "validation": split})

    monkeypatch.setattr(datasets, "load_dataset", fake)
    monkeypatch.setattr("src.core.downloads.hub_reachable", lambda: True)
    s = load_glue("qnli", None)
    assert list(s.train.columns) == ["question", "sentence", "label"]
    assert s.eval.loc[0, "label"] == 1 and str(s.eval["label"].dtype) == "int64"
    assert s.eval_source == "dev"


def test_non_utf8_file_names_line_and_byte_offset_bom_included(tmp_path):
    folder = write_task(tmp_path, "MRPC", None, None)
    (folder / "train.tsv").write_bytes(
        b"\xef\xbb\xbfQuality\t#1 ID\t#2 ID\t#1 String\t#2 String\n1\t1\t2\tna\xefve\tok\n"
    )
    with raises(f"{folder / 'train.tsv'}, line 2: not UTF-8 (byte 0xef at byte offset 51); GLUE files are UTF-8"):
        read_glue_tsv(folder / "train.tsv", task_format("mrpc"))
