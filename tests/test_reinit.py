"""Reinitialisation touches exactly the intended tensors, with each recipe's distribution."""

import shutil

import pytest
import torch
from safetensors.torch import load_file, save_file

from src import reinit
from src.condition import Condition
from src.model import build_finetuner, load_encoder

SIGMA = 0.02


def pretrained(model_dir):
    return load_file(str(model_dir / "model.safetensors"))


def changed_names(model, reference):
    """Names (checkpoint naming) of encoder tensors that differ from the checkpoint."""
    state = {name.removeprefix("encoder."): p for name, p in model.named_parameters() if name.startswith("encoder.")}
    return {name for name, p in state.items() if not torch.equal(p, reference[name])}


@pytest.mark.parametrize("k", [0, 1, 2, 3])
def test_progressive_reinit_changes_exactly_layers_after_k(tiny_model_dir, k):
    reference = pretrained(tiny_model_dir)
    model, manifest = build_finetuner(tiny_model_dir, Condition("t", 10, k, trial=0), num_labels=2, seed=0)
    expected = {name for name in reference if name.startswith("encoder.layer.") and int(name.split(".")[2]) >= k}
    assert changed_names(model, reference) == expected  # embeddings and layers < k untouched, bit for bit
    assert {e["name"] for e in manifest} == expected | {"classifier.weight", "classifier.bias"}


def test_paper_recipe_matches_bert_init(tiny_model_dir):
    encoder = load_encoder(tiny_model_dir, with_pooler=False)
    manifest = reinit.reinit_layers(encoder, [0, 1, 2], "paper", seed=0, trial=0)
    layer = encoder.encoder.layer[1]
    weights = torch.cat([m.weight.flatten() for m in layer.modules() if isinstance(m, torch.nn.Linear)])
    assert weights.abs().max() <= 2 * SIGMA
    # N(0, 0.02) truncated at +-2 sigma has std 0.02 * 0.8796 = 0.0176.
    assert weights.std().item() == pytest.approx(0.0176, rel=0.03)
    assert abs(weights.mean().item()) < 1e-3
    for m in layer.modules():
        if isinstance(m, torch.nn.Linear):
            assert torch.all(m.bias == 0)
        if isinstance(m, torch.nn.LayerNorm):
            assert torch.all(m.weight == 1) and torch.all(m.bias == 0)
    query = next(e for e in manifest if e["name"] == "encoder.layer.1.attention.self.query.weight")
    assert query["shape"] == [64, 64] and query["std"] == pytest.approx(0.0176, rel=0.1)


def test_authors_code_recipe_clips_in_sigma_units_and_keeps_biases(tiny_model_dir):
    reference = pretrained(tiny_model_dir)
    encoder = load_encoder(tiny_model_dir, with_pooler=False)
    reinit.reinit_layers(encoder, [0], "authors_code", seed=0, trial=0)
    layer = encoder.encoder.layer[0]
    weights = torch.cat([m.weight.flatten() for m in layer.modules() if isinstance(m, torch.nn.Linear)])
    # truncnorm(-2 sigma, 2 sigma, scale=sigma): bounds +-2 sigma^2 = +-0.0008, nearly uniform (std 0.0008/sqrt 3).
    assert weights.abs().max() <= 2 * SIGMA * SIGMA
    assert weights.std().item() == pytest.approx(0.0008 / 3**0.5, rel=0.03)
    assert torch.equal(layer.intermediate.dense.bias, reference["encoder.layer.0.intermediate.dense.bias"].to(layer.intermediate.dense.bias.dtype))
    assert torch.all(layer.output.LayerNorm.weight == 1) and torch.all(layer.output.LayerNorm.bias == 0)


def test_fresh_weights_are_a_function_of_seed_and_trial_not_k(tiny_model_dir):
    def layer2(k, trial, seed=0):
        model, _ = build_finetuner(tiny_model_dir, Condition("t", 10, k, trial), 2, seed)
        return model.encoder.encoder.layer[2].attention.self.query.weight.detach().clone()

    assert torch.equal(layer2(0, 0), layer2(2, 0))  # same trial: same draw, whatever else is reset
    assert not torch.equal(layer2(2, 0), layer2(2, 1))
    assert not torch.equal(layer2(2, 0), layer2(2, 0, seed=1))


def test_cls_head_reinitialises_an_untrained_pooler_only(tiny_model_dir, tmp_path):
    reference = pretrained(tiny_model_dir)
    # The tiny checkpoint's pooler is "trained" (nonzero bias): kept.
    model, manifest = build_finetuner(tiny_model_dir, Condition("t", 10, 3, 0, head="cls"), 2, 0)
    assert torch.equal(model.encoder.pooler.dense.weight, reference["pooler.dense.weight"])
    assert not any(e["name"].startswith("pooler") for e in manifest)
    # A pooler with an all-zero bias (as all-MiniLM-L6-v2 ships) is reinitialised.
    shutil.copytree(tiny_model_dir, tmp_path, dirs_exist_ok=True)
    weights = dict(reference, **{"pooler.dense.bias": torch.zeros_like(reference["pooler.dense.bias"])})
    save_file(weights, str(tmp_path / "model.safetensors"))
    model, manifest = build_finetuner(tmp_path, Condition("t", 10, 3, 0, head="cls"), 2, 0)
    assert {"pooler.dense.weight", "pooler.dense.bias"} <= {e["name"] for e in manifest}
    assert not torch.equal(model.encoder.pooler.dense.weight, reference["pooler.dense.weight"])


def test_non_bert_model_is_refused():
    with pytest.raises(ValueError, match="no encoder.layer stack"):
        reinit.encoder_layers(torch.nn.Linear(2, 2))


def test_k_outside_the_model_is_refused():
    with pytest.raises(ValueError, match=r"k=7 is outside 0..6"):
        Condition("t", 10, 7, 0).reinit_layers(6)
