"""Loading the base checkpoint that prepare_model stored under data/model (src/model/export.py
writes it): the encoder and the tokenizer, as every stage that trains or encodes reads them."""

from __future__ import annotations

from pathlib import Path

from torch import nn

from src.model.families import family_of


def model_config(model_dir: Path):
    from transformers import AutoConfig

    return AutoConfig.from_pretrained(model_dir, trust_remote_code=False)


def load_encoder(model_dir: Path, with_pooler: bool) -> nn.Module:
    from transformers import AutoModel
    from transformers.utils import logging

    logging.set_verbosity_error()  # an unused pooler in the checkpoint is expected, not news
    logging.disable_progress_bar()

    # Only families with BERT's pooler take add_pooling_layer; the others have none to add.
    pooler = {"add_pooling_layer": with_pooler} if family_of(model_config(model_dir)).pooler else {}
    return AutoModel.from_pretrained(model_dir, use_safetensors=True, trust_remote_code=False, **pooler)


def load_tokenizer(model_dir: Path):
    from transformers import AutoTokenizer

    return AutoTokenizer.from_pretrained(model_dir)
