"""Stage finetune@<study> and stage focus: run every condition of a study (or the focus
condition's trials), one result JSON per condition (src/train/schedule.py).

A study trains only the conditions whose training run no earlier study trains
(src/conditions/studies.py). The focus stage copies a study's result when it has the
same fingerprint (--reuse): with the defaults, every focus trial is a progressive-study run.
"""

import argparse
from pathlib import Path

from src.conditions.studies import all_study_conditions, focus_conditions, trained_conditions
from src.core.files import write_json_atomically
from src.params.load import load_config, model_limits
from src.params.stage import run_stage
from src.stats.intervals import mean_ci
from src.tasks.registry import get_task
from src.train.schedule import check_sizes, run_all


def main() -> None:
    parser = argparse.ArgumentParser()
    group = parser.add_mutually_exclusive_group(required=True)
    group.add_argument("--study", help="a section of studies: in params.yaml")
    group.add_argument("--focus", action="store_true", help="the focus condition (task, size, k, trials)")
    parser.add_argument("--model", type=Path, required=True)
    parser.add_argument("--tasks", type=Path, required=True, help="the data stage's output folder")
    parser.add_argument("--out", type=Path, required=True)
    parser.add_argument("--summary", type=Path, help="write mean and CI here (focus stage)")
    parser.add_argument(
        "--reuse", type=Path, help="the studies' output folder: copy a result found there with the same fingerprint"
    )
    args = parser.parse_args()

    limits = model_limits(args.model)
    config = load_config(limits=limits)
    if args.focus:
        conditions, where, log_epochs = focus_conditions(config), "the focus condition", False
    else:
        reported = all_study_conditions(config, limits.num_layers)
        conditions, where = trained_conditions(reported, args.study, limits.num_layers), f"studies.{args.study}"
        log_epochs = config.studies[args.study].epochs is not None
    for condition in conditions:
        condition.check(limits.num_layers, limits.num_heads)
    check_sizes(conditions, args.tasks, where)
    results = run_all(conditions, config, args.model, args.tasks, args.out, where, log_epochs, args.reuse)

    if args.summary:
        metric = get_task(config.task).headline
        mean, half, n = mean_ci([r.scores[metric] for r in results if r.ok])
        # an undefined statistic is null (NaN is not JSON), with the reason beside it
        summary = {
            "task": config.task,
            "size": config.size,
            "k": config.k,
            "metric": metric,
            "mean": mean if n else None,
            "ci95": half if n >= 2 else None,
            "n": n,
            "diverged": len(results) - n,
        }
        if n < 2:
            summary["ci95_note"] = f"a confidence interval needs at least 2 finished runs; this condition has {n}"
        write_json_atomically(args.summary, summary)


if __name__ == "__main__":
    run_stage(main)
