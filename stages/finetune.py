"""Stage finetune@<study> and stage focus: run every condition of a study (or the focus
condition's trials), one result JSON per condition (src/train/schedule.py).

A study trains only the conditions whose training run no earlier study trains
(src/conditions/studies.py). The focus stage copies a study's result when it has the
same fingerprint (--reuse): with the defaults, every focus trial is a progressive-study run.
The focus summary (mean and CI): src/artefacts/focus.py.
"""

import argparse
from pathlib import Path

from src.artefacts.focus import FocusSummary
from src.params.load import load_config, model_limits
from src.params.stage import run_stage
from src.train.schedule import run_stage_conditions


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
    results = run_stage_conditions(config, limits, args.model, args.tasks, args.out, args.study, args.reuse)
    if args.summary:
        FocusSummary.of(config, results).write(args.summary)


if __name__ == "__main__":
    run_stage(main)
