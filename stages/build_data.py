"""Stage data@<task>: build one task's train/eval split and tokenise it once.

Embedded tasks come from the pinned VADER sdist; GLUE tasks from the hub, or from
data.glue_dir in the original GLUE TSV layout. The text is kept as TSV (to read) and
the token ids as flat arrays (what every condition trains on).
"""

import argparse
import json
from pathlib import Path

from src import data, glue, tasks
from src.model import load_tokenizer
from src.params import ParamsError, load_params


def build_splits(name: str, params: dict):
    """(train, eval, note) data frames for task `name`."""
    spec, cfg = tasks.get_task(name), params["data"]
    if spec.source == "embedded":
        return tasks.build_embedded(name, cfg["eval_size"], cfg["neutral_band"], cfg["split_seed"])
    splits = glue.load_glue(name, cfg["glue_dir"], carve_train_from_dev=cfg["glue_carve_train_from_dev"], seed=cfg["split_seed"])
    source = f"GLUE {name} from {cfg['glue_dir'] or 'the Hugging Face hub'}; eval = {splits.eval_source}"
    return splits.train, splits.eval, f"{source}. {splits.note}".strip()


def check_sizes(name: str, pool: int, params: dict) -> None:
    """Every training size asked of this task must fit its pool: fail here, before finetuning."""
    asked = [("grid.sizes", s) for s in params["grid"]["sizes"] if name in params["grid"]["tasks"]]
    asked += [("size", params["size"])] if params["task"] == name else []
    for key, size in asked:
        if size > pool:
            raise ParamsError(f"params.yaml: {key} = {size} is larger than the {pool} training examples of task {name!r}")


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--task", required=True)
    parser.add_argument("--model", type=Path, required=True)
    parser.add_argument("--out", type=Path, required=True)
    args = parser.parse_args()

    params = load_params()
    spec = tasks.get_task(args.task)
    train, eval_, note = build_splits(args.task, params)
    check_sizes(args.task, len(train), params)

    tokenizer = load_tokenizer(args.model)
    max_length = params["model"]["max_length"]
    tokenized = {name: data.tokenize(df, spec.text_fields, spec.label_kind, tokenizer, max_length) for name, df in (("train", train), ("eval", eval_))}

    args.out.mkdir(parents=True, exist_ok=True)
    train.to_csv(args.out / "train.tsv", sep="\t", index=False)
    eval_.to_csv(args.out / "eval.tsv", sep="\t", index=False)
    data.save_splits(args.out / "tokens.npz", tokenized)
    info = {
        "task": args.task,
        "train_examples": len(train),
        "eval_examples": len(eval_),
        "note": note,
        "label_counts": {split: df["label"].value_counts().sort_index().to_dict() for split, df in (("train", train), ("eval", eval_))} if spec.label_kind == "classification" else None,
        "mean_tokens": {name: float(split.lengths.mean()) for name, split in tokenized.items()},
    }
    (args.out / "info.json").write_text(json.dumps(info, indent=2, default=int) + "\n")
    print(f"{args.task}: {len(train)} train / {len(eval_)} eval examples; {note}")
    if info["label_counts"]:
        print(f"  label counts {info['label_counts']}")


if __name__ == "__main__":
    main()
