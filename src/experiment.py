"""One condition from start to finish: subset, starting weights, finetuning, score.

This is the code path of every finetune stage (study or focus condition) and of the
end-to-end tests, so what the tests run is what the pipeline runs.
"""

from __future__ import annotations

import hashlib
import json
import multiprocessing
import os
from concurrent.futures import ProcessPoolExecutor, as_completed
from pathlib import Path

import torch

from src import data
from src.artifacts import sha256_of
from src.condition import Condition
from src.errors import die_with_parent
from src.model import build_finetuner, new_task_head
from src.reinit import encoder_layers
from src.tasks import get_task
from src.training import TrainConfig, evaluate, finetune, reuse_freed_memory
from src.weights import layer_weights, weight_change

# The code a finetuning result depends on: its fingerprint hashes these files, and the
# finetune stages in dvc.yaml list exactly these as deps (a test keeps both in step).
ROOT = Path(__file__).resolve().parents[1]
TRAINING_CODE = (
    "stages/finetune.py",
    "src/experiment.py",
    "src/studies.py",
    "src/condition.py",
    "src/model.py",
    "src/reinit.py",
    "src/training.py",
    "src/weights.py",
    "src/data.py",
    "src/metrics.py",
    "src/tasks.py",
    "src/glue.py",
)


def train_config(params: dict, epochs: int) -> TrainConfig:
    train = params["train"]
    return TrainConfig(train["lr"], train["batch_size"], epochs, train["weight_decay"], train["eval_batch_size"], train["group_by_length"], train["precision"], train["checkpoint_every"])


def fingerprint(condition: Condition, params: dict, model_dir: Path, tasks_dir: Path) -> str:
    """Everything a result depends on: condition, training settings, seed, base weights,
    token ids and code. A finished result whose fingerprint matches is reused as it is;
    any other file in its place is recomputed."""
    tasks = [condition.task] + ([condition.intermediate_task] if condition.intermediate_task else [])
    inputs = {
        "condition": condition.as_dict(),
        "train": {**train_config(params, condition.epochs).__dict__, "checkpoint_every": None},  # checkpoints never change results
        "threads": params["train"]["threads"],  # thread count moves the last bits of a result; worker count does not
        "seed": params["seed"],
        "base": json.loads((model_dir / "base.json").read_text())["weights_sha256"],
        "tokens": [sha256_of(tasks_dir / t / "tokens.npz") for t in tasks],
        "code": [sha256_of(ROOT / f) for f in TRAINING_CODE],
    }
    return hashlib.sha256(json.dumps(inputs, sort_keys=True).encode()).hexdigest()


def _load(tasks_dir: Path, task: str, split: str) -> data.TokenizedSplit:
    return data.load_split(tasks_dir / task / "tokens.npz", split)


def run_condition(condition: Condition, params: dict, model_dir: Path, tasks_dir: Path, log_epochs: bool = False, checkpoint: Path | None = None, key: str = "") -> dict:
    task = get_task(condition.task)
    seed = params["seed"]
    cfg = train_config(params, condition.epochs)
    first = get_task(condition.intermediate_task) if condition.intermediate_task else task
    model, record = build_finetuner(model_dir, condition, first.num_labels, seed)
    model.to("cuda" if torch.cuda.is_available() else "cpu")
    # The multiplier is for the whole tensors the scheme reinitialised (not head slices,
    # not the always-new task head).
    fresh = {f"encoder.{e['name']}" for e in record["reinitialised"] if e["name"].startswith("encoder.layer.") and "[" not in e["name"]}

    if condition.intermediate_task:  # sequential finetuning: the same size and trial on task A first
        pool = _load(tasks_dir, first.name, "train")
        indices = data.training_subset(len(pool), condition.size, first.name, condition.trial, seed)
        outcome = finetune(model, first, pool.subset(indices), cfg, condition.seed(seed, "train-intermediate"), fresh, condition.lr_multiplier, desc=f"{condition.describe()} (intermediate)")
        if outcome["status"] != "ok":
            return _result(condition, record, outcome, {}, [], task.metrics[0], key)
        record["reinitialised"] += new_task_head(model, task.num_labels, condition, seed, model.encoder.config.initializer_range)
        fresh = set()

    pool, eval_split = _load(tasks_dir, task.name, "train"), _load(tasks_dir, task.name, "eval")
    indices = data.training_subset(len(pool), condition.size, task.name, condition.trial, seed)
    start = layer_weights(encoder_layers(model.encoder))
    outcome = finetune(
        model, task, pool.subset(indices), cfg, condition.seed(seed, "train"), fresh, condition.lr_multiplier,
        eval_split=eval_split if log_epochs else None, checkpoint=checkpoint, checkpoint_key=key, desc=condition.describe(),
    )
    evaluation = evaluate(model, task, eval_split, cfg.eval_batch_size, cfg.precision) if outcome["status"] == "ok" else {}
    changes = weight_change(start, layer_weights(encoder_layers(model.encoder))) if outcome["status"] == "ok" else []
    record["train_subset_sha256"] = hashlib.sha256(indices.tobytes()).hexdigest()
    record["eval_examples"] = len(eval_split)
    record["base_weights_sha256"] = json.loads((model_dir / "base.json").read_text())["weights_sha256"]
    return _result(condition, record, outcome, evaluation, changes, task.metrics[0], key)


