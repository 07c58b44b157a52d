"""base.json: what prepare_model recorded about the base model (one writer, one reader).

Read without torch or transformers, so cheap stages (validate) can check params against
the model's shape.
"""

from __future__ import annotations

import json
from dataclasses import asdict, dataclass
from pathlib import Path

FILENAME = "base.json"


@dataclass(frozen=True)
class BaseModelRecord:
    name: str  # model.name as params.yaml gave it
    source: str  # where the weights came from
    model_type: str
    num_layers: int
    hidden_size: int
    num_heads: int
    weights_sha256: str
    max_positions: int  # the longest input in tokens its position embeddings allow (src/model/families.py)
    trained_for: str = ""  # what the weights were trained for, where the model says ("": not stated)

    def write(self, model_dir: Path) -> None:
        (Path(model_dir) / FILENAME).write_text(json.dumps(asdict(self), indent=2) + "\n")

    @classmethod
    def read(cls, model_dir: Path) -> BaseModelRecord:
        return cls(**json.loads((Path(model_dir) / FILENAME).read_text()))
