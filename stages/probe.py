"""Stage probe@<task>: linear probes per layer on the cached frozen features (paper §3),
with control tasks, online-code MDL and several probe seeds (src/probing/probes.py).

Writes the per-layer scores of every seed (JSON) and the per-example eval predictions as
[seeds, layers, examples] (npz), so the report can resample eval examples jointly with the
finetuning runs (src/artefacts/probe_result.py)."""

import argparse
from pathlib import Path

import torch

from src.artefacts.probe_result import write_probe_predictions
from src.params.load import load_config
from src.params.stage import run_stage
from src.probing.probes import probe_task


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
    result, predictions = probe_task(args.task, args.tokens, args.features, load_config())
    result.write(args.out)
    write_probe_predictions(args.predictions, predictions)
    mean, control = result.by_layer().mean(axis=0), result.by_layer("control_scores").mean(axis=0)
    print(
        f"probe {args.task} ({result.metric} by layer, mean of {len(result.seeds)} seeds): "
        + " ".join(f"{v:.3f}" for v in mean)
    )
    print(f"probe {args.task} (selectivity by layer): " + " ".join(f"{v:.3f}" for v in mean - control))


if __name__ == "__main__":
    run_stage(main)
