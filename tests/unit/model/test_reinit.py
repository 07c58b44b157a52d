"""Reinitialisation touches exactly the intended tensors, with each recipe's distribution."""

import shutil

import pytest
import torch
from safetensors.torch import load_file, save_file

from src.conditions.condition import Condition
from src.model import reinit
from src.model.base import load_encoder
from src.model.finetuner import POOLER_REINITIALISED, build_finetuner

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
    model, record = build_finetuner(tiny_model_dir, Condition("t", 10, 0, 3, k=k), num_labels=2, seed=0)
    expected = {name for name in reference if name.startswith("encoder.layer.") and int(name.split(".")[2]) >= k}
    assert changed_names(model, reference) == expected  # embeddings and layers < k untouched, bit for bit
    assert {e["name"] for e in record["reinitialised"]} == expected | {"classifier.weight", "classifier.bias"}


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
    assert torch.equal(
        layer.intermediate.dense.bias,
        reference["encoder.layer.0.intermediate.dense.bias"].to(layer.intermediate.dense.bias.dtype),
    )
    assert torch.all(layer.output.LayerNorm.weight == 1) and torch.all(layer.output.LayerNorm.bias == 0)


def test_fresh_weights_are_a_function_of_seed_and_trial_not_k(tiny_model_dir):
    def layer2(k, trial, seed=0):
        model, _ = build_finetuner(tiny_model_dir, Condition("t", 10, trial, 3, k=k), 2, seed)
        return model.encoder.encoder.layer[2].attention.self.query.weight.detach().clone()

    assert torch.equal(layer2(0, 0), layer2(2, 0))  # same trial: same draw, whatever else is reset
    assert not torch.equal(layer2(2, 0), layer2(2, 1))
    assert not torch.equal(layer2(2, 0), layer2(2, 0, seed=1))


def test_cls_head_reinitialises_an_untrained_pooler_only_and_says_so(tiny_model_dir, tmp_path, capsys):
    reference = pretrained(tiny_model_dir)
    # The tiny checkpoint's pooler is "trained" (nonzero bias): kept.
    model, record = build_finetuner(tiny_model_dir, Condition("t", 10, 0, 3, k=3, pooling="cls"), 2, 0)
    assert torch.equal(model.encoder.pooler.dense.weight, reference["pooler.dense.weight"])
    assert not any(e["name"].startswith("pooler") for e in record["reinitialised"])
    assert record["fallbacks"] == [] and "note: " not in capsys.readouterr().err
    # A pooler with an all-zero bias (as all-MiniLM-L6-v2 ships) is reinitialised.
    shutil.copytree(tiny_model_dir, tmp_path, dirs_exist_ok=True)
    weights = dict(reference, **{"pooler.dense.bias": torch.zeros_like(reference["pooler.dense.bias"])})
    save_file(weights, str(tmp_path / "model.safetensors"))
    model, record = build_finetuner(tmp_path, Condition("t", 10, 0, 3, k=3, pooling="cls"), 2, 0)
    assert {"pooler.dense.weight", "pooler.dense.bias"} <= {e["name"] for e in record["reinitialised"]}
    assert not torch.equal(model.encoder.pooler.dense.weight, reference["pooler.dense.weight"])
    # said once, and recorded for the run's result (RunResult.fallbacks) and the report's count
    assert record["fallbacks"] == [POOLER_REINITIALISED]
    assert [line for line in capsys.readouterr().err.splitlines() if line.startswith("note: ")] == [
        "note: t n=10 k3_e3 trial 0: pooling = 'cls' on a pooler that was never trained (bias exactly 0, or no pooler "
        "tensors in the checkpoint): the pooler is re-initialised from the seed, as the task head is"
    ]


def test_a_module_that_is_no_supported_encoder_is_refused():
    with pytest.raises(ValueError, match="model_type None is refused: it is not one of the supported encoder families"):
        reinit.encoder_layers(torch.nn.Linear(2, 2))


def layer_names(reference, layers):
    return {name for name in reference if name.startswith("encoder.layer.") and int(name.split(".")[2]) in layers}


@pytest.mark.parametrize(
    "condition, layers",
    [
        (Condition("t", 10, 0, 3, scheme="block_reinit", layer=2, window=2), {1, 2}),
        (Condition("t", 10, 0, 3, scheme="block_preserve", layer=2, window=2), {0}),
        (Condition("t", 10, 0, 3, scheme="single_layer", layer=3), {2}),
    ],
)
def test_block_and_single_layer_schemes_change_exactly_their_layers(tiny_model_dir, condition, layers):
    reference = pretrained(tiny_model_dir)
    model, _ = build_finetuner(tiny_model_dir, condition, 2, 0)
    assert changed_names(model, reference) == layer_names(reference, layers)


