"""One condition from start to finish: subset, starting weights, finetuning, score.

This is the code path of every finetune stage (grid cell or focus condition) and of
the end-to-end tests, so what the tests run is what the pipeline runs.
"""

from __future__ import annotations

import hashlib
import json
import os
from pathlib import Path

from src import data
from src.condition import Condition
from src.model import build_finetuner
from src.params import epochs_for
from src.tasks import get_task
from src.training import TrainConfig, evaluate, finetune


def run_condition(condition: Condition, params: dict, model_dir: Path, task_dir: Path, pad_id: int) -> dict:
    task = get_task(condition.task)
    pool = data.load_split(task_dir / "tokens.npz", "train")
    eval_split = data.load_split(task_dir / "tokens.npz", "eval")
    seed = params["seed"]
    indices = data.training_subset(len(pool), condition.size, condition.task, condition.trial, seed)

    model, manifest = build_finetuner(model_dir, condition, task.num_labels, seed)
    train = params["train"]
    cfg = TrainConfig(train["lr"], train["batch_size"], epochs_for(train, condition.size), train["weight_decay"], train["eval_batch_size"], train["group_by_length"])
    desc = f"{condition.task} n={condition.size} k={condition.k} trial {condition.trial}"
    outcome = finetune(model, task, pool.subset(indices), cfg, pad_id, condition.seed(seed, "train"), desc)
    scores = evaluate(model, task, eval_split, cfg.eval_batch_size, pad_id) if outcome["status"] == "ok" else {}
    return {
        "condition": condition.as_dict(),
        "status": outcome["status"],
        "metric": task.metrics[0],
        "scores": scores,
        "epochs": cfg.epochs,
        "epoch_losses": outcome["epoch_losses"],
        "train_seconds": round(outcome["train_seconds"], 2),
        "train_subset_sha256": hashlib.sha256(indices.tobytes()).hexdigest(),
        "eval_examples": len(eval_split),
        "base_weights_sha256": json.loads((model_dir / "base.json").read_text())["weights_sha256"],
        "reinitialised": manifest,
    }


def write_json_atomically(path: Path, payload: dict) -> None:
    """A killed run leaves no half-written file that could pass for a finished result."""
    path.parent.mkdir(parents=True, exist_ok=True)
    tmp = path.with_suffix(path.suffix + ".tmp")
    tmp.write_text(json.dumps(payload, indent=1) + "\n")
    os.replace(tmp, path)


def read_results(root: Path) -> list[dict]:
    """Every finished trial result under `root` (written by `write_json_atomically`)."""
    return [json.loads(p.read_text()) for p in sorted(Path(root).rglob("trial*.json"))]
