"""One condition from start to finish: subset, starting weights, finetuning, score.

This is the code path of every finetune stage (study or focus condition) and of the
end-to-end tests, so what the tests run is what the pipeline runs. A worker receives a
condition, its RunSettings and the paths of the prepared model and tasks: never the
params file.
"""

from __future__ import annotations

import functools
import hashlib
import json
import os
from dataclasses import asdict, replace
from pathlib import Path

import numpy as np
import torch
from safetensors.torch import load_model, save_model
from torch import nn

from src.artefacts.base_model import BaseModelRecord
from src.artefacts.run_result import RunResult, encode_step_losses
from src.conditions.condition import Condition
from src.core.checks import FULL
from src.core.codehash import ROOT, code_files
from src.core.files import sha256_of
from src.core.seeds import derive_seed
from src.data import tokens
from src.measures import MEASUREMENTS
from src.measures.cka import layer_cka
from src.measures.criticality import layer_states, rewind_drops
from src.measures.heads import head_importance
from src.model.base import load_encoder
from src.model.features import layer_features
from src.model.finetuner import Finetuner, build_finetuner, new_task_head, reinitialised_layer_parameters
from src.tasks import splits
from src.tasks.registry import get_task
from src.train.loop import RunSettings, autocast, evaluate, finetune, fit_null_threshold
from src.train.reuse import measured_as, missing_measurements
from src.train.weights import layer_change_tracker, layer_weights, weight_change

# What a result depends on besides its inputs: this module and every repo file it imports.
TRAINING_CODE = tuple(code_files(__name__))


def fingerprint(condition: Condition, settings: RunSettings, model_dir: Path, tasks_dir: Path) -> str:
    """Everything a result depends on: condition, settings (threads move the last bits; the
    device type and torch version change kernels, so CPU and GPU results never mix in one
    folder), base weights, token ids and code. A finished result whose fingerprint matches
    is reused as it is; any other file in its place is recomputed. Never the executor kind
    or the worker count: those do not change a result."""
    tasks = [condition.task, *condition.intermediate_steps]
    inputs = {
        "condition": condition.as_dict(),
        "settings": {**asdict(settings), "checkpoint_every": None},  # checkpoints never change results
        "base": BaseModelRecord.read(model_dir).weights_sha256,
        "tokens": [_file_sha256(tasks_dir / t / "tokens.npz") for t in tasks],
        "code": [_file_sha256(ROOT / f) for f in TRAINING_CODE],
        "torch": torch.__version__,
    }
    return hashlib.sha256(json.dumps(inputs, sort_keys=True).encode()).hexdigest()


def _file_sha256(path: Path) -> str:
    """sha256_of, once per file version in a process: a stage fingerprints every condition twice
    (with and without its measurements) over the same token and code files."""
    stat = Path(path).stat()
    return _sha256_of_version(Path(path), stat.st_mtime_ns, stat.st_size)


@functools.lru_cache(maxsize=512)
def _sha256_of_version(path: Path, mtime_ns: int, size: int) -> str:
    return sha256_of(path)


def run_condition(
    condition: Condition,
    settings: RunSettings,
    model_dir: Path,
    tasks_dir: Path,
    log_epochs: bool = False,
    checkpoint: Path | None = None,
    key: str = "",
    log: Path | None = None,
    weights: Path | None = None,
    kept: RunResult | None = None,
) -> RunResult:
    """Finetune and score one condition. With `log`, its per-epoch progress is appended
    there (the stage's own output stays one line per run). With `weights`, the finetuned
    weights are kept there (train.keep_weights). With `kept`, a finished result of this
    training run whose weights are at `weights`, nothing trains: the measurements `settings`
    ask for are made on those weights (measure_kept_weights)."""
    if log is None:
        return _run_or_measure(
            condition, settings, model_dir, tasks_dir, log_epochs, checkpoint, key, None, weights, kept
        )
    log.parent.mkdir(parents=True, exist_ok=True)
    with open(log, "a") as f:  # appended: a resumed or requeued run adds to its earlier attempt's lines
        return _run_or_measure(condition, settings, model_dir, tasks_dir, log_epochs, checkpoint, key, f, weights, kept)


def _run_or_measure(condition, settings, model_dir, tasks_dir, log_epochs, checkpoint, key, log, weights, kept):
    progress = (lambda line: None) if log is None else (lambda line: print(line, file=log, flush=True))
    if kept is not None:
        return measure_kept_weights(condition, settings, model_dir, tasks_dir, key, weights, kept, progress)
    return _run_condition(condition, settings, model_dir, tasks_dir, log_epochs, checkpoint, key, progress, weights)


