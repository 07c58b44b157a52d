"""Every supported encoder family, through the family table and the real export.

Structural tests: each family is a tiny randomly initialised checkpoint (3 layers, hidden
32, 4 heads) written to a local folder as safetensors with the word-level BERT tokenizer
of conftest.py, then exported by prepare_model's code. Their numbers mean nothing; what
is checked is which tensors each scheme writes, per family, against the state dict.
"""

import dataclasses
import json
import re

import pytest
import torch
from safetensors.torch import load_file
from transformers import AutoModel

from src.conditions.condition import Condition
from src.core.errors import ModelError
from src.model.base import load_encoder
from src.model.export import export_base_model
from src.model.families import FAMILIES, family_of, layout_problems
from src.model.finetuner import build_finetuner, encode, reinitialised_layer_parameters
from src.train.alone import parameter_groups
from src.train.weights import layer_weights
from tests.support import (
    FAMILY_HEADS,
    FAMILY_HIDDEN,
    FAMILY_KINDS,
    FAMILY_LAYERS,
    FAMILY_SHAPE,
    tiny_config,
    write_family_checkpoint,
)

LAYERS, HEADS, HIDDEN = FAMILY_LAYERS, FAMILY_HEADS, FAMILY_HIDDEN  # every family's tiny checkpoint
KINDS, SHAPE = FAMILY_KINDS, FAMILY_SHAPE


MATCHED = ["camembert", "ernie"]  # model types outside the table, matched by layout: every fixture test runs on them


@pytest.fixture(scope="module", params=KINDS + MATCHED)
def family_model(request, tmp_path_factory, tiny_model_dir):
    """(kind, the exported base model folder, its weights) as prepare_model leaves them."""
    root = tmp_path_factory.mktemp(request.param)
    write_family_checkpoint(request.param, root / "checkpoint", tiny_model_dir)
    export_base_model(str(root / "checkpoint"), root / "model").write(root / "model")
    return request.param, root / "model", load_file(str(root / "model" / "model.safetensors"))


def state(encoder) -> dict:
    return {name: t.detach().clone() for name, t in encoder.state_dict().items()}


def changed(after: dict, before: dict) -> set[str]:
    assert after.keys() == before.keys()
    return {name for name in after if not torch.equal(after[name], before[name])}


def layer_params(encoder, layers, without_layernorm=False) -> set[str]:
    """State-dict names of every parameter of encoder layers `layers` (0-based)."""
    family = family_of(encoder)
    names = set()
    for i in layers:
        layer = encoder.get_submodule(family.stack)[i]
        skip = {f"{ln}." for ln in family.layernorms} if without_layernorm else set()
        names |= {
            f"{family.stack}.{i}.{n}" for n, _ in layer.named_parameters() if not any(n.startswith(s) for s in skip)
        }
    return names


def start(model_dir, condition):
    """Pretrained state (loaded as the stage loads it) and the condition's starting encoder."""
    before = state(load_encoder(model_dir, with_pooler=condition.pooling == "cls"))
    model, record = build_finetuner(model_dir, condition, num_labels=2, seed=0)
    return before, model, record


def test_the_table_names_every_parameter_of_every_layer(family_model):
    kind, model_dir, _ = family_model
    encoder = load_encoder(model_dir, with_pooler=True)
    family = family_of(encoder)
    assert json.loads((model_dir / "base.json").read_text())["num_layers"] == LAYERS
    for layer in encoder.get_submodule(family.stack):
        named = [
            family.attention_output,
            family.ffn_in,
            family.ffn_out,
            *family.layernorms,
            *(p for p, _ in family.head_projections(layer)),
        ]
        covered = {f"{path}.{n}" for path in set(named) for n, _ in layer.get_submodule(path).named_parameters()}
        assert covered == {n for n, _ in layer.named_parameters()}, kind
        norms = {n for n, m in layer.named_modules() if isinstance(m, torch.nn.LayerNorm)}
        assert (
            norms <= set(family.layernorms) and len(norms) >= len(family.layernorms) - 1
        )  # ModernBERT layer 0: no attn_norm
    assert hasattr(encoder, "pooler") == family.pooler
    assert set(layer_weights(encoder)) == {
        (i, s)
        for i in range(1, LAYERS + 1)
        for s in ("query", "key", "value", "attention_output", "intermediate", "output")
    }
    assert all(
        w.shape == (HIDDEN, HIDDEN)
        for (_, s), w in layer_weights(encoder).items()
        if s in ("query", "key", "value", "attention_output")
    )


