"""Shared fixtures: a tiny BERT checkpoint in the same on-disk layout as data/model.

Unit tests run the real code (loading, reinit, training, probing) on a 3-layer,
hidden-64 BertModel with a word-level vocabulary, so they take seconds on 2 cores.
"""

import json

import numpy as np
import pandas as pd
import pytest
import torch

WORDS = "the a film movie good bad great awful plot actors boring fun not very is was and story".split()


@pytest.fixture(scope="session")
def tiny_model_dir(tmp_path_factory):
    from transformers import BertConfig, BertModel, BertTokenizerFast

    from src.artefacts.base_model import BaseModelRecord
    from src.core.files import sha256_of

    out = tmp_path_factory.mktemp("tiny_model")
    vocab = {token: i for i, token in enumerate(["[PAD]", "[UNK]", "[CLS]", "[SEP]", "[MASK]", *WORDS])}
    BertTokenizerFast(vocab=vocab, do_lower_case=True).save_pretrained(out)
    config = BertConfig(
        vocab_size=len(WORDS) + 5,
        hidden_size=64,
        num_hidden_layers=3,
        num_attention_heads=4,
        intermediate_size=256,
        max_position_embeddings=64,
    )
    torch.manual_seed(0)
    model = BertModel(config)
    with torch.no_grad():  # make "pretrained" weights unlike any fresh init, pooler included
        for p in model.parameters():
            p.add_(torch.randn_like(p) * 0.1)
    model.save_pretrained(out, safe_serialization=True)
    BaseModelRecord(  # base.json as prepare_model writes it (its one writer)
        name="tiny",
        source="tests/conftest.py",
        model_type=config.model_type,
        num_layers=config.num_hidden_layers,
        hidden_size=config.hidden_size,
        num_heads=config.num_attention_heads,
        weights_sha256=sha256_of(out / "model.safetensors"),
    ).write(out)
    return out


def toy_sentiment(n: int, seed: int) -> pd.DataFrame:
    """Sentences whose label is decided by one word, so a few steps can learn it."""
    rng = np.random.default_rng(seed)
    rows = []
    for _ in range(n):
        label = int(rng.integers(2))
        words = list(rng.choice(WORDS[:4] + WORDS[8:11], size=int(rng.integers(3, 9))))
        words.insert(int(rng.integers(len(words) + 1)), "great" if label else "awful")
        rows.append((" ".join(words), label))
    return pd.DataFrame(rows, columns=["sentence", "label"])


@pytest.fixture(scope="session")
def tiny_task_dir(tmp_path_factory, tiny_model_dir):
    """A tokenised toy task in the layout the data stage writes (tokens.npz)."""
    from src.data.tokens import tokenize
    from src.model.base import load_tokenizer
    from src.tasks.kinds import KINDS
    from src.tasks.splits import save_splits

    out = tmp_path_factory.mktemp("tiny_task")
    tokenizer = load_tokenizer(tiny_model_dir)
    splits = {
        name: tokenize(toy_sentiment(n, seed), ("sentence",), KINDS["classification"], tokenizer, 32)
        for name, n, seed in (("train", 200, 1), ("eval", 60, 2))
    }
    save_splits(out / "tokens.npz", splits)
    return out


@pytest.fixture(scope="session")
def tiny_tasks_root(tmp_path_factory, tiny_task_dir):
    """The toy task as the data stage lays tasks out: <root>/rt_sentiment/{tokens.npz, info.json}."""
    import shutil

    root = tmp_path_factory.mktemp("tiny_tasks")
    (root / "rt_sentiment").mkdir()
    shutil.copy(tiny_task_dir / "tokens.npz", root / "rt_sentiment" / "tokens.npz")
    (root / "rt_sentiment" / "info.json").write_text(
        json.dumps({"task": "rt_sentiment", "train_examples": 200, "eval_examples": 60})
    )
    return root


def stub_result(condition: dict, **recorded):
    """A RunResult as a finished run writes it, holding only what a test sets in `recorded`
    (status, scores, predictions, ...); the rest of what a run records is left empty."""
    from src.artefacts.run_result import RunResult

    empty = dict(
        fingerprint="test",
        status="ok",
        metric="accuracy",
        scores={},
        eval_loss=None,
        majority_share=None,
        predictions=None,
        epoch_losses=[],
        epoch_eval=[],
        train_seconds=0.0,
        weight_change=[],
        steps=None,
        layer_change_by_step=[],
        settings={},
        seeds={},
    )
    return RunResult(condition=condition, **{**empty, **recorded})