def _load(tasks_dir: Path, task: str, split: str) -> splits.TokenizedSplit:
    return splits.load_split(tasks_dir / task / "tokens.npz", split)


def _run_condition(
    condition: Condition,
    settings: RunSettings,
    model_dir: Path,
    tasks_dir: Path,
    log_epochs: bool,
    checkpoint: Path | None,
    key: str,
    progress,
    weights: Path | None,
) -> RunResult:
    task = get_task(condition.task)
    seed = settings.seed
    chain = [get_task(name) for name in condition.intermediate_steps]
    first = chain[0] if chain else task
    model, record = build_finetuner(
        model_dir, condition, first.kind.head_outputs(first.num_labels), seed, first.kind.token_level
    )
    device = _device(settings)
    model.to(device)
    progress(
        f"{condition.describe()}: training on {device.type} (torch {torch.__version__}, {torch.get_num_threads()} "
        "threads)"
    )
    # The multiplier is for the whole tensors the scheme reinitialised (not head slices,
    # not the always-new task head).
    fresh = reinitialised_layer_parameters(model, record["reinitialised"])

    # Sequential finetuning (Huang et al. 4.1): each intermediate task in order, then the
    # final one, each step with a head of its own; the scheme's fresh layers are fresh in the first.
    pool_size = lambda name: _load(tasks_dir, name, "train").examples  # noqa: E731 - read only for `full`
    record["intermediate_steps"] = []
    for step, (step_task, (_, size, epochs)) in enumerate(zip(chain, condition.steps(pool_size))):
        if step:
            record["reinitialised"] += _new_head(model, step_task, condition, seed)
        pool = _load(tasks_dir, step_task.name, "train")
        indices = tokens.training_subset(pool.examples, size, step_task.name, condition.stream("subset"), seed)
        outcome = finetune(
            model,
            step_task,
            pool.of_examples(indices),
            replace(settings, epochs=epochs),
            condition.seed(seed, _intermediate_purpose(step), "order"),
            fresh,
            condition.lr_multiplier,
            progress=lambda line, name=step_task.name: progress(f"intermediate {name}: {line}"),
            dropout_seed=condition.seed(seed, _intermediate_purpose(step), "dropout"),
        )
        record["intermediate_steps"].append(
            {
                "task": step_task.name,
                "size": size,
                "epochs": epochs,
                "status": outcome["status"],
                "steps": outcome.get("steps"),
                "epoch_losses": outcome["epoch_losses"],
                "train_seconds": round(outcome["train_seconds"], 2),
                "train_subset_sha256": hashlib.sha256(indices.tobytes()).hexdigest(),
            }
        )
        if outcome["status"] != "ok":
            return _result(condition, settings, record, outcome, {}, [], task, key)
        fresh = set()
    if chain:
        record["reinitialised"] += _new_head(model, task, condition, seed)

    pool, eval_split = _load(tasks_dir, task.name, "train"), _load(tasks_dir, task.name, "eval")
    indices = tokens.training_subset(pool.examples, condition.size, task.name, condition.stream("subset"), seed)
    start = layer_weights(model.encoder)
    train_split = pool.of_examples(indices)
    initial = layer_states(model.encoder) if settings.criticality else None
    importance_before = (
        head_importance(model, task, train_split, settings.batch_size) if settings.head_importance else None
    )
    outcome = finetune(
        model,
        task,
        train_split,
        settings,
        condition.seed(seed, "train", "order"),
        fresh,
        condition.lr_multiplier,
        eval_split=eval_split if log_epochs else None,
        checkpoint=checkpoint,
        checkpoint_key=key,
        progress=progress,
        layer_change=layer_change_tracker(lambda: layer_weights(model.encoder)),
        dropout_seed=condition.seed(seed, "train", "dropout"),
    )
    null_threshold = None
    if outcome["status"] == "ok" and task.kind.fits_null_threshold:
        null_threshold = fit_null_threshold(model, task, train_split, settings.eval_batch_size, settings.precision)
        record["null_threshold"] = null_threshold
    evaluation = (
        evaluate(
            model,
            task,
            eval_split,
            settings.eval_batch_size,
            settings.precision,
            null_threshold,
            layer_features=settings.cka,
        )
        if outcome["status"] == "ok"
        else {}
    )
    changes = weight_change(start, layer_weights(model.encoder)) if outcome["status"] == "ok" else []
    if outcome["status"] == "ok":
        measured = _measurements(
            model,
            task,
            tasks_dir / task.name / "tokens.npz",
            eval_split,
            train_split,
            settings,
            model_dir,
            evaluation,
            initial,
        )
        record.update(measured)
        if importance_before is not None:
            record["head_importance"]["before"] = importance_before
        if weights is not None:
            record["weights_sha256"] = _keep_weights(model, weights)
    record["train_subset_sha256"] = hashlib.sha256(indices.tobytes()).hexdigest()
    record["eval_examples"] = eval_split.examples
    record["base_weights_sha256"] = BaseModelRecord.read(model_dir).weights_sha256
    record["device"], record["torch"] = device.type, torch.__version__  # what the fingerprint assumed, as it ran
    return _result(condition, settings, record, outcome, evaluation, changes, task, key)


