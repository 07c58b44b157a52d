"""Stage data: build every task's train/eval split (data.tasks) and tokenise it once.

Embedded tasks come from pinned PyPI artifacts (src/tasks/embedded.py); GLUE tasks from
the hub, or from data.glue_dir in the original GLUE TSV layout (src/tasks/glue.py); SQuAD 2.0
from the hub or data.squad_dir in the official JSON layout (src/tasks/squad.py).
"""

import argparse
from pathlib import Path

from src.data.build import build_splits, checked_unknown_words, write_task
from src.model.base import load_tokenizer
from src.params.load import load_config, model_limits
from src.params.stage import run_stage


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--model", type=Path, required=True)
    parser.add_argument("--out", type=Path, required=True, help="one folder per task is written here")
    args = parser.parse_args()

    config = load_config(limits=model_limits(args.model))  # max_length against the model's positions
    built = {name: build_splits(name, config.data) for name in config.data.tasks}
    tokenizer = load_tokenizer(args.model)
    unknown = {  # every task checked before any is written
        name: checked_unknown_words(name, train, eval_, tokenizer, config.data)
        for name, (train, eval_, _) in built.items()
    }
    for name, (train, eval_, note) in built.items():
        info = write_task(
            name, train, eval_, note, unknown[name], tokenizer, config.model.max_length, args.out / name, config.data
        )
        print(f"{name}: {len(train)} train / {len(eval_)} eval examples; {note}")
        print(f"  [UNK] words {unknown[name].unknown} of {unknown[name].words} ({unknown[name].rate:.2%})")
        if info["label_counts"]:
            print(f"  label counts {info['label_counts']}")
        if info["answerable"]:
            print(f"  answerable questions {info['answerable']}, windows {info['windows']}")


if __name__ == "__main__":
    run_stage(main)
