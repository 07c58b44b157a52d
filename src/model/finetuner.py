"""The finetuning model of one condition: the base encoder with the condition's layers
reinitialised, permuted, removed or a head reset, plus a fresh task head.

A condition's starting weights are a pure function of (base, condition, seed): no
checkpoint is written per condition, only a manifest of what was reinitialised.
"""

from __future__ import annotations

import sys
from pathlib import Path

import torch
from torch import nn

from src.conditions.condition import Condition
from src.model import reinit
from src.model.base import load_encoder
from src.model.families import config_of, family_of

# `pooling: cls` on a pooler that was never trained (bias exactly 0, or no pooler tensors in the checkpoint): the
# pooler starts from the seed, as the task head does. A fallback (src/artefacts/run_result.py RunResult.fallbacks).
POOLER_REINITIALISED = "pooler reinitialised"


def masked_mean(hidden: torch.Tensor, mask: torch.Tensor) -> torch.Tensor:
    """Mean over real tokens only: padding must not dilute short sentences."""
    mask = mask.unsqueeze(-1).to(hidden.dtype)
    return (hidden * mask).sum(1) / mask.sum(1).clamp(min=1)


def encode(encoder: nn.Module, input_ids, attention_mask, token_type_ids, **options):
    """The encoder's forward pass; segment ids only for families trained with them."""
    types = {"token_type_ids": token_type_ids} if family_of(encoder).token_type_ids else {}
    return encoder(input_ids=input_ids, attention_mask=attention_mask, **types, **options)


class Finetuner(nn.Module):
    """Encoder + task head. `mean` pooling: attention-masked mean of the last layer -> linear
    (the paper's text, same as its probes); `cls`: BERT's [CLS] pooler -> linear (its code),
    or, in families without a pooler, the first token's last hidden state -> linear.
    `token_level` (span QA): no pooling, every token's last hidden state -> linear (start and
    end logits, [batch, tokens, 2]), as BertForQuestionAnswering."""

    def __init__(self, encoder: nn.Module, num_labels: int, pooling: str, token_level: bool = False):
        super().__init__()
        self.encoder, self.pooling, self.token_level = encoder, pooling, token_level
        self.has_pooler = family_of(encoder).pooler
        self.dropout = nn.Dropout(getattr(config_of(encoder), family_of(encoder).dropout))
        self.classifier = nn.Linear(config_of(encoder).hidden_size, num_labels)

    def forward(self, input_ids, attention_mask, token_type_ids, layer_features: list | None = None):
        """Logits (per token for span QA). With a `layer_features` list, the same pass also
        appends the batch's attention-masked mean of every layer's hidden states ([batch,
        L + 1, hidden], 0 = embeddings), as the probes pool them: the eval pass's
        representations for CKA."""
        out = encode(
            self.encoder, input_ids, attention_mask, token_type_ids, output_hidden_states=layer_features is not None
        )
        if layer_features is not None:
            layer_features.append(torch.stack([masked_mean(h, attention_mask) for h in out.hidden_states], dim=1))
        if self.token_level:
            return self.classifier(self.dropout(out.last_hidden_state))
        if self.pooling == "mean":
            pooled = masked_mean(out.last_hidden_state, attention_mask)
        else:
            pooled = out.pooler_output if self.has_pooler else out.last_hidden_state[:, 0]
        return self.classifier(self.dropout(pooled))


def reinitialised_layer_parameters(model: Finetuner, manifest: list[dict]) -> set[str]:
    """The model's parameter names of the whole encoder-layer tensors in `manifest` (the
    lr multiplier's group): not head slices (named with [...]), not pooler or task head."""
    stack = family_of(model.encoder).stack + "."
    return {f"encoder.{e['name']}" for e in manifest if e["name"].startswith(stack) and "[" not in e["name"]}


def new_task_head(
    model: Finetuner, num_labels: int, condition: Condition, seed: int, sigma: float, token_level: bool = False
) -> list[dict]:
    """A fresh classifier (BERT's init: normal weights, zero bias), per sequence or, with
    `token_level`, per token (span QA); the head is always new.
    Initialised on the CPU, then moved to the model's device: reinit's generators are CPU
    torch.Generators, which torch refuses for a CUDA tensor (sequential finetuning builds a
    second head after the model moved to the GPU), and CPU draws keep a head identical on
    every device."""
    head = nn.Linear(model.classifier.in_features, num_labels)
    written = reinit.init_module(head, "classifier", "paper", sigma, seed, condition.stream("head"))
    model.classifier = head.to(model.classifier.weight.device)
    model.token_level = token_level
    return written


def build_finetuner(
    model_dir: Path, condition: Condition, num_labels: int, seed: int, token_level: bool = False
) -> tuple[Finetuner, dict]:
    """The starting model of `condition` and a record of what it did to the pretrained
    weights: `reinitialised` (every tensor given fresh weights), `layer_order`, `depth` (the depth
    audit: how many layers the model has and which original layers they are), and `fallbacks` (each
    fallback it took, src/artefacts/run_result.py)."""
    encoder = load_encoder(model_dir, with_pooler=condition.pooling == "cls")
    num_layers = len(reinit.encoder_layers(encoder))
    condition.check(num_layers, config_of(encoder).num_attention_heads)
    order = condition.layer_order(num_layers, seed)
    reinit.permute_layers(encoder, order)
    manifest = reinit.reinit_layers(
        encoder,
        condition.reinit_layers(num_layers),
        condition.recipe,
        seed,
        condition.stream("reinit"),
        condition.keep_layernorm,
    )
    for layer, head in condition.reinit_heads():
        manifest += reinit.reinit_head(encoder, layer, head, condition.recipe, seed, condition.stream("reinit"))
    depth = reinit.remove_layers(encoder, condition.removed_layers())
    sigma = config_of(encoder).initializer_range
    fallbacks = []
    if condition.pooling == "cls" and reinit.pooler_looks_untrained(encoder):
        manifest += reinit.init_module(
            encoder.get_submodule("pooler"), "pooler", "paper", sigma, seed, condition.stream("head")
        )
        fallbacks.append(POOLER_REINITIALISED)
        print(
            f"note: {condition.describe()}: pooling = 'cls' on a pooler that was never trained (bias exactly 0, or "
            "no pooler tensors in the checkpoint): the pooler is re-initialised from the seed, as the task head is",
            file=sys.stderr,
            flush=True,
        )
    model = Finetuner(encoder, num_labels, condition.pooling)
    manifest += new_task_head(model, num_labels, condition, seed, sigma, token_level)
    return model, {"reinitialised": manifest, "layer_order": order, "depth": depth, "fallbacks": fallbacks}