def measure_kept_weights(
    condition: Condition,
    settings: RunSettings,
    model_dir: Path,
    tasks_dir: Path,
    key: str,
    weights: Path,
    kept: RunResult,
    progress=lambda line: None,
) -> RunResult:
    """`kept` (a finished run of this training that kept its weights, train.keep_weights) with
    the measurements `settings` ask for: those it made are kept, the missing ones are made on
    its kept weights instead of training again. The starting model is rebuilt from the condition
    (a pure function of it: build_finetuner) for the measurements that read it (`reads_start`),
    which is why a run with an intermediate task cannot give them this way
    (schedule.measurable_from_weights, which also checks that they are the file the run
    recorded). They must reproduce its eval predictions exactly, else this fails and says so."""
    missing = missing_measurements(kept, settings)
    only = replace(settings, **{m.setting: m.setting in missing for m in MEASUREMENTS})
    task = get_task(condition.task)
    model, _ = build_finetuner(
        model_dir, condition, task.kind.head_outputs(task.num_labels), settings.seed, task.kind.token_level
    )
    device = _device(settings)
    model.to(device)
    progress(f"{condition.describe()}: measuring {', '.join(missing)} on its kept weights {weights.name}, no training")
    pool, eval_split = _load(tasks_dir, task.name, "train"), _load(tasks_dir, task.name, "eval")
    indices = tokens.training_subset(
        pool.examples, condition.size, task.name, condition.stream("subset"), settings.seed
    )
    train_split = pool.of_examples(indices)
    initial = layer_states(model.encoder) if only.criticality else None
    before = head_importance(model, task, train_split, settings.batch_size) if only.head_importance else None
    load_model(model, weights, device=str(device))
    evaluation = evaluate(
        model,
        task,
        eval_split,
        settings.eval_batch_size,
        settings.precision,
        kept.null_threshold,
        layer_features=only.cka,
    )
    if task.kind.encode_predictions(evaluation["predictions"]) != kept.predictions:
        raise RuntimeError(
            f"the weights in {weights} do not reproduce their run's eval predictions (another device, precision or "
            "thread count?): delete them and the result to retrain"
        )
    tokens_file = tasks_dir / task.name / "tokens.npz"
    made = _measurements(model, task, tokens_file, eval_split, train_split, only, model_dir, evaluation, initial)
    if before is not None:
        made["head_importance"]["before"] = before
    return measured_as(kept, settings, key, {m.field: getattr(kept, m.field) for m in MEASUREMENTS} | made)


def _device(settings: RunSettings) -> torch.device:
    device = torch.device("cuda" if torch.cuda.is_available() else "cpu")
    if device.type != settings.device:  # e.g. a SLURM node without the GPU the run asked for
        raise RuntimeError(
            f"this run's fingerprint is for {settings.device}, but {os.uname().nodename} trains on {device.type}"
        )
    return device


def _keep_weights(model: Finetuner, path: Path) -> str:
    """Write the finetuned model's weights to `path` atomically (safetensors); their sha256."""
    tmp = path.with_suffix(".tmp")
    save_model(model, str(tmp), force_contiguous=True)
    os.replace(tmp, path)
    return sha256_of(path)


@functools.lru_cache(maxsize=1)
def _pretrained(model_dir: Path, device: str) -> nn.Module:
    """The base encoder, once per worker process (a worker runs many conditions)."""
    return load_encoder(model_dir, with_pooler=False).to(device).eval()


@functools.lru_cache(maxsize=4)
def _pretrained_features(
    model_dir: Path, device: str, tokens_file: Path, batch_size: int, precision: str
) -> np.ndarray:
    """The base encoder's per-layer eval features, pooled as the finetuned eval pass pools
    them and under the same autocast, once per worker process and task."""
    with autocast(precision, torch.device(device)):
        return layer_features(
            _pretrained(model_dir, device), splits.load_split(tokens_file, "eval"), batch_size, "mean"
        )