@pytest.mark.parametrize(
    "condition, layers",
    [
        (Condition("t", 10, 0, 1, k=1), {1, 2}),
        (Condition("t", 10, 0, 1, k=0), {0, 1, 2}),
        (Condition("t", 10, 0, 1, scheme="block_reinit", layer=2, window=2), {1, 2}),
        (Condition("t", 10, 0, 1, scheme="block_preserve", layer=2, window=2), {0}),
        (Condition("t", 10, 0, 1, scheme="single_layer", layer=2), {1}),
        (Condition("t", 10, 0, 1, k=1, keep_layernorm=True), {1, 2}),
    ],
    ids=["progressive_k1", "progressive_k0", "block_reinit", "block_preserve", "single_layer", "keep_layernorm"],
)
def test_layer_schemes_change_exactly_their_layers_and_boost_exactly_them(family_model, condition, layers):
    kind, model_dir, _ = family_model
    condition = Condition(**{**condition.as_dict(), "lr_multiplier": 5.0})
    before, model, record = start(model_dir, condition)
    expected = layer_params(model.encoder, layers, without_layernorm=condition.keep_layernorm)
    assert changed(state(model.encoder), before) == expected  # embeddings, other layers, kept LayerNorms: bit for bit
    assert {e["name"] for e in record["reinitialised"]} == expected | {"classifier.weight", "classifier.bias"}
    # The lr multiplier's group is exactly the reinitialised tensors, by the model's own names.
    fresh = reinitialised_layer_parameters(model, record["reinitialised"])
    groups = parameter_groups(model, fresh, lr=2e-5, multiplier=5.0)
    assert sorted(n for g in groups for n in g["names"]) == sorted(n for n, _ in model.named_parameters())
    assert set(groups[1]["names"]) == {f"encoder.{n}" for n in expected} and groups[1]["lr"] == pytest.approx(1e-4)


def test_permutation_moves_whole_layers_and_nothing_else(family_model):
    kind, model_dir, reference = family_model
    for trial in range(4):
        condition = Condition("t", 10, trial, 1, scheme="permutation")
        before, model, record = start(model_dir, condition)
        order, family = record["layer_order"], family_of(model.encoder)
        if order == list(range(LAYERS)):
            continue
        after, outside = state(model.encoder), lambda names: {n for n in names if not n.startswith(f"{family.stack}.")}
        assert outside(after) == outside(before) and not changed(
            {n: after[n] for n in outside(after)}, {n: before[n] for n in outside(before)}
        )
        # (a ModernBERT layer 0 has no attn_norm, so the layer names move with it)
        layouts = lambda weights: sorted(sorted(stack_names(weights, family, p)) for p in range(LAYERS))  # noqa: E731
        assert layouts(after) == layouts(before)
        assert [e["name"] for e in record["reinitialised"]] == ["classifier.weight", "classifier.bias"]
        stack = model.encoder.get_submodule(family.stack)
        for position, source in enumerate(order):
            for name, value in stack[position].state_dict().items():
                assert torch.equal(value, reference[f"{family.stack}.{source}.{name}"]), (kind, position, name)
        if kind == "modernbert":  # the global/local schedule stays with the position
            assert [layer.attention_type for layer in stack] == list(model.encoder.config.layer_types)
            assert [layer.attn.layer_idx for layer in stack] == list(range(LAYERS))
        model.eval()
        tokens = torch.tensor([[2, 5, 6, 3, 0]])
        assert torch.isfinite(model(tokens, (tokens != 0).long(), torch.zeros_like(tokens))).all()
        return
    pytest.fail("no trial drew a permutation other than the identity")


@pytest.mark.parametrize("removed", [(2,), (1, 3), (3,)])
def test_remove_deletes_exactly_those_layers_and_audits_the_depth(family_model, removed):
    kind, model_dir, reference = family_model
    condition = Condition("t", 10, 0, 1, scheme="remove", removal="listed", removed=removed)
    before, model, record = start(model_dir, condition)
    family, encoder = family_of(model.encoder), model.encoder
    kept = [i for i in range(1, LAYERS + 1) if i not in removed]
    assert record["depth"] == {"layers": len(kept), "kept": kept, "removed": list(removed)}
    stack = encoder.get_submodule(family.stack)
    assert len(stack) == encoder.config.num_hidden_layers == len(kept)
    after = state(encoder)
    outside = {n for n in before if not n.startswith(f"{family.stack}.")}
    assert {n for n in after if not n.startswith(f"{family.stack}.")} == outside
    assert all(torch.equal(after[n], before[n]) for n in outside)  # embeddings, pooler, shared tensors: untouched
    for position, source in enumerate(kept):  # each kept layer is its pretrained self, in order
        names = stack_names(reference, family, source - 1)
        assert stack_names(after, family, position) == names, (kind, position)
        for name in names:
            assert torch.equal(
                after[f"{family.stack}.{position}.{name}"], reference[f"{family.stack}.{source - 1}.{name}"]
            )
    assert [e["name"] for e in record["reinitialised"]] == ["classifier.weight", "classifier.bias"]
    if kind == "modernbert":  # each kept layer keeps its own global/local attention
        assert [layer.attention_type for layer in stack] == list(encoder.config.layer_types)
        assert len(encoder.config.layer_types) == len(kept)
    model.eval()
    tokens = torch.tensor([[2, 5, 6, 3, 0]])
    out = encode(encoder, tokens, (tokens != 0).long(), torch.zeros_like(tokens), output_hidden_states=True)
    assert len(out.hidden_states) == len(kept) + 1  # the forward pass runs exactly the kept layers
    assert torch.isfinite(model(tokens, (tokens != 0).long(), torch.zeros_like(tokens))).all()


