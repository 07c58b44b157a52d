"""How well finetuning learns a task: the full model (k = L) and scratch (k = 0).

    python -m bench.task_accuracy subjectivity --size 128 --trials 3   # --ks 6,0 (default)

Runs each condition through src.train.run.run_condition, the finetune stages' own
path, in one process with train.threads threads, on data/model and data/tasks as
`dvc repro data` builds them (the task must be in data.tasks), with params.yaml's
training settings; the trials are the pipeline's (same seeds, same subsets), so a
condition's score here is the one a study of the same params gets. Prints one JSON
line per run (accuracy, the share of the most predicted class, seconds).
"""

import argparse
import json
import time
from pathlib import Path

from src.conditions.condition import Condition
from src.params.load import load_config
from src.train.executors import run_in_worker
from src.train.run import run_condition
from src.train.schedule import run_settings


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("task")
    parser.add_argument("--size", type=int, default=128)  # the default studies' size
    parser.add_argument("--trials", type=int, default=3)
    parser.add_argument("--ks", default="6,0", help="comma-separated k values")
    parser.add_argument("--model", type=Path, default=Path("data/model"))
    parser.add_argument("--tasks", type=Path, default=Path("data/tasks"))
    args = parser.parse_args()

    config = load_config()
    epochs = config.train.epochs_for(args.size)
    for trial in range(args.trials):
        for k in (int(k) for k in args.ks.split(",")):
            condition = Condition(
                task=args.task,
                size=args.size,
                trial=trial,
                epochs=epochs,
                k=k,
                recipe=config.recipe,
                pooling=config.pooling,
            )
            start = time.time()
            result = run_in_worker(
                config.train.threads, run_condition, condition, run_settings(config, epochs), args.model, args.tasks
            )
            print(
                json.dumps(
                    {
                        "task": args.task,
                        "size": args.size,
                        "k": k,
                        "trial": trial,
                        "status": result.status,
                        "scores": result.scores,
                        "majority_share": result.majority_share,
                        "train_seconds": result.train_seconds,
                        "wall_seconds": round(time.time() - start, 1),
                    }
                ),
                flush=True,
            )


if __name__ == "__main__":
    main()
