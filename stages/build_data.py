"""Stage data: build every task's train/eval split (data.tasks) and tokenise it once.

Embedded tasks come from pinned PyPI artifacts (src/tasks.py); GLUE tasks from the hub, or from
data.glue_dir in the original GLUE TSV layout. The text is kept as TSV (to read) and
the token ids as flat arrays (what every condition trains on).
"""

import argparse
import json
from pathlib import Path

from src import data, glue, tasks
from src.errors import run_stage
from src.model import load_tokenizer
from src.params import load_params, model_limits


def build_splits(name: str, params: dict):
    """(train, eval, note) data frames for task `name`."""
    spec, cfg = tasks.get_task(name), params["data"]
    if spec.source == "embedded":
        return tasks.build_embedded(name, cfg["eval_size"], cfg["neutral_band"], cfg["split_seed"])
    splits = glue.load_glue(name, cfg["glue_dir"], carve_train_from_dev=name in cfg["glue_carve_train_from_dev"], seed=cfg["split_seed"])
    source = f"GLUE {name} from {cfg['glue_dir'] or 'the Hugging Face hub'}; eval = {splits.eval_source}"
    return splits.train, splits.eval, f"{source}. {splits.note}".strip()


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--model", type=Path, required=True)
    parser.add_argument("--out", type=Path, required=True, help="one folder per task is written here")
    args = parser.parse_args()

    params = load_params(**model_limits(args.model))  # max_length against the model's positions
    # Read and check every task before writing any, so a malformed file fails fast.
    built = {name: build_splits(name, params) for name in params["data"]["tasks"]}
    for name, (train, eval_, note) in built.items():
        write_task(name, train, eval_, note, args.model, args.out / name, params)


def write_task(name: str, train, eval_, note: str, model_dir: Path, out: Path, params: dict) -> None:
    spec = tasks.get_task(name)
    tokenizer = load_tokenizer(model_dir)
    max_length = params["model"]["max_length"]
    tokenized = {split: data.tokenize(df, spec.text_fields, spec.label_kind, tokenizer, max_length) for split, df in (("train", train), ("eval", eval_))}

    out.mkdir(parents=True, exist_ok=True)
    train.to_csv(out / "train.tsv", sep="\t", index=False)
    eval_.to_csv(out / "eval.tsv", sep="\t", index=False)
    data.save_splits(out / "tokens.npz", tokenized)
    info = {
        "task": name,
        "train_examples": len(train),
        "eval_examples": len(eval_),
        "note": note,
        "label_counts": {split: df["label"].value_counts().sort_index().to_dict() for split, df in (("train", train), ("eval", eval_))} if spec.label_kind == "classification" else None,
        "mean_tokens": {split: float(tokens.lengths.mean()) for split, tokens in tokenized.items()},
    }
    (out / "info.json").write_text(json.dumps(info, indent=2, default=int) + "\n")
    print(f"{name}: {len(train)} train / {len(eval_)} eval examples; {note}")
    if info["label_counts"]:
        print(f"  label counts {info['label_counts']}")


if __name__ == "__main__":
    run_stage(main)