def test_every_other_condition_audits_the_full_depth(family_model):
    _, model_dir, _ = family_model
    _, _, record = start(model_dir, Condition("t", 10, 0, 1, k=1))
    assert record["depth"] == {"layers": LAYERS, "kept": list(range(1, LAYERS + 1)), "removed": []}


def stack_names(weights: dict, family, position: int) -> set[str]:
    return {
        n.removeprefix(f"{family.stack}.{position}.") for n in weights if n.startswith(f"{family.stack}.{position}.")
    }


def head_rows(family, layer, head):
    """{state-dict name: (rows, columns) index of `head`} that head reinit may change."""
    rows = slice(head * 8, (head + 1) * 8)
    if family.fused_qkv:
        parts = {
            f"{family.fused_qkv}.weight": [slice(p * HIDDEN + head * 8, p * HIDDEN + (head + 1) * 8) for p in range(3)]
        }
    else:
        parts = {f"{p}.{t}": [rows] for p, _ in family.head_projections(layer) for t in ("weight", "bias")}
    parts[f"{family.attention_output}.weight"] = "columns"
    return parts


@pytest.mark.parametrize("head", [0, 3])
def test_head_reinit_changes_only_that_heads_slices(family_model, head):
    kind, model_dir, _ = family_model
    before, model, record = start(model_dir, Condition("t", 10, 0, 1, scheme="head", layer=2, head_index=head))
    family = family_of(model.encoder)
    layer = model.encoder.get_submodule(family.stack)[1]
    prefix = f"{family.stack}.1."
    parts = {prefix + n: p for n, p in head_rows(family, layer, head).items() if prefix + n in before}
    after = state(model.encoder)
    assert changed(after, before) == set(parts)
    for name, index in parts.items():
        diff = after[name] != before[name]
        if index == "columns":
            diff = diff.T
        mine = torch.zeros(diff.shape[0], dtype=torch.bool)
        for rows in [slice(head * 8, (head + 1) * 8)] if index == "columns" else index:
            mine[rows] = True
        assert diff[mine].reshape(mine.sum(), -1).any(-1).all(), (kind, name)  # every row of the head is new
        assert not diff[~mine].any(), (kind, name)  # no other head's row moved
    # head slices are named with [...]: never in the lr multiplier's group
    assert reinitialised_layer_parameters(model, record["reinitialised"]) == set()
    assert all(
        re.search(r"\[((query|key|value) )?head \d\]$", e["name"])
        for e in record["reinitialised"]
        if not e["name"].startswith("classifier")
    )


@pytest.mark.parametrize("pooling", ["mean", "cls"])
def test_both_poolings_run_and_cls_is_the_pooler_or_the_first_token(family_model, pooling):
    kind, model_dir, _ = family_model
    model, _ = build_finetuner(model_dir, Condition("t", 10, 0, 1, k=LAYERS, pooling=pooling), num_labels=2, seed=0)
    model.eval()
    ids = torch.tensor([[2, 5, 6, 3, 7, 8, 3], [2, 9, 3, 10, 3, 0, 0]])
    mask, types = (ids != 0).long(), torch.tensor([[0, 0, 0, 0, 1, 1, 1], [0, 0, 0, 1, 1, 0, 0]])  # a sentence pair
    logits = model(ids, mask, types)
    assert logits.shape == (2, 2) and torch.isfinite(logits).all()
    if pooling == "cls":
        out = encode(model.encoder, ids, mask, types)
        pooled = out.pooler_output if family_of(model.encoder).pooler else out.last_hidden_state[:, 0]
        assert torch.allclose(logits, model.classifier(pooled))
    if not family_of(model.encoder).token_type_ids:  # segment ids never reach a family trained without them
        assert torch.equal(logits, model(ids, mask, torch.zeros_like(types)))


