"""One condition from start to finish: subset, starting weights, finetuning, score.

This is the code path of every finetune stage (study or focus condition) and of the
end-to-end tests, so what the tests run is what the pipeline runs.
"""

from __future__ import annotations

import hashlib
import json
import math
import os
from pathlib import Path

import torch

from src import data, executors
from src.artifacts import sha256_of
from src.condition import Condition
from src.model import build_finetuner, new_task_head, reinitialised_layer_parameters
from src.tasks import get_task
from src.metrics import encode_predictions
from src.training import TrainConfig, evaluate, finetune, resolve_precision
from src.weights import layer_change_tracker, layer_weights, weight_change

# The code a finetuning result depends on: its fingerprint hashes these files, and the
# finetune stages in dvc.yaml list exactly these as deps (a test keeps both in step).
ROOT = Path(__file__).resolve().parents[1]
TRAINING_CODE = (
    "stages/finetune.py",
    "src/experiment.py",
    "src/studies.py",
    "src/condition.py",
    "src/model.py",
    "src/families.py",
    "src/reinit.py",
    "src/training.py",
    "src/weights.py",
    "src/data.py",
    "src/metrics.py",
    "src/tasks.py",
    "src/glue.py",
)


def train_config(params: dict, epochs: int) -> TrainConfig:
    """The training settings of a run; `precision: auto` resolved for the device the run
    trains on, so the fingerprint holds the precision actually used."""
    train = params["train"]
    precision = resolve_precision(train["precision"], executors.run_device(params))
    return TrainConfig(train["lr"], train["batch_size"], epochs, train["weight_decay"], train["eval_batch_size"], train["group_by_length"], precision, train["checkpoint_every"])


def fingerprint(condition: Condition, params: dict, model_dir: Path, tasks_dir: Path) -> str:
    """Everything a result depends on: condition, training settings, seed, base weights,
    token ids, code, and the device type and torch version it trains with (kernels differ,
    so CPU and GPU results never mix in one folder). A finished result whose fingerprint
    matches is reused as it is; any other file in its place is recomputed."""
    tasks = [condition.task] + ([condition.intermediate_task] if condition.intermediate_task else [])
    inputs = {
        "condition": condition.as_dict(),
        "train": {**train_config(params, condition.epochs).__dict__, "checkpoint_every": None},  # checkpoints never change results
        "threads": params["train"]["threads"],  # thread count moves the last bits of a result; worker count does not
        "seed": params["seed"],
        "base": json.loads((model_dir / "base.json").read_text())["weights_sha256"],
        "tokens": [sha256_of(tasks_dir / t / "tokens.npz") for t in tasks],
        "code": [sha256_of(ROOT / f) for f in TRAINING_CODE],
        "device": executors.run_device(params),  # never the executor kind or the worker count: those do not change a result
        "torch": torch.__version__,
    }
    return hashlib.sha256(json.dumps(inputs, sort_keys=True).encode()).hexdigest()


def _load(tasks_dir: Path, task: str, split: str) -> data.TokenizedSplit:
    return data.load_split(tasks_dir / task / "tokens.npz", split)


def run_condition(condition: Condition, params: dict, model_dir: Path, tasks_dir: Path, log_epochs: bool = False, checkpoint: Path | None = None, key: str = "", log: Path | None = None) -> dict:
    """Finetune and score one condition. With `log`, its per-epoch progress is appended
    there (the stage's own output stays one line per run)."""
    if log is None:
        return _run_condition(condition, params, model_dir, tasks_dir, log_epochs, checkpoint, key, lambda line: None)
    log.parent.mkdir(parents=True, exist_ok=True)
    with open(log, "a") as f:  # appended: a resumed or requeued run adds to its earlier attempt's lines
        return _run_condition(condition, params, model_dir, tasks_dir, log_epochs, checkpoint, key, lambda line: print(line, file=f, flush=True))