def _measurements(
    model: Finetuner,
    task,
    tokens_file: Path,
    eval_split: splits.TokenizedSplit,
    train_split: splits.TokenizedSplit,
    settings: RunSettings,
    model_dir: Path,
    evaluation: dict,
    initial: list | None,
) -> dict:
    """What a finished run measures on its finetuned weights (src/measures/,
    docs/measures.md), each only where its setting is on. `tokens_file` holds `eval_split`
    (the key of the pretrained features' cache)."""
    device = next(model.parameters()).device.type
    found = {}
    if settings.cka:
        pretrained = _pretrained_features(model_dir, device, tokens_file, settings.eval_batch_size, settings.precision)
        found["layer_cka"] = layer_cka(evaluation["layer_features"], pretrained.astype(np.float32))
    if settings.criticality:
        # Scored on the first N eval examples (criticality_examples; 0 = all), the finetuned
        # model on the same ones, so every drop is paired example by example.
        scored = eval_split
        if 0 < settings.criticality_examples < len(eval_split):
            scored = eval_split.subset(np.arange(settings.criticality_examples))

        def score() -> float:
            return evaluate(model, task, scored, settings.eval_batch_size, settings.precision)["scores"][task.headline]

        found["criticality"] = rewind_drops(
            model.encoder,
            layer_states(_pretrained(model_dir, device)),
            initial,
            score,
            evaluation["scores"][task.headline] if scored is eval_split else score(),
        )
    if settings.head_importance:
        found["head_importance"] = {"after": head_importance(model, task, train_split, settings.batch_size)}
    return found


def _new_head(model: Finetuner, task, condition: Condition, seed: int) -> list:
    """A fresh task head for `task` (every finetuning step gets its own)."""
    return new_task_head(
        model,
        task.kind.head_outputs(task.num_labels),
        condition,
        seed,
        model.encoder.config.initializer_range,
        task.kind.token_level,
    )


def _intermediate_purpose(step: int) -> str:
    """The training seed's purpose of intermediate step `step` (the first keeps its earlier name)."""
    return "train-intermediate" if step == 0 else f"train-intermediate-{step}"


def _seeds(condition: Condition, seed: int) -> dict[str, int | str]:
    """The seeds the run drew from, one per source (each reinitialised tensor has its own, from its name)."""
    c = condition
    seeds = {
        "base": seed,
        "subset": derive_seed(seed, "subset", c.task, c.size, c.stream("subset")),
        "order": c.seed(seed, "train", "order"),
        "dropout": c.seed(seed, "train", "dropout"),
    }
    if c.scheme == "permutation":
        seeds["permutation"] = c.seed(seed, "permutation", "reinit")
    for step, task in enumerate(c.intermediate_steps):
        suffix = f"_{step}" if step else ""
        size = c.size if c.intermediate_size is None else c.intermediate_size
        seeds[f"subset_intermediate{suffix}"] = (
            derive_seed(seed, "subset", task, size, c.stream("subset")) if size != FULL else "the whole training set"
        )
        seeds[f"order_intermediate{suffix}"] = c.seed(seed, _intermediate_purpose(step), "order")
        seeds[f"dropout_intermediate{suffix}"] = c.seed(seed, _intermediate_purpose(step), "dropout")
    seeds["reinit"] = f"derive_seed({seed}, 'reinit', {c.stream('reinit')}, <tensor name>) per tensor"
    seeds["head"] = f"derive_seed({seed}, 'reinit', {c.stream('head')}, <tensor name>) per tensor"
    return seeds


def _result(
    condition: Condition,
    settings: RunSettings,
    record: dict,
    outcome: dict,
    evaluation: dict,
    changes: list,
    task,
    key: str,
) -> RunResult:
    return RunResult(
        condition=condition.as_dict(),
        fingerprint=key,
        status=outcome["status"],
        metric=task.headline,
        scores=evaluation.get("scores", {}),
        eval_loss=evaluation.get("loss"),
        majority_share=evaluation.get("majority_share"),
        predictions=task.kind.encode_predictions(evaluation["predictions"]) if evaluation else None,
        epoch_losses=outcome["epoch_losses"],
        step_losses=encode_step_losses(outcome["step_losses"]),
        epoch_eval=outcome["epoch_eval"],
        train_seconds=round(outcome["train_seconds"], 2),
        weight_change=changes,
        steps=outcome.get("steps"),
        layer_change_by_step=outcome.get("layer_change", []),
        settings=asdict(settings),
        seeds=_seeds(condition, settings.seed),
        **record,
    )