def test_keep_layernorm_leaves_the_layernorm_of_reinitialised_layers_pretrained(tiny_model_dir):
    reference = pretrained(tiny_model_dir)
    model, record = build_finetuner(tiny_model_dir, Condition("t", 10, 0, 3, k=1, keep_layernorm=True), 2, 0)
    expected = {n for n in layer_names(reference, {1, 2}) if "LayerNorm" not in n}
    assert changed_names(model, reference) == expected
    assert not any("LayerNorm" in e["name"] for e in record["reinitialised"])


def test_permuted_model_holds_exactly_the_pretrained_layers_in_the_recorded_order(tiny_model_dir):
    reference = pretrained(tiny_model_dir)
    orders = []
    for trial in range(4):
        model, record = build_finetuner(tiny_model_dir, Condition("t", 10, trial, 3, scheme="permutation"), 2, seed=0)
        order = record["layer_order"]
        assert sorted(order) == [0, 1, 2] and not any("encoder.layer" in e["name"] for e in record["reinitialised"])
        for position, source in enumerate(order):
            for name, value in model.encoder.encoder.layer[position].state_dict().items():
                assert torch.equal(value, reference[f"encoder.layer.{source}.{name}"])
        assert torch.equal(
            model.encoder.embeddings.word_embeddings.weight, reference["embeddings.word_embeddings.weight"]
        )
        # the same trial draws the same order on any task: it depends on (seed, trial) only
        assert (
            build_finetuner(tiny_model_dir, Condition("other", 20, trial, 3, scheme="permutation"), 3, seed=0)[1][
                "layer_order"
            ]
            == order
        )
        orders.append(order)
    assert len({tuple(o) for o in orders}) > 1


def test_head_reinit_touches_only_that_heads_slices(tiny_model_dir):
    reference = pretrained(tiny_model_dir)
    model, _ = build_finetuner(tiny_model_dir, Condition("t", 10, 0, 3, scheme="head", layer=2, head_index=1), 2, 0)
    assert changed_names(model, reference) == {
        f"encoder.layer.1.attention.self.{p}.{t}" for p in ("query", "key", "value") for t in ("weight", "bias")
    } | {"encoder.layer.1.attention.output.dense.weight"}
    width = 64 // 4
    head, others = slice(width, 2 * width), [slice(0, width), slice(2 * width, 64)]
    for name in ("query", "key", "value"):
        weight = model.encoder.encoder.layer[1].attention.self.get_submodule(name).weight
        original = reference[f"encoder.layer.1.attention.self.{name}.weight"]
        assert not torch.equal(weight[head], original[head]) and weight[head].abs().max() <= 2 * SIGMA
        assert all(torch.equal(weight[rows], original[rows]) for rows in others)
    output = model.encoder.encoder.layer[1].attention.output.dense.weight
    original = reference["encoder.layer.1.attention.output.dense.weight"]
    assert not torch.equal(output[:, head], original[:, head])
    assert all(torch.equal(output[:, cols], original[:, cols]) for cols in others)


def test_lr_groups_partition_the_parameters_and_boost_exactly_the_reinitialised(tiny_model_dir):
    from src.train.alone import parameter_groups

    model, record = build_finetuner(
        tiny_model_dir, Condition("t", 10, 0, 3, k=1, lr_multiplier=5.0, keep_layernorm=True), 2, 0
    )
    fresh = {f"encoder.{e['name']}" for e in record["reinitialised"] if e["name"].startswith("encoder.layer.")}
    groups = parameter_groups(model, fresh, lr=2e-5, multiplier=5.0)
    names = [n for g in groups for n in g["names"]]
    assert sorted(names) == sorted(n for n, _ in model.named_parameters())  # each exactly once
    boosted = next(g for g in groups if g["lr"] == pytest.approx(1e-4))
    assert set(boosted["names"]) == fresh and not any("LayerNorm" in n or "layer.0." in n for n in boosted["names"])
    with pytest.raises(ValueError, match="not in the model"):
        parameter_groups(model, {"encoder.encoder.layer.11.output.dense.weight"}, 2e-5, 5.0)


@pytest.mark.parametrize(
    "condition, message",
    [
        (Condition("t", 10, 0, 3, k=7), "k7_e3 trial 0 does not fit a model with 6 encoder layers"),
        (
            Condition("t", 10, 0, 3, scheme="block_reinit", layer=5, window=3),
            "does not fit a model with 6 encoder layers",
        ),
        (
            Condition("t", 10, 0, 3, scheme="head", layer=1, head_index=12),
            "does not fit a model with 6 encoder layers and 12 attention heads",
        ),
        (
            Condition("t", 10, 0, 3, scheme="permutation", lr_multiplier=5.0),
            "apply to schemes that reinitialise whole layers",
        ),
    ],
)
def test_conditions_the_model_cannot_take_are_refused(condition, message):
    with pytest.raises(ValueError, match=message):
        condition.check(6, 12)
