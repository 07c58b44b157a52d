"""Stage finetune@<task>-<size>-<k> (a grid cell) and stage focus: finetune one condition.

Runs trials 0..trials-1 of (task, size, k) and writes one JSON per trial into --out.
With --summary (the focus stage) it also writes the mean and 95% CI as a DVC metric.
"""

import argparse
from pathlib import Path

from src.condition import Condition
from src.experiment import run_condition, write_json_atomically
from src.model import load_tokenizer, num_encoder_layers
from src.params import load_params
from src.stats import mean_ci


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--task", required=True)
    for name in ("size", "k", "trials"):
        parser.add_argument(f"--{name}", type=int, required=True)
    parser.add_argument("--model", type=Path, required=True)
    parser.add_argument("--data", type=Path, required=True, help="the task's data folder")
    parser.add_argument("--out", type=Path, required=True)
    parser.add_argument("--summary", type=Path, help="write mean and CI here (focus stage)")
    args = parser.parse_args()

    params = load_params(num_layers=num_encoder_layers(args.model))
    pad_id = load_tokenizer(args.model).pad_token_id
    results = []
    for trial in range(args.trials):
        condition = Condition(args.task, args.size, args.k, trial, recipe=params["recipe"], head=params["head"])
        result = run_condition(condition, params, args.model, args.data, pad_id)
        write_json_atomically(args.out / f"trial{trial}.json", result)
        results.append(result)
        print(f"{args.task} n={args.size} k={args.k} trial {trial}: {result['status']} {result['scores']} ({result['train_seconds']} s)")

    if args.summary:
        metric = results[0]["metric"]
        finished = [r["scores"][metric] for r in results if r["status"] == "ok"]
        mean, half, n = mean_ci(finished)
        summary = {"task": args.task, "size": args.size, "k": args.k, "metric": metric, "mean": mean, "ci95": half, "n": n, "diverged": len(results) - n}
        write_json_atomically(args.summary, summary)


if __name__ == "__main__":
    main()
