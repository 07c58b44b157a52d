"""Probes a referee accepts: control tasks, online-code MDL, probe seeds and [CLS] pooling, on the real probe code."""

from dataclasses import replace

import numpy as np
import pandas as pd
import pytest
import torch

from src.artefacts.probe_result import ProbeLayer, ProbeResult
from src.data import tokens
from src.model.base import load_encoder
from src.model.features import layer_features, pool_layers
from src.probing.probes import control_labels, online_codelength, probe_seed
from src.results.aggregate import probe_table, progressive_curves
from src.tasks import splits
from src.tasks.registry import get_task
from src.tasks.splits import TokenizedSplit

TASK = get_task("rt_sentiment")  # binary classification, headline accuracy


def sentences(n: int, rng: np.random.Generator) -> TokenizedSplit:
    """n distinct random token sequences (the control task hashes them), lengths 5..15."""
    lengths = rng.integers(5, 16, size=n)
    ids = rng.integers(1000, 30000, size=lengths.sum()).astype(np.int32)
    offsets = np.concatenate([[0], np.cumsum(lengths)])
    return TokenizedSplit(ids, np.zeros(len(ids), np.int8), offsets, rng.integers(2, size=n), 0)


def layered_features(labels: np.ndarray, rng: np.random.Generator, signal: float = 1.5) -> np.ndarray:
    """[n, 2, 16]: layer 0 is noise, layer 1 carries the label (plus noise)."""
    x = rng.normal(size=(len(labels), 2, 16)).astype(np.float32)
    x[:, 1, :4] += signal * (2 * labels[:, None] - 1)
    return x


@pytest.fixture(autouse=True)
def one_thread():
    """As the probe stage runs them: the probes' tiny matmuls are fastest on one thread."""
    threads = torch.get_num_threads()
    torch.set_num_threads(1)
    yield
    torch.set_num_threads(threads)


@pytest.fixture
def probe(config):
    return replace(config.probe, epochs=5, lr=1e-2, train_batch_size=32, mdl_portions=(5.0, 10.0, 25.0, 50.0, 100.0))


@pytest.fixture
def data():
    rng = np.random.default_rng(0)
    splits = {"train": sentences(600, rng), "eval": sentences(300, rng)}
    labels = {name: split.labels for name, split in splits.items()}
    features = {name: layered_features(labels[name], rng) for name in splits}
    return splits, labels, features


def test_the_online_codelength_of_shuffled_labels_exceeds_that_of_true_labels(probe, data):
    _, labels, features = data
    true, uniform = online_codelength(TASK, features["train"], labels["train"], probe, seed=0)
    shuffled_labels = np.random.default_rng(1).permutation(labels["train"])
    shuffled, _ = online_codelength(TASK, features["train"], shuffled_labels, probe, seed=0)
    assert uniform == 600  # 600 binary labels: one bit each
    assert shuffled[1] > 1.5 * true[1]  # the informative layer compresses its true labels well
    assert true[1] < 0.6 * uniform and shuffled[1] > 0.9 * uniform
    assert true[0] > 0.9 * uniform  # the noise layer has nothing to compress


def test_selectivity_is_near_zero_for_a_layer_of_random_features(probe, data):
    splits, labels, features = data
    control = dict(zip(splits, control_labels(list(splits.values()), labels["train"], seed=0)))
    outcome = probe_seed(TASK, features, labels, control, probe, seed=0)
    selectivity = [s["accuracy"] - c["accuracy"] for s, c in zip(outcome.scores, outcome.control_scores)]
    assert abs(selectivity[0]) < 0.1  # random features: the task is no easier than its control
    assert selectivity[1] > 0.3  # the label-carrying layer: far more selective
    assert outcome.predictions.shape == (2, 300)


