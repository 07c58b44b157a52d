"""Stage validate: all of params.yaml checked before any other stage runs.

Every other stage depends on this stage's output, so `dvc repro` runs it first, and DVC
deletes a stage's outputs just before running that stage: a bad value (a typo'd key, a
focus value out of range, an empty probe.tasks) must stop the pipeline here, before any
result is removed. The output's content is the same for every valid params.yaml, so a
valid change invalidates nothing downstream. Cheap on purpose: no torch import.

k, layers and heads are checked against the model's depth whether or not it is prepared: the
prepared model's base.json (model.max_length too), else an embedded model's pinned shape or a
local folder's config.json; a hub id cannot be read offline and is said to be unchecked (the
prepare_model stage checks it). Every training size is checked against its task's examples, and
a GLUE or SQuAD folder a listed task reads must hold its files (src/params/preflight.py). The
executor's backend must be installed (submitit for slurm, ray for ray). A study with fewer trials
than the report's tests are calibrated at is valid, and gets a one-line warning: its claims will
give no verdict; so does a focus condition of one trial, whose metrics/focus.json has no interval.
Last, one line says what the params will cost: the runs to train and to keep, and an estimate of
the time (src/params/cost.py).
"""

import argparse
import sys
from pathlib import Path

from src.params.cost import cost, cost_line
from src.params.load import check_backend_installed, load_config, trials_below
from src.params.preflight import check_sizes, focus_trials_warning, model_shape, training_pools
from src.params.stage import run_stage
from src.stats.validity import MEASURED_TRIALS

VALID = "params.yaml is valid (src/config/)\n"


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument(
        "--model",
        type=Path,
        required=True,
        help="the prepared base model, if any (not a dependency: it may not exist yet)",
    )
    parser.add_argument("--out", type=Path, required=True)
    parser.add_argument("--runs", type=Path, default=Path("data/runs"), help="finished runs (kept, not trained)")
    args = parser.parse_args()

    config = load_config()
    shape = model_shape(args.model, config.model.name)
    if shape.note:
        print(shape.note)
    load_config(limits=shape.limits)
    pools = training_pools(config.data)
    check_sizes(config, pools)
    check_backend_installed(config.executor)
    for warning in [*trials_below(config.studies, min(MEASURED_TRIALS)), *focus_trials_warning(config)]:
        print(f"warning: {warning}", file=sys.stderr)
    for study in config.studies.values():
        for notice in study.chain_notices():
            print(notice)
    print(cost_line(cost(config, shape, pools, args.runs), config.model.name))
    args.out.parent.mkdir(parents=True, exist_ok=True)
    args.out.write_text(VALID)
    print(VALID.strip())


if __name__ == "__main__":
    run_stage(main)
