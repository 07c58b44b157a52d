"""Stage probe@<task>: a linear probe per layer on the cached frozen features (paper §3)."""

import argparse
from pathlib import Path

import numpy as np

from src.config.load import load_config
from src.data import tokens
from src.files import write_json_atomically
from src.probing.probes import train_probes
from src.stage import run_stage
from src.tasks.registry import get_task


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--task", required=True)
    parser.add_argument("--tokens", type=Path, required=True, help="the task's tokens.npz")
    parser.add_argument("--features", type=Path, required=True)
    parser.add_argument("--out", type=Path, required=True)
    args = parser.parse_args()

    config = load_config()
    probe, task = config.probe, get_task(args.task)
    labels = {split: tokens.load_split(args.tokens, split).labels for split in ("train", "eval")}
    with np.load(args.features) as features:
        per_layer = train_probes(
            task,
            features["train"],
            labels["train"],
            features["eval"],
            labels["eval"],
            probe.epochs,
            probe.lr,
            probe.train_batch_size,
            config.seed,
        )
    result = {
        "task": args.task,
        "metric": task.headline,
        "train_examples": len(labels["train"]),
        "layers": [{"layer": i, "scores": s} for i, s in enumerate(per_layer)],
    }
    write_json_atomically(args.out, result)
    print(f"probe {args.task} ({task.headline} by layer): " + " ".join(f"{s[task.headline]:.3f}" for s in per_layer))


if __name__ == "__main__":
    run_stage(main)