def run_conditions(jobs: list[tuple[Condition, Path, str]], params: dict, model_dir: Path, tasks_dir: Path, log_epochs: bool):
    """Finetune every job (condition, checkpoint path, fingerprint); yield (job index,
    result) as each one finishes, so the caller can save it at once.

    train.workers processes run side by side, each with train.threads torch threads:
    batch-8 steps of a small model cannot keep two threads busy, and on 2 CPU cores two
    1-thread processes train ~1.4x the examples/s of one 2-thread process (bench/). A result
    depends on the thread count (in the fingerprint), never on the worker count or on
    which conditions a worker ran before (every run seeds its own generators)."""
    workers, threads = params["train"]["workers"], params["train"]["threads"]
    if workers == 1 or len(jobs) <= 1:
        _set_up_for_training(threads)
        for i, (condition, checkpoint, key) in enumerate(jobs):
            yield i, run_condition(condition, params, model_dir, tasks_dir, log_epochs, checkpoint, key)
        return
    # spawn, not fork: a forked child inherits torch's thread pools in an unusable state.
    pool = ProcessPoolExecutor(min(workers, len(jobs)), mp_context=multiprocessing.get_context("spawn"), initializer=_start_worker, initargs=(threads, os.getpid()))
    try:
        futures = {pool.submit(run_condition, c, params, model_dir, tasks_dir, log_epochs, ckpt, key): i for i, (c, ckpt, key) in enumerate(jobs)}
        for future in as_completed(futures):
            yield futures[future], future.result()
    finally:
        pool.shutdown(wait=True, cancel_futures=True)  # on an error, start no further condition


def _set_up_for_training(threads: int) -> None:
    torch.set_num_threads(threads)
    reuse_freed_memory()


def _start_worker(threads: int, stage: int) -> None:
    die_with_parent(stage)  # a killed stage must leave no run training on, even one killed while this worker started
    _set_up_for_training(threads)


def _result(condition: Condition, record: dict, outcome: dict, evaluation: dict, changes: list, metric: str, key: str) -> dict:
    return {
        "condition": condition.as_dict(),
        "fingerprint": key,
        "status": outcome["status"],
        "metric": metric,
        "scores": evaluation.get("scores", {}),
        "eval_loss": evaluation.get("loss"),
        "majority_share": evaluation.get("majority_share"),
        "epoch_losses": outcome["epoch_losses"],
        "epoch_eval": outcome["epoch_eval"],
        "train_seconds": round(outcome["train_seconds"], 2),
        "weight_change": changes,
        **record,
    }


def write_json_atomically(path: Path, payload: dict) -> None:
    """A killed run leaves no half-written file that could pass for a finished result."""
    path.parent.mkdir(parents=True, exist_ok=True)
    tmp = path.with_suffix(path.suffix + ".tmp")
    with open(tmp, "w") as f:
        f.write(json.dumps(payload, indent=1) + "\n")
        f.flush()
        os.fsync(f.fileno())  # on disk before it takes the result's name, even after a power cut
    os.replace(tmp, path)


def read_results(root: Path) -> list[dict]:
    """Every finished result under `root` (written by `write_json_atomically`)."""
    return [json.loads(p.read_text()) for p in sorted(Path(root).rglob("trial*.json"))]
