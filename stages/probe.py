"""Stage probe@<task>: a linear probe per layer on the cached frozen features (paper §3)."""

import argparse
from pathlib import Path

import numpy as np

from src import data
from src.errors import run_stage
from src.experiment import write_json_atomically
from src.params import load_params
from src.probing import train_probes
from src.tasks import get_task


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--task", required=True)
    parser.add_argument("--tokens", type=Path, required=True, help="the task's tokens.npz")
    parser.add_argument("--features", type=Path, required=True)
    parser.add_argument("--out", type=Path, required=True)
    args = parser.parse_args()

    params = load_params()
    cfg, task = params["probe"], get_task(args.task)
    labels = {split: data.load_split(args.tokens, split).labels for split in ("train", "eval")}
    with np.load(args.features) as features:
        per_layer = train_probes(task, features["train"], labels["train"], features["eval"], labels["eval"], cfg["epochs"], cfg["lr"], cfg["train_batch_size"], params["seed"])
    result = {"task": args.task, "metric": task.metrics[0], "train_examples": len(labels["train"]), "layers": [{"layer": i, "scores": s} for i, s in enumerate(per_layer)]}
    write_json_atomically(args.out, result)
    print(f"probe {args.task} ({task.metrics[0]} by layer): " + " ".join(f"{s[task.metrics[0]]:.3f}" for s in per_layer))


if __name__ == "__main__":
    run_stage(main)
