"""The embedded base models (model.name), pinned on PyPI and prepared offline: their shapes are
known before anything is downloaded, so `validate` checks k, layers and heads against them in a
fresh clone. No torch import."""

from __future__ import annotations

from dataclasses import dataclass


@dataclass(frozen=True)
class EmbeddedModel:
    name: str  # model.name
    model_type: str  # the transformers model type
    num_layers: int
    hidden_size: int
    num_heads: int


EMBEDDED_MODELS: dict[str, EmbeddedModel] = {
    # all-MiniLM-L6-v2 (its config.json)
    "embedded": EmbeddedModel("embedded", "bert", num_layers=6, hidden_size=384, num_heads=12),
    # all-mpnet-base-v2 (its config.json)
    "embedded-base": EmbeddedModel("embedded-base", "mpnet", num_layers=12, hidden_size=768, num_heads=12),
}