def test_control_labels_are_a_fixed_function_of_the_sentence_with_the_task_balance():
    rng = np.random.default_rng(0)
    split = sentences(2000, rng)
    balance = np.array([0] * 300 + [1] * 700)
    [labels] = control_labels([split], balance, seed=0)
    assert abs(labels.mean() - 0.7) < 0.04
    picked = np.random.default_rng(1).choice(2000, size=300)  # the same sentences, in another split and order
    [again] = control_labels([split.subset(picked)], balance, seed=0)
    assert again.tolist() == labels[picked].tolist()
    [other_seed] = control_labels([split], balance, seed=1)
    assert (other_seed != labels).mean() > 0.3


def test_probe_seeds_give_every_layer_an_interval(probe, data, tmp_path):
    splits, labels, _ = data
    rng = np.random.default_rng(2)  # a layer that carries the label less clearly: seeds disagree a little
    features = {name: layered_features(labels[name], rng, signal=0.3) for name in splits}
    control = dict(zip(splits, control_labels(list(splits.values()), labels["train"], seed=0)))
    outcomes = [probe_seed(TASK, features, labels, control, probe, seed) for seed in (0, 1, 2)]
    # the probe stage's artefact, read back by the aggregate's table
    ProbeResult(
        task="rt_sentiment",
        metric="accuracy",
        pooling="mean",
        train_examples=600,
        eval_examples=300,
        seeds=[0, 1, 2],
        mdl_portions=list(probe.mdl_portions),
        uniform_bits=outcomes[0].uniform_bits,
        layers=[
            ProbeLayer(layer, s, o.scores[layer], o.control_scores[layer], float(o.codelength_bits[layer]))
            for s, o in enumerate(outcomes)
            for layer in range(2)
        ],
    ).write(tmp_path / "rt_sentiment.json")
    table = probe_table(tmp_path, ["rt_sentiment"])
    assert len(table) == 6 and sorted(table["seed"].unique()) == [0, 1, 2]
    assert np.allclose(table["selectivity"], table["value"] - table["control"])
    assert (table["compression"] > 0).all()
    no_finetuning = pd.DataFrame(columns=["task", "size", "k", "mean", "ci_low", "ci_high", "n", "metric"])
    curves = progressive_curves(no_finetuning, table, ["rt_sentiment"])
    assert (curves["n"] == 3).all()
    assert (curves["ci_high"] > curves["ci_low"]).all()  # seeds differ: the interval has width


def test_cls_pooling_reads_the_first_token_only():
    rng = torch.Generator().manual_seed(0)
    hidden = [torch.randn(4, 9, 8, generator=rng) for _ in range(3)]
    mask = torch.ones(4, 9, dtype=torch.long)
    perturbed = [h.clone() for h in hidden]
    for h in perturbed:
        h[:, 1:] += torch.randn(4, 8, 8, generator=rng)
    pooler = torch.nn.Module()
    pooler.dense, pooler.activation = torch.nn.Linear(8, 8), torch.nn.Tanh()
    for p in (None, pooler):
        before, after = pool_layers(hidden, mask, "cls", p), pool_layers(perturbed, mask, "cls", p)
        assert before.shape == (4, 3, 8) and torch.equal(before, after)
    assert not torch.allclose(pool_layers(hidden, mask, "mean", None), pool_layers(perturbed, mask, "mean", None))


