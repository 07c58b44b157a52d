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

    out = tmp_path_factory.mktemp("tiny_model")
    vocab = {token: i for i, token in enumerate(["[PAD]", "[UNK]", "[CLS]", "[SEP]", "[MASK]", *WORDS])}
    BertTokenizerFast(vocab=vocab, do_lower_case=True).save_pretrained(out)
    config = BertConfig(vocab_size=len(WORDS) + 5, hidden_size=64, num_hidden_layers=3, num_attention_heads=4, intermediate_size=256, max_position_embeddings=64)
    torch.manual_seed(0)
    model = BertModel(config)
    with torch.no_grad():  # make "pretrained" weights unlike any fresh init, pooler included
        for p in model.parameters():
            p.add_(torch.randn_like(p) * 0.1)
    model.save_pretrained(out, safe_serialization=True)
    (out / "base.json").write_text(json.dumps({"name": "tiny", "weights_sha256": "test", "num_layers": 3, "num_heads": 4}))
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
    from src import data
    from src.model import load_tokenizer

    out = tmp_path_factory.mktemp("tiny_task")
    tokenizer = load_tokenizer(tiny_model_dir)
    splits = {name: data.tokenize(toy_sentiment(n, seed), ("sentence",), "classification", tokenizer, 32) for name, n, seed in (("train", 200, 1), ("eval", 60, 2))}
    data.save_splits(out / "tokens.npz", splits)
    return out


@pytest.fixture(scope="session")
def tiny_tasks_root(tmp_path_factory, tiny_task_dir):
    """The toy task as the data stage lays tasks out: <root>/rt_sentiment/{tokens.npz, info.json}."""
    import shutil

    root = tmp_path_factory.mktemp("tiny_tasks")
    (root / "rt_sentiment").mkdir()
    shutil.copy(tiny_task_dir / "tokens.npz", root / "rt_sentiment" / "tokens.npz")
    (root / "rt_sentiment" / "info.json").write_text(json.dumps({"task": "rt_sentiment", "train_examples": 200, "eval_examples": 60}))
    return root