def test_albert_is_refused_with_the_reason_before_anything_is_written(tmp_path, tiny_model_dir):
    write_family_checkpoint("albert", tmp_path / "albert", tiny_model_dir)
    with pytest.raises(
        ValueError, match="model_type 'albert' is refused: ALBERT shares one set of layer weights across every depth"
    ):
        export_base_model(str(tmp_path / "albert"), tmp_path / "model")
    assert list((tmp_path / "model").iterdir()) == []


def test_a_local_folder_without_safetensors_is_refused_with_what_it_needs(tmp_path, tiny_model_dir):
    write_family_checkpoint("bert", tmp_path / "ckpt", tiny_model_dir)
    (tmp_path / "ckpt" / "model.safetensors").unlink()
    with pytest.raises(
        ModelError,
        match=re.escape(
            f"params.yaml: model.name = {str(tmp_path / 'ckpt')!r}: {tmp_path / 'ckpt'} has no weights "
            "(model.safetensors or pytorch_model.bin)"
        ),
    ):
        export_base_model(str(tmp_path / "ckpt"), tmp_path / "model")


def test_the_table_covers_the_listed_families():
    assert set(FAMILIES) == {
        "bert",
        "roberta",
        "xlm-roberta",
        "electra",
        "distilbert",
        "deberta-v2",
        "modernbert",
        "mpnet",
    }


@pytest.mark.parametrize("kind, layout, segment_ids", [("camembert", "roberta", False), ("ernie", "bert", True)])
def test_a_model_type_outside_the_table_is_matched_by_its_layout(tmp_path, tiny_model_dir, kind, layout, segment_ids):
    write_family_checkpoint(kind, tmp_path / "checkpoint", tiny_model_dir)
    record = export_base_model(str(tmp_path / "checkpoint"), tmp_path / "model")
    assert record.model_type == kind and record.num_layers == LAYERS
    encoder = load_encoder(tmp_path / "model", with_pooler=True)
    family = family_of(encoder)
    assert kind not in FAMILIES and family.name == kind and layout_problems(family, encoder) == []
    assert dataclasses.replace(family, name=layout, token_type_ids=False) == dataclasses.replace(
        FAMILIES[layout], token_type_ids=False
    )  # the layout of the listed family, with the segment ids the model itself was built with
    assert family.token_type_ids == segment_ids and family.pooler


def test_a_model_type_whose_layout_fits_no_family_is_refused_in_one_line(tmp_path, tiny_model_dir):
    write_family_checkpoint("megatron-bert", tmp_path / "checkpoint", tiny_model_dir)
    name = str(tmp_path / "checkpoint")
    with pytest.raises(ModelError) as error:
        export_base_model(name, tmp_path / "model")
    assert str(error.value) == (
        f"params.yaml: model.name = {name!r}: model_type 'megatron-bert' is refused: it is not one of the supported "
        "encoder families (decoders such as GPT-2 are not encoders), and its modules have none of their layouts "
        "(tried: bert/roberta/xlm-roberta/electra, distilbert, deberta-v2, modernbert, mpnet); supported: "
        "bert | roberta | xlm-roberta | electra | distilbert | deberta-v2 | modernbert | mpnet"
    )
    assert list((tmp_path / "model").iterdir()) == []
    problems = layout_problems(FAMILIES["bert"], AutoModel.from_config(tiny_config("megatron-bert", 30)))
    assert problems[0] == "layer 0: no module or the wrong kind at attention.output.LayerNorm, output.LayerNorm"
    from transformers import XmodConfig

    adapters = layout_problems(FAMILIES["bert"], AutoModel.from_config(XmodConfig(**SHAPE, vocab_size=30)))
    assert adapters[0].startswith("layer 0: unnamed output.adapter_modules.en_XX.dense1.bias")  # a tensor no path names


def test_mpnets_relative_attention_bias_is_shared_and_no_scheme_touches_it(tmp_path, tiny_model_dir):
    write_family_checkpoint("mpnet", tmp_path / "checkpoint", tiny_model_dir)
    export_base_model(str(tmp_path / "checkpoint"), tmp_path / "model").write(tmp_path / "model")
    model_dir, reference = tmp_path / "model", load_file(str(tmp_path / "model" / "model.safetensors"))
    bias = "encoder.relative_attention_bias.weight"
    for condition in (
        Condition("t", 10, 0, 1, k=0),
        Condition("t", 10, 0, 1, scheme="head", layer=2, head_index=1),
        Condition("t", 10, 1, 1, scheme="permutation"),
        Condition("t", 10, 0, 1, scheme="remove", removal="top", removed=(3,)),
    ):
        _, model, record = start(model_dir, condition)
        assert torch.equal(model.encoder.state_dict()[bias], reference[bias]), condition.slug
        assert not any(e["name"].startswith("encoder.relative") for e in record["reinitialised"])
