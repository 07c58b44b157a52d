"""Stage probe@<task>: linear probes per layer on the cached frozen features (paper §3),
with control tasks, online-code MDL and several probe seeds (src/probing/probes.py).

Writes the per-layer scores of every seed (JSON) and the per-example eval predictions as
[seeds, layers, examples] (npz), so the report can resample eval examples jointly with the
finetuning runs."""

import argparse
from pathlib import Path

import numpy as np
import torch

from src.core.files import write_json_atomically
from src.core.seeds import derive_seed
from src.params.load import load_config
from src.params.stage import run_stage
from src.probing.probes import control_labels, probe_seed
from src.tasks import splits
from src.tasks.registry import get_task


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--task", required=True)
    parser.add_argument("--tokens", type=Path, required=True, help="the task's tokens.npz")
    parser.add_argument("--features", type=Path, required=True)
    parser.add_argument("--out", type=Path, required=True, help="the per-layer scores (JSON)")
    parser.add_argument("--predictions", type=Path, required=True, help="the eval predictions (npz)")
    args = parser.parse_args()

    # The probes' matmuls are tiny ([64, layers, hidden] x [hidden, classes]): a second thread
    # only adds synchronisation (docs/probes.md: 7.6 s with one thread, 80 s with two, under load).
    torch.set_num_threads(1)
    config = load_config()
    probe, task = config.probe, get_task(args.task)
    stored = {split: splits.load_split(args.tokens, split) for split in ("train", "eval")}
    labels = {split: s.labels for split, s in stored.items()}
    # One control task per (seed, task): every probe seed is trained on the same control labels.
    control = dict(
        zip(stored, control_labels(list(stored.values()), labels["train"], derive_seed(config.seed, task.name)))
    )
    with np.load(args.features) as cached:
        features = {split: cached[split] for split in stored}
    # Seed 0 is the base seed, as the single probe before probe seeds existed: its numbers stay.
    seeds = [config.seed] + [derive_seed(config.seed, "probe", task.name, s) for s in range(1, probe.seeds)]
    outcomes = [probe_seed(task, features, labels, control, probe, seed) for seed in seeds]
    rows = [
        {
            "layer": layer,
            "seed": s,
            "scores": outcome.scores[layer],
            "control_scores": outcome.control_scores[layer],
            "codelength_bits": None if outcome.codelength_bits is None else float(outcome.codelength_bits[layer]),
        }
        for s, outcome in enumerate(outcomes)
        for layer in range(len(outcome.scores))
    ]
    result = {
        "task": args.task,
        "metric": task.headline,
        "pooling": probe.pooling,
        "train_examples": len(labels["train"]),
        "eval_examples": len(labels["eval"]),
        "seeds": seeds,
        "mdl_portions": list(probe.mdl_portions),
        "uniform_bits": outcomes[0].uniform_bits,
        "layers": rows,
    }
    write_json_atomically(args.out, result)
    predictions = np.stack([outcome.predictions for outcome in outcomes])
    np.savez_compressed(
        args.predictions, predictions=predictions.astype(np.int8 if predictions.dtype.kind == "i" else np.float16)
    )
    mean = np.mean([[s[task.headline] for s in outcome.scores] for outcome in outcomes], axis=0)
    control_mean = np.mean([[s[task.headline] for s in outcome.control_scores] for outcome in outcomes], axis=0)
    print(
        f"probe {args.task} ({task.headline} by layer, mean of {len(seeds)} seeds): "
        + " ".join(f"{v:.3f}" for v in mean)
    )
    print(f"probe {args.task} (selectivity by layer): " + " ".join(f"{v:.3f}" for v in mean - control_mean))


if __name__ == "__main__":
    run_stage(main)