def _run_condition(condition: Condition, params: dict, model_dir: Path, tasks_dir: Path, log_epochs: bool, checkpoint: Path | None, key: str, progress) -> dict:
    task = get_task(condition.task)
    seed = params["seed"]
    cfg = train_config(params, condition.epochs)
    first = get_task(condition.intermediate_task) if condition.intermediate_task else task
    model, record = build_finetuner(model_dir, condition, first.num_labels, seed)
    device = torch.device("cuda" if torch.cuda.is_available() else "cpu")
    if device.type != executors.run_device(params):  # e.g. a SLURM node without the GPU the run asked for
        raise RuntimeError(f"this run's fingerprint is for {executors.run_device(params)}, but {os.uname().nodename} trains on {device.type}")
    model.to(device)
    progress(f"{condition.describe()}: training on {device.type} (torch {torch.__version__}, {torch.get_num_threads()} threads)")
    # The multiplier is for the whole tensors the scheme reinitialised (not head slices,
    # not the always-new task head).
    fresh = reinitialised_layer_parameters(model, record["reinitialised"])

    if condition.intermediate_task:  # sequential finetuning: the same size and trial on task A first
        pool = _load(tasks_dir, first.name, "train")
        indices = data.training_subset(len(pool), condition.size, first.name, condition.trial, seed)
        outcome = finetune(model, first, pool.subset(indices), cfg, condition.seed(seed, "train-intermediate"), fresh, condition.lr_multiplier, progress=lambda line: progress(f"intermediate {first.name}: {line}"))
        if outcome["status"] != "ok":
            return _result(condition, record, outcome, {}, [], task.metrics[0], key)
        record["reinitialised"] += new_task_head(model, task.num_labels, condition, seed, model.encoder.config.initializer_range)
        fresh = set()

    pool, eval_split = _load(tasks_dir, task.name, "train"), _load(tasks_dir, task.name, "eval")
    indices = data.training_subset(len(pool), condition.size, task.name, condition.trial, seed)
    start = layer_weights(model.encoder)
    outcome = finetune(
        model, task, pool.subset(indices), cfg, condition.seed(seed, "train"), fresh, condition.lr_multiplier,
        eval_split=eval_split if log_epochs else None, checkpoint=checkpoint, checkpoint_key=key, progress=progress,
        layer_change=layer_change_tracker(lambda: layer_weights(model.encoder)),
    )
    evaluation = evaluate(model, task, eval_split, cfg.eval_batch_size, cfg.precision) if outcome["status"] == "ok" else {}
    changes = weight_change(start, layer_weights(model.encoder)) if outcome["status"] == "ok" else []
    record["train_subset_sha256"] = hashlib.sha256(indices.tobytes()).hexdigest()
    record["eval_examples"] = len(eval_split)
    record["base_weights_sha256"] = json.loads((model_dir / "base.json").read_text())["weights_sha256"]
    record["device"], record["torch"] = device.type, torch.__version__  # what the fingerprint assumed, as it ran
    return _result(condition, record, outcome, evaluation, changes, task.metrics[0], key)


def run_conditions(jobs: list[tuple[Condition, Path, str, Path]], params: dict, model_dir: Path, tasks_dir: Path, log_epochs: bool):
    """Finetune every job (condition, checkpoint path, fingerprint, log path) on the backend
    of params.yaml `executor:` (src/executors.py); yield (job index, result or
    executors.Failure) as each one finishes, so the caller can save it at once.

    Locally on CPU, train.workers processes of train.threads torch threads: batch-8 steps of
    a small model cannot keep two threads busy, and on 2 CPU cores two 1-thread processes
    train ~1.4x the examples/s of one 2-thread process (bench/). A result depends on the
    thread count (in the fingerprint), never on the backend, the worker count or which
    conditions a worker ran before (every run seeds its own generators)."""
    runs = [(condition, params, model_dir, tasks_dir, log_epochs, checkpoint, key, log) for condition, checkpoint, key, log in jobs]
    yield from executors.execute(run_condition, runs, params)


def _result(condition: Condition, record: dict, outcome: dict, evaluation: dict, changes: list, metric: str, key: str) -> dict:
    return {
        "condition": condition.as_dict(),
        "fingerprint": key,
        "status": outcome["status"],
        "metric": metric,
        "scores": evaluation.get("scores", {}),
        "eval_loss": evaluation.get("loss"),
        "majority_share": evaluation.get("majority_share"),
        "predictions": encode_predictions(evaluation["predictions"]) if evaluation else None,
        "epoch_losses": outcome["epoch_losses"],
        "epoch_eval": outcome["epoch_eval"],
        "train_seconds": round(outcome["train_seconds"], 2),
        "weight_change": changes,
        "steps": outcome.get("steps"),
        "layer_change_by_step": outcome.get("layer_change", []),
        **record,
    }


def json_safe(value):
    """`value` with every non-finite float (an undefined statistic, a diverged loss) as None:
    NaN and Infinity are not JSON, and DVC and most tools refuse them."""
    if isinstance(value, float):
        return value if math.isfinite(value) else None
    if isinstance(value, dict):
        return {key: json_safe(item) for key, item in value.items()}
    if isinstance(value, (list, tuple)):
        return [json_safe(item) for item in value]
    return value


def write_json_atomically(path: Path, payload: dict) -> None:
    """A killed run leaves no half-written file that could pass for a finished result."""
    path.parent.mkdir(parents=True, exist_ok=True)
    tmp = path.with_suffix(path.suffix + ".tmp")
    with open(tmp, "w") as f:
        f.write(json.dumps(json_safe(payload), indent=1, allow_nan=False) + "\n")
        f.flush()
        os.fsync(f.fileno())  # on disk before it takes the result's name, even after a power cut
    os.replace(tmp, path)


def read_results(root: Path) -> list[dict]:
    """Every finished result under `root` (written by `write_json_atomically`)."""
    return [json.loads(p.read_text()) for p in sorted(Path(root).rglob("trial*.json"))]
