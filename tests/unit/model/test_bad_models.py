"""Models the code cannot fine-tune (a decoder, a condition the loaded model cannot take,
pickle weights) are refused before anything is written or loaded, in process. Part of the
bad-input tests (unit/params/test_bad_params.py lists the others; bad model folders through
`dvc exp run` are in e2e/test_bad_input_model_folders.py)."""

import re
import shutil
from pathlib import Path

import pytest
import torch

from src.conditions.condition import Condition
from src.model import reinit
from src.model.base import load_encoder
from src.model.export import export_base_model
from src.model.finetuner import build_finetuner


def test_a_condition_is_checked_against_the_loaded_model_before_training(tiny_model_dir):
    condition = Condition("rt_sentiment", 10, 0, 3, scheme="head", layer=1, head_index=4)
    with pytest.raises(
        ValueError,
        match=re.escape(
            "rt_sentiment n=10 layer1_head4_e3 trial 0 does not fit a model with 3 encoder layers and 4 attention heads"
        ),
    ):
        build_finetuner(tiny_model_dir, condition, 2, 0)


def tiny_gpt2():
    from transformers import GPT2Config, GPT2Model

    return GPT2Model(GPT2Config(n_layer=2, n_embd=32, n_head=2, vocab_size=64, n_positions=32))


GPT2_REFUSED = (
    "model_type 'gpt2' is refused: it is not one of the supported encoder families "
    "(decoders such as GPT-2 are not encoders)"
)


def test_a_gpt2_model_is_refused_by_reinit():
    with pytest.raises(
        ValueError,
        match=re.escape(GPT2_REFUSED),
    ):
        reinit.encoder_layers(tiny_gpt2())


def with_tokenizer(folder: Path, tiny_model_dir: Path) -> Path:
    for name in ("tokenizer.json", "tokenizer_config.json", "special_tokens_map.json", "vocab.txt"):
        if (tiny_model_dir / name).exists():
            shutil.copy(tiny_model_dir / name, folder / name)
    return folder


def test_a_non_bert_model_is_refused_before_anything_is_written(tmp_path, tiny_model_dir, monkeypatch):
    monkeypatch.setenv("HF_HUB_OFFLINE", "1")
    source = tmp_path / "gpt2"
    tiny_gpt2().save_pretrained(source)
    with_tokenizer(source, tiny_model_dir)
    out = tmp_path / "model"
    with pytest.raises(
        ValueError,
        match=re.escape(GPT2_REFUSED),
    ):
        export_base_model(str(source), out)  # a local folder stands in for a hub id
    assert list(out.iterdir()) == []


def test_pickle_weights_are_never_loaded(tmp_path, tiny_model_dir, monkeypatch):
    from transformers import BertModel

    model = BertModel.from_pretrained(tiny_model_dir)
    model.config.save_pretrained(tmp_path)
    torch.save(model.state_dict(), tmp_path / "pytorch_model.bin")  # the pickle format, the only weights there
    loads = []
    monkeypatch.setattr(
        torch, "load", lambda *a, **k: loads.append(a) or pytest.fail("a pickle checkpoint was unpickled")
    )
    with pytest.raises(OSError, match=re.escape(f"no file named model.safetensors found in directory {tmp_path}")):
        load_encoder(tmp_path, with_pooler=False)
    assert loads == []


def test_a_model_the_export_accepts_can_be_loaded_for_finetuning(tmp_path, tiny_model_dir):
    from transformers import ElectraConfig, ElectraModel

    source = tmp_path / "electra"
    ElectraModel(
        ElectraConfig(
            vocab_size=64,
            embedding_size=32,
            hidden_size=32,
            num_hidden_layers=2,
            num_attention_heads=2,
            intermediate_size=64,
        )
    ).save_pretrained(source)
    with_tokenizer(source, tiny_model_dir)
    try:
        export_base_model(str(source), tmp_path / "model")
    except ValueError as error:  # refusing it up front, with the usual message, is fine too
        assert "use a BERT-family model" in str(error)
        return
    load_encoder(tmp_path / "model", with_pooler=False)
