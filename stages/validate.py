"""Stage validate: all of params.yaml checked before any other stage runs.

Every other stage depends on this stage's output, so `dvc repro` runs it first, and DVC
deletes a stage's outputs just before running that stage: a bad value (a typo'd key, a
focus value out of range, an empty probe.tasks) must stop the pipeline here, before any
result is removed. The output's content is the same for every valid params.yaml, so a
valid change invalidates nothing downstream. Cheap on purpose: no torch import.

Once the base model is prepared (and is the one params.yaml names), k, layers, heads and
model.max_length are checked against it too; a newly named model is checked by the
prepare_model stage, whose only output is that model. The executor's backend must be
installed (submitit for slurm, ray for ray). A study with fewer trials than the report's tests are
calibrated at is valid, and gets a one-line warning: its claims will give no verdict.
"""

import argparse
import sys
from pathlib import Path

from src.params.load import check_backend_installed, load_config, prepared_model_limits, trials_below
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
    args = parser.parse_args()

    config = load_config()
    load_config(limits=prepared_model_limits(args.model, config.model.name))
    check_backend_installed(config.executor)
    for warning in trials_below(config.studies, min(MEASURED_TRIALS)):
        print(f"warning: {warning}", file=sys.stderr)
    for study in config.studies.values():
        for notice in study.chain_notices():
            print(notice)
    args.out.parent.mkdir(parents=True, exist_ok=True)
    args.out.write_text(VALID)
    print(VALID.strip())


if __name__ == "__main__":
    run_stage(main)
