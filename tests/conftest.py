"""Shared fixtures (the one conftest): a tiny BERT checkpoint in the same on-disk layout as
data/model, the toy task tokenised for it, and the test grid as params and as Config. Plain
helpers shared by test modules are in tests/support.py.

Unit tests run the real code (loading, reinit, training, probing) on a 3-layer,
hidden-64 BertModel with a word-level vocabulary, so they take seconds on 2 cores.
"""

import json

import pytest

from tests.support import WORDS, grid_params, placeholder_pipeline, toy_sentiment, write_checkpoint


@pytest.fixture(scope="session")
def tiny_model_dir(tmp_path_factory):
    from transformers import BertConfig, BertTokenizerFast

    from src.artefacts.base_model import BaseModelRecord
    from src.core.files import sha256_of

    out = tmp_path_factory.mktemp("tiny_model")
    vocab = {token: i for i, token in enumerate(["[PAD]", "[UNK]", "[CLS]", "[SEP]", "[MASK]", *WORDS])}
    config = BertConfig(
        vocab_size=len(WORDS) + 5,
        hidden_size=64,
        num_hidden_layers=3,
        num_attention_heads=4,
        intermediate_size=256,
        max_position_embeddings=64,
    )
    write_checkpoint(config, out, BertTokenizerFast(vocab=vocab, do_lower_case=True))
    BaseModelRecord(  # base.json as prepare_model writes it (its one writer)
        name="tiny",
        source="tests/conftest.py",
        model_type=config.model_type,
        num_layers=config.num_hidden_layers,
        hidden_size=config.hidden_size,
        num_heads=config.num_attention_heads,
        weights_sha256=sha256_of(out / "model.safetensors"),
        max_positions=config.max_position_embeddings,
    ).write(out)
    return out


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


@pytest.fixture(scope="session")
def placeholder_template(tmp_path_factory, tiny_model_dir):
    """(root, outputs) of the real pipeline in a scratch git + DVC repository on the tiny model, every
    output a committed placeholder (support.placeholder_pipeline): built once, as building one takes
    DVC and git seconds; tests work in copies of it (support.exp_run, copy_repo), never in it."""
    root = tmp_path_factory.mktemp("placeholders") / "repo"
    root.mkdir()
    return root, placeholder_pipeline(root, tiny_model_dir)


@pytest.fixture
def params() -> dict:
    """A fresh copy of the test grid (tests may change it)."""
    return grid_params()


@pytest.fixture
def config(params):
    """The test grid as the typed Config every function takes a section of."""
    from src.params.load import validate

    return validate(params)
