"""Where each supported encoder family keeps the parts that reinitialisation touches.

One explicit entry per `config.model_type`, checked against transformers 5.23.0's
modeling code (tests/unit/model/test_families.py builds a tiny model of each and checks that the
paths below name every parameterised sublayer of a layer, and nothing else). Paths are
relative to the base model (`AutoModel`) for `stack`, and to one layer for the rest.
Everything that needs a family's names (reinit, permutation, head reinit, removal, weight
change, token types, pooling, dropout) asks this table; no other module spells them.

A `model_type` not in the table (CamemBERT, Data2Vec-text, ERNIE: BERT's layer under
another name) is matched by its module layout: the first family whose paths pass the
layout audit (`layout_problems`) on every layer of the model is used, with the segment
ids, pooler and dropout the model itself has. It is refused only when no layout fits.
"""

from __future__ import annotations

import inspect
from dataclasses import dataclass, replace
from typing import TYPE_CHECKING, cast

import torch
from torch import nn

from src.core.errors import ModelError

if TYPE_CHECKING:
    from transformers import PreTrainedConfig

# Models whose position ids start after the padding id (RoBERTa's embeddings): of
# max_position_embeddings, pad_token_id + 1 are never used by a token.
PADDING_OFFSET_MODELS = (
    "roberta",
    "xlm-roberta",
    "camembert",
    "roberta-prelayernorm",
    "data2vec-text",
    "xmod",
    "mpnet",  # padding_idx 1 in its embeddings
)


def max_positions(model_type: str, max_position_embeddings: int, pad_token_id: int | None) -> int:
    """The longest input in tokens a model's position embeddings allow (RoBERTa: 514 - 2 = 512)."""
    if model_type in PADDING_OFFSET_MODELS:
        return max_position_embeddings - ((1 if pad_token_id is None else pad_token_id) + 1)
    return max_position_embeddings


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

    @property
    def qkv(self) -> tuple[str, str, str]:
        """The paths of the separate query, key and value projections (every family without fused_qkv has them)."""
        if self.query is None or self.key is None or self.value is None:
            raise ValueError(f"family {self.name} has no separate query, key and value projections")
        return self.query, self.key, self.value

    def layers(self, model: nn.Module) -> nn.ModuleList:
        """The stack of encoder layers of a base model of this family."""
        stack = model.get_submodule(self.stack)
        if not isinstance(stack, nn.ModuleList):
            raise ModelError(f"{self.stack} of a {self.name} model is a {type(stack).__name__}, not a ModuleList")
        return stack

    def head_projections(self, layer: nn.Module) -> list[tuple[str, str | None]]:
        """(Linear path, which third of its rows (query, key or value; None = all rows)) of every
        projection a head's rows are taken from, in this layer."""
        if self.fused_qkv:
            return [(self.fused_qkv, part) for part in ("query", "key", "value")]
        optional = [p for p in self.optional_head_projections if _has(layer, p)]
        return [(p, None) for p in (*self.qkv, *optional)]

    def sublayer_weights(self, layer: nn.Module) -> dict[str, torch.Tensor]:
        """The six weight matrices of the weight-change study (Singh & Giovanardi), by the
        names it used; a fused q/k/v matrix is cut into its three parts."""
        names = ("query", "key", "value")
        if self.fused_qkv:
            fused = linear(layer, self.fused_qkv).weight
            width = fused.shape[0] // 3
            qkv = {name: fused[i * width : (i + 1) * width] for i, name in enumerate(names)}
        else:
            qkv = {name: linear(layer, path).weight for name, path in zip(names, self.qkv)}
        return {
            **qkv,
            "attention_output": linear(layer, self.attention_output).weight,
            "intermediate": linear(layer, self.ffn_in).weight,
            "output": linear(layer, self.ffn_out).weight,
        }


def linear(module: nn.Module, path: str) -> nn.Linear:
    """The Linear at `path` in `module` (each projection path of a family names one; layout_problems checks it)."""
    found = module.get_submodule(path)
    if not isinstance(found, nn.Linear):
        raise ModelError(f"{path} is a {type(found).__name__}, not a Linear")
    return found


def layout_problems(family: Family, model: nn.Module) -> list[str]:
    """The layout audit of `family` on a base model (empty: it fits): its stack is a
    non-empty ModuleList, and in every layer each path resolves to a module of its kind
    (projections Linear, norms LayerNorm, or Identity where a layer has none), and the
    paths together name every parameter of the layer."""
    stack = model.get_submodule(family.stack) if _has(model, family.stack) else None
    if not isinstance(stack, nn.ModuleList):
        return [f"no layer stack at {family.stack}"]
    problems = [] if len(stack) else [f"{family.stack} is empty"]
    for index, layer in enumerate(stack):
        linears = [
            family.attention_output,
            family.ffn_in,
            family.ffn_out,
            *(p for p, _ in family.head_projections(layer)),
        ]
        kinds = {**{p: (nn.Linear,) for p in linears}, **{p: (nn.LayerNorm, nn.Identity) for p in family.layernorms}}
        wrong = [p for p, kind in kinds.items() if not _has(layer, p) or not isinstance(layer.get_submodule(p), kind)]
        named = {f"{p}.{n}" for p in kinds if p not in wrong for n, _ in layer.get_submodule(p).named_parameters()}
        unnamed = sorted({n for n, _ in layer.named_parameters()} - named)
        problems += [
            f"layer {index}: {what} {', '.join(paths)}"
            for what, paths in (
                ("no module or the wrong kind at", wrong),
                ("unnamed", unnamed),
            )
            if paths
        ]
    return problems