def grid_params() -> dict:
    """The fixed test grid: a complete params.yaml as a dict, independent of the shipped
    params.yaml (which only tests/test_params.py reads). Every study family is in it, on the
    embedded tasks, at sizes a test can train in seconds. Tests change a copy of it."""
    tiny = {"tasks": ["rt_sentiment"], "sizes": [8], "trials": 2}
    return {
        "task": "rt_sentiment",
        "size": 16,
        "k": 6,
        "trials": 2,
        "recipe": "paper",
        "pooling": "mean",
        "seed": 0,
        "model": {"name": "embedded", "max_length": 32},
        "data": {
            "tasks": ["rt_sentiment", "subjectivity", "tweet_sentiment"],
            "glue_dir": None,
            "glue_carve_train_from_dev": [],
            "eval_size": 50,
            "neutral_band": 0.8,
            "split_seed": 0,
            "max_unk_rate": 0.05,
            "squad_dir": None,
            "qa_stride": 32,
            "qa_max_answer_tokens": 30,
        },
        "train": {
            "lr": 2.0e-5,
            "batch_size": 8,
            "epochs": 1,
            "small_size": 8,
            "small_epochs": 1,
            "weight_decay": 0.0,
            "eval_batch_size": 32,
            "group_by_length": True,
            "precision": "auto",
            "checkpoint_every": 0,
            "workers": 1,
            "threads": 2,
            "cka": True,
            "criticality": "full_model",
            "criticality_examples": 0,
            "head_importance": "off",
            "keep_weights": False,
        },
        "executor": {
            "kind": "local",
            "address": "auto",
            "gpus_per_run": 1,
            "runs_per_gpu": 1,
            "partition": None,
            "time_limit_min": 60,
            "cpus_per_run": 1,
            "mem_gb_per_run": 8,
            "array_parallelism": 64,
            "log_dir": "data/cluster_logs",
            "max_retries": 2,
        },
        "probe": {
            "tasks": ["rt_sentiment"],
            "batch_size": 64,
            "epochs": 2,
            "lr": 1.0e-3,
            "train_batch_size": 64,
            "pooling": "mean",
            "seeds": 2,
            "mdl_portions": [10, 50, 100],
        },
        "report": {
            "alpha": 0.05,
            "power": 0.8,
            "single_layer_margin": 0.02,
            "correlation_margin": 0.5,
            "bootstrap_resamples": 200,
            "max_undefined_share": 0.05,
            "block_margin": 0.02,
            "modifier_margin": 0.02,
            "chance_margin": 0.05,
            "few_layers_fraction": 0.25,
            "linear_r2": 0.9,
        },
        "studies": {
            "progressive": {"scheme": "progressive", **tiny, "sizes": [8, 16], "ks": [0, 6]},
            "blocks": {"scheme": "block", "window": 5, **tiny},
            "single_layer": {"scheme": "single_layer", "layers": [1, 6], **tiny},
            "permutation": {"scheme": "permutation", **tiny, "tasks": ["rt_sentiment", "subjectivity"], "trials": 3},
            "heads": {"scheme": "head", "layers": [2], "heads": [0, 11], **tiny, "trials": 1},
            "remove": {"scheme": "remove", "removals": ["top2", "alternate2", [1, 2]], **tiny, "trials": 1},
            "lr_multiplier": {"scheme": "progressive", "ks": [0], "reinit_lr_multiplier": 5, **tiny},
            "keep_layernorm": {"scheme": "progressive", "ks": [0], "keep_layernorm": True, **tiny},
            "epochs": {"scheme": "progressive", "ks": [0, 6], "epochs": 2, **tiny},
            "sequential": {
                "scheme": "progressive",
                "ks": [6],
                "intermediate_tasks": ["rt_sentiment", "tweet_sentiment"],
                **tiny,
                "tasks": ["rt_sentiment", "tweet_sentiment"],
            },
        },
    }


@pytest.fixture
def params() -> dict:
    """A fresh copy of the test grid (tests may change it)."""
    return grid_params()


@pytest.fixture
def config(params):
    """The test grid as the typed Config every function takes a section of."""
    from src.params.load import validate

    return validate(params)
