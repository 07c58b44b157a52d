"""Where each supported encoder family keeps the parts that reinitialisation touches.

One explicit entry per `config.model_type`, checked against transformers 5.23.0's
modeling code (tests/test_families.py builds a tiny model of each and checks that the
paths below name every parameterised sublayer of a layer, and nothing else). Paths are
relative to the base model (`AutoModel`) for `stack`, and to one layer for the rest.
Everything that needs a family's names (reinit, permutation, head reinit, weight change,
token types, pooling, dropout) asks this table; no other module spells them.
"""

from __future__ import annotations

from dataclasses import dataclass

import torch
from torch import nn

from src.errors import ModelError


@dataclass(frozen=True)
class Family:
    name: str
    stack: str  # the nn.ModuleList of encoder layers, from the base model
    attention_output: str  # Linear mixing the heads back; head h owns its input columns
    ffn_in: str
    ffn_out: str
    layernorms: tuple[str, ...]  # every LayerNorm inside a layer (keep_layernorm keeps these)
    # Separate projections (query, key, value), head h = output rows h*d..(h+1)*d of each;
    # or one fused Linear whose output rows are [query | key | value], each heads x d.
    query: str | None = None
    key: str | None = None
    value: str | None = None
    fused_qkv: str | None = None
    # Further per-head projections a head's rows are cut from (absent in some checkpoints).
    optional_head_projections: tuple[str, ...] = ()
    token_type_ids: bool = True  # the forward pass takes segment ids and was trained with them
    pooler: bool = True  # has BERT's [CLS] pooler (AutoModel's add_pooling_layer)
    dropout: str = "hidden_dropout_prob"  # config field the task head's dropout takes
    # Attributes of a layer that belong to its position in the stack, not to its weights;
    # a permutation moves the weights and leaves these where they were.
    position_attributes: tuple[str, ...] = ()

    def head_projections(self, layer: nn.Module) -> list[tuple[str, slice | None]]:
        """(Linear path, which third of its rows: None = all rows) of every projection a
        head's rows are taken from, in this layer."""
        if self.fused_qkv:
            return [(self.fused_qkv, part) for part in ("query", "key", "value")]
        optional = [p for p in self.optional_head_projections if _has(layer, p)]
        return [(p, None) for p in (self.query, self.key, self.value, *optional)]

    def sublayer_weights(self, layer: nn.Module) -> dict[str, torch.Tensor]:
        """The six weight matrices of the weight-change study (Singh & Giovanardi), by the
        names it used; a fused q/k/v matrix is cut into its three parts."""
        if self.fused_qkv:
            fused = layer.get_submodule(self.fused_qkv).weight
            width = fused.shape[0] // 3
            qkv = {name: fused[i * width : (i + 1) * width] for i, name in enumerate(("query", "key", "value"))}
        else:
            qkv = {name: layer.get_submodule(getattr(self, name)).weight for name in ("query", "key", "value")}
        return {
            **qkv,
            **{
                name: layer.get_submodule(getattr(self, path)).weight
                for name, path in (
                    ("attention_output", "attention_output"),
                    ("intermediate", "ffn_in"),
                    ("output", "ffn_out"),
                )
            },
        }


def _has(module: nn.Module, path: str) -> bool:
    try:
        module.get_submodule(path)
        return True
    except AttributeError:
        return False


def fused_rows(part: str, head: int, width: int, hidden: int) -> slice:
    """Rows of head `head` of `part` (query, key or value) in a fused [q | k | v] weight."""
    start = ("query", "key", "value").index(part) * hidden + head * width
    return slice(start, start + width)


_BERT_LAYER = dict(
    stack="encoder.layer",
    query="attention.self.query",
    key="attention.self.key",
    value="attention.self.value",
    attention_output="attention.output.dense",
    ffn_in="intermediate.dense",
    ffn_out="output.dense",
    layernorms=("attention.output.LayerNorm", "output.LayerNorm"),
    position_attributes=("attention.self.layer_idx",),  # used by decoder caches only; kept per position
)

FAMILIES = {
    family.name: family
    for family in (
        Family("bert", **_BERT_LAYER),
        # RoBERTa / XLM-R: one segment type (type_vocab_size 1), tokenizers give no segment ids.
        Family("roberta", **_BERT_LAYER, token_type_ids=False),
        Family("xlm-roberta", **_BERT_LAYER, token_type_ids=False),
        # ELECTRA's discriminator is BERT's layer; its base model has no pooler.
        Family("electra", **_BERT_LAYER, pooler=False),
        Family(
            "distilbert",
            stack="transformer.layer",
            query="attention.q_lin",
            key="attention.k_lin",
            value="attention.v_lin",
            attention_output="attention.out_lin",
            ffn_in="ffn.lin1",
            ffn_out="ffn.lin2",
            layernorms=("sa_layer_norm", "output_layer_norm"),
            token_type_ids=False,
            pooler=False,
            dropout="dropout",
        ),
        # DeBERTa-v2 and v3 (model_type deberta-v2). Relative-position embeddings live in
        # the encoder, shared by all layers, so they are neither a layer's nor moved. With
        # share_att_key false each layer also has per-head positional projections.
        Family(
            "deberta-v2",
            stack="encoder.layer",
            query="attention.self.query_proj",
            key="attention.self.key_proj",
            value="attention.self.value_proj",
            optional_head_projections=("attention.self.pos_key_proj", "attention.self.pos_query_proj"),
            attention_output="attention.output.dense",
            ffn_in="intermediate.dense",
            ffn_out="output.dense",
            layernorms=("attention.output.LayerNorm", "output.LayerNorm"),
            pooler=False,
        ),
        # ModernBERT: fused Wqkv (rows [q | k | v], each heads x head_dim), pre-norm, no
        # biases; layer 0 has no attn_norm (an Identity: the embeddings' norm precedes it).
        # Global or local (sliding-window) attention is the architecture's schedule by
        # position (config.layer_types), so it stays with the position under permutation.
        Family(
            "modernbert",
            stack="layers",
            fused_qkv="attn.Wqkv",
            attention_output="attn.Wo",
            ffn_in="mlp.Wi",
            ffn_out="mlp.Wo",
            layernorms=("attn_norm", "mlp_norm"),
            token_type_ids=False,
            pooler=False,
            dropout="classifier_dropout",
            position_attributes=("layer_idx", "attention_type", "attn.layer_idx", "attn.sliding_window"),
        ),
    )
}

REFUSED = {
    "albert": "ALBERT shares one set of layer weights across every depth, so reinitialising or "
    "moving 'layer k' alone has no meaning",
}


class UnsupportedModelError(ModelError):
    """A model whose family is not in the table (one clear message, no traceback)."""


def family_of(config) -> Family:
    """The family of a model config (or of a model: its .config)."""
    model_type = getattr(getattr(config, "config", config), "model_type", None)
    if model_type in FAMILIES:
        return FAMILIES[model_type]
    why = REFUSED.get(
        model_type, "it is not one of the supported encoder families (decoders such as GPT-2 are not encoders)"
    )
    raise UnsupportedModelError(f"model_type {model_type!r} is refused: {why}; supported: {' | '.join(FAMILIES)}")