def _has_attribute(layer: nn.Module, path: str) -> bool:
    owner, _, name = path.rpartition(".")
    return (not owner or _has(layer, owner)) and hasattr(layer.get_submodule(owner) if owner else layer, name)


def _has(module: nn.Module, path: str) -> bool:
    try:
        module.get_submodule(path)
        return True
    except AttributeError:
        return False


def config_of(model: nn.Module) -> PreTrainedConfig:
    """A transformers model's config (nn.Module types every attribute it does not declare as a tensor or module)."""
    return cast("PreTrainedConfig", model.config)


def fused_rows(part: str, head: int, width: int, hidden: int) -> slice:
    """Rows of head `head` of `part` (query, key or value) in a fused [q | k | v] weight."""
    start = ("query", "key", "value").index(part) * hidden + head * width
    return slice(start, start + width)


BERT = Family(
    "bert",
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
        BERT,
        # RoBERTa / XLM-R: one segment type (type_vocab_size 1), tokenizers give no segment ids.
        replace(BERT, name="roberta", token_type_ids=False),
        replace(BERT, name="xlm-roberta", token_type_ids=False),
        # ELECTRA's discriminator is BERT's layer; its base model has no pooler.
        replace(BERT, name="electra", pooler=False),
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
        # MPNet (all-mpnet-base-v2): BERT's layer with its attention in attention.attn.{q,k,v,o};
        # no segment ids. Its relative-position bias (encoder.relative_attention_bias, one
        # embedding of buckets x heads) is computed once in the encoder and added in every
        # layer: not a layer's tensor, so no scheme reinitialises, moves or removes it (k = 0
        # keeps it pretrained, like the word embeddings), and head reinit leaves its column.
        Family(
            "mpnet",
            stack="encoder.layer",
            query="attention.attn.q",
            key="attention.attn.k",
            value="attention.attn.v",
            attention_output="attention.attn.o",
            ffn_in="intermediate.dense",
            ffn_out="output.dense",
            layernorms=("attention.LayerNorm", "output.LayerNorm"),
            token_type_ids=False,
        ),
    )
}

REFUSED = {
    "albert": "ALBERT shares one set of layer weights across every depth, so reinitialising or "
    "moving 'layer k' alone has no meaning",
}


class UnsupportedModelError(ModelError):
    """A model whose family is not in the table (one clear message, no traceback)."""


_MATCHED: dict[str, Family] = {}  # model_type -> the family its layout matched (asked on every forward pass)


def family_of(config, name: str | None = None) -> Family:
    """The family of a model config (or of a model: its .config): its entry in the table,
    else the family whose layout it has. `name` (model.name in params.yaml) is named in a refusal."""
    model = config if isinstance(config, nn.Module) else None
    config = getattr(config, "config", config)
    model_type = getattr(config, "model_type", None)
    prefix = f"params.yaml: model.name = {name!r}: " if name else ""
    if model_type is None:  # not a transformers model or config
        raise _not_an_encoder(prefix, model_type)
    if model_type in FAMILIES:
        return FAMILIES[model_type]
    if model_type in _MATCHED:
        return _MATCHED[model_type]
    if model_type in REFUSED:
        raise UnsupportedModelError(
            f"{prefix}model_type {model_type!r} is refused: {REFUSED[model_type]}; supported: {' | '.join(FAMILIES)}"
        )
    if model is None:
        model = _skeleton(config)
    for family, *_ in LAYOUTS.values():
        if model is not None and not layout_problems(family, model):
            _MATCHED[model_type] = replace(
                family,
                name=model_type,
                token_type_ids="token_type_ids" in inspect.signature(model.forward).parameters
                and getattr(config, "type_vocab_size", 0) > 1,
                pooler=isinstance(getattr(getattr(model, "pooler", None), "dense", None), nn.Linear),
                dropout=family.dropout if hasattr(config, family.dropout) else "hidden_dropout_prob",
                # what belongs to a position and this model has (Splinter's layers have no layer_idx)
                position_attributes=tuple(
                    path
                    for path in family.position_attributes
                    if all(_has_attribute(layer, path) for layer in family.layers(model))
                ),
            )
            return _MATCHED[model_type]
    raise _not_an_encoder(prefix, model_type)


def _not_an_encoder(prefix: str, model_type: str | None) -> UnsupportedModelError:
    return UnsupportedModelError(
        f"{prefix}model_type {model_type!r} is refused: it is not one of the supported encoder families "
        "(decoders such as GPT-2 are not encoders), and its modules have none of their layouts (tried: "
        f"{', '.join('/'.join(f.name for f in same) for same in LAYOUTS.values())}); supported: {' | '.join(FAMILIES)}"
    )


def _skeleton(config) -> nn.Module | None:
    """The base model of `config` without weights (on the meta device), to read its layout; None
    when transformers has no base model for it."""
    from transformers import AutoModel

    try:
        with torch.device("meta"):
            return AutoModel.from_config(config, trust_remote_code=False)
    except (ValueError, KeyError):  # no AutoModel class for this config
        return None


def _layout(family: Family) -> tuple:
    return tuple(
        getattr(family, field)
        for field in ("stack", "attention_output", "ffn_in", "ffn_out", "layernorms", "query", "key", "value")
    ) + (family.fused_qkv, family.optional_head_projections, family.position_attributes)


# The distinct layouts an unlisted model_type is matched against, each with the families that
# have it (BERT, RoBERTa, XLM-R and ELECTRA share one: they differ in segment ids and pooler,
# which a matched model takes from itself).
LAYOUTS: dict[tuple, list[Family]] = {}
for _family in FAMILIES.values():
    LAYOUTS.setdefault(_layout(_family), []).append(_family)