@pytest.mark.parametrize("pooler", ["absent", "zero-bias"])
def test_cls_features_of_an_untrained_pooler_are_the_raw_first_token(
    tiny_model_dir, tiny_task_dir, tmp_path, capsys, pooler
):
    # A checkpoint without pooler tensors (transformers draws one, bias 0) or with a pooler never
    # trained (all-MiniLM-L6-v2's: bias exactly 0): a frozen random projection is not what a cls
    # probe means to read, so the features stage reads [CLS] raw, as in a family without a pooler,
    # says so in one note line and records it, and the probe result carries it to the report.
    import shutil

    from safetensors.torch import load_file, save_file

    from src.artefacts.probe_result import FEATURES_FALLBACKS
    from src.params.load import validate
    from src.probing.features import CLS_READ_RAW, task_features
    from src.probing.probes import probe_task
    from tests.support import grid_params

    shutil.copytree(tiny_model_dir, tmp_path, dirs_exist_ok=True)
    weights = load_file(str(tiny_model_dir / "model.safetensors"))
    if pooler == "absent":
        weights = {name: t for name, t in weights.items() if not name.startswith("pooler.")}
    else:
        weights["pooler.dense.bias"] = torch.zeros_like(weights["pooler.dense.bias"])
    save_file(weights, str(tmp_path / "model.safetensors"))
    params = grid_params()
    params["probe"]["pooling"] = "cls"
    params["probe"]["seeds"] = 1
    computed = task_features(tmp_path, tiny_task_dir / "tokens.npz", validate(params).probe)
    assert [line for line in capsys.readouterr().err.splitlines() if line.startswith("note: ")] == [
        f"note: probe.pooling = 'cls' on {tiny_task_dir.name}: the pooler of {tmp_path} was never trained (bias "
        "exactly 0, or no pooler tensors in the checkpoint): its probes read the raw [CLS] state instead"
    ]
    np.savez(tmp_path / "features.npz", **computed)  # as the features stage writes them
    probed, _ = probe_task("rt_sentiment", tiny_task_dir / "tokens.npz", tmp_path / "features.npz", validate(params))
    assert list(computed[FEATURES_FALLBACKS]) == probed.fallbacks == [CLS_READ_RAW]
    probed.write(tmp_path / "probe.json")
    assert ProbeResult.read(tmp_path / "probe.json").fallbacks == [CLS_READ_RAW]
    features = computed["eval"]
    encoder = load_encoder(tmp_path, with_pooler=False)
    split = splits.load_split(tiny_task_dir / "tokens.npz", "eval")
    batch = tokens.collate(split, np.array([2]))
    with torch.no_grad():
        hidden = encoder(
            input_ids=batch["input_ids"], attention_mask=batch["attention_mask"], output_hidden_states=True
        ).hidden_states
    for layer in range(4):
        np.testing.assert_allclose(features[2, layer], hidden[layer][0, 0].numpy(), rtol=1e-2, atol=1e-2)


def test_cls_features_are_the_frozen_pooler_on_each_layers_first_token(tiny_model_dir, tiny_task_dir):
    encoder = load_encoder(tiny_model_dir, with_pooler=True)
    split = splits.load_split(tiny_task_dir / "tokens.npz", "eval")
    features = layer_features(encoder, split, batch_size=16, pooling="cls")
    batch = tokens.collate(split, np.array([2]))
    with torch.no_grad():
        hidden = encoder(
            input_ids=batch["input_ids"], attention_mask=batch["attention_mask"], output_hidden_states=True
        ).hidden_states
        for layer in range(4):
            expected = encoder.pooler(hidden[layer])[0].numpy()  # BERT's pooler reads token 0 itself
            np.testing.assert_allclose(features[2, layer], expected, rtol=1e-2, atol=1e-2)


@pytest.mark.parametrize("pooling", ["cls", "mean"])
def test_features_of_a_trained_pooler_or_mean_pooling_take_no_fallback(
    tiny_model_dir, tiny_task_dir, tmp_path, capsys, pooling
):
    from src.artefacts.probe_result import FEATURES_FALLBACKS, features_fallbacks
    from src.params.load import validate
    from src.probing.features import task_features
    from tests.support import grid_params

    params = grid_params()
    params["probe"]["pooling"] = pooling
    computed = task_features(tiny_model_dir, tiny_task_dir / "tokens.npz", validate(params).probe)
    assert features_fallbacks(computed) == [] and "note: " not in capsys.readouterr().err
    np.savez(tmp_path / "old.npz", **{k: v for k, v in computed.items() if k != FEATURES_FALLBACKS})
    with np.load(tmp_path / "old.npz") as written_before_fallbacks:
        assert features_fallbacks(written_before_fallbacks) == []
