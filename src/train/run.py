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
from collections.abc import Callable
from contextlib import contextmanager
from dataclasses import asdict, dataclass, replace
from pathlib import Path
from typing import TYPE_CHECKING, cast

import numpy as np
import torch
from safetensors.torch import load_model, save_model
from torch import nn

from src.artefacts.base_model import BaseModelRecord
from src.artefacts.run_result import RunResult, encode_step_losses
from src.conditions.condition import Condition
from src.core.checks import FULL
from src.core.codehash import ROOT, code_digest, code_files
from src.core.files import sha256_of
from src.data import tokens
from src.measures import MEASUREMENTS, Measured
from src.model.base import load_encoder
from src.model.features import layer_features
from src.model.finetuner import Finetuner, build_finetuner, new_task_head, reinitialised_layer_parameters
from src.tasks import splits
from src.tasks.registry import TaskSpec, get_task
from src.train.device import autocast
from src.train.loop import Member, RunSettings, evaluate, finetune, fit_null_threshold, train_members
from src.train.reuse import MEASUREMENT_CODE, made_now, measured_as, missing_measurements
from src.train.weights import layer_change_tracker, layer_weights, weight_change

if TYPE_CHECKING:  # annotations only
    from transformers import PretrainedConfig

# The training recipe, what a result's fingerprint hashes of the code: every repo file this
# module imports but the measurement code (src/measures: measuring never changes how a run
# trains; each measurement's code has a digest of its own, reuse.measurement_code) and those
# that cannot change a trained number, because they only check, write or describe, or
# because what they produce is hashed itself (the base weights' sha256, the token files). The
# readers of the data (src/tasks/glue.py, ...) and the exporter of the model are not imported
# here at all.
NOT_RECIPE = {
    "src/artefacts/base_model.py": "base.json's format (the weights' sha256 is hashed)",
    "src/artefacts/run_result.py": "the result's file format",
    "src/core/checks.py": "params checks: a refused value never trains",
    "src/core/codehash.py": "computes this hash",
    "src/core/errors.py": "error messages",
    "src/core/files.py": "writes and checksums files",
    "src/train/reuse.py": "which finished result a run may reuse",
}


def _recipe(module: str) -> tuple[str, ...]:
    return tuple(f for f in code_files(module) if f not in NOT_RECIPE and not f.startswith(MEASUREMENT_CODE))


RECIPE = _recipe(__name__)
# A packed run's recipe adds the stacked step (train.pack; src/train/packed.py imports this module).
PACKED_RECIPE = _recipe("src.train.packed")
# Recipe digests (_recipe_digest) declared equivalent to the current recipe: a result whose
# fingerprint was made with one is current, and is not trained again. A digest goes here only
# when the golden runs (tests/contract/test_golden_runs.py) prove that the code it hashed and
# the current code give the same numbers; a change of numbers is a new recipe and retrains.
EQUIVALENT_RECIPES = {  # digest -> the code it hashed
    "d3fca7d5951b03c974adb422ebddb4276ad442d098c2c3733e580f59cc4d894a": "83d6513's RECIPE, as 83d6513 hashed it",
    "2ee98b72bc4f234d0ef1cf52bc3344eb76f12afbe10940fb823cbcd96b5168ef": "83d6513's PACKED_RECIPE, as 83d6513 hashed it",
    "9b84d12b038c03c3e9e39aaf73595f0f64a9a128165cace3c3a8d0a7c3e8de51": "78fdc7e's RECIPE, as 78fdc7e hashed it",
}


def fingerprint(
    condition: Condition, settings: RunSettings, model_dir: Path, tasks_dir: Path, code: str | None = None
) -> str:
    """Everything a result depends on: condition, settings (threads move the last bits; the
    device type and torch version change kernels, so CPU and GPU results never mix in one
    folder), base weights, token ids and code (the recipe's digest, or `code` in its place).
    A finished result whose fingerprint matches is reused as it is; any other file in its
    place is recomputed. Never the executor kind or the worker count: those do not change a
    result. A packed run's fingerprint holds the pack size (settings.pack, which may move the
    last bits as threads do) and the stacked step's code, never which runs it shared its pack
    with: that changes no number."""
    tasks = [condition.task, *condition.intermediate_steps]
    inputs = {
        "condition": condition.as_dict(),
        "settings": {**asdict(settings), "checkpoint_every": None},  # checkpoints never change results
        "base": BaseModelRecord.read(model_dir).weights_sha256,
        "tokens": [_file_sha256(tasks_dir / t / "tokens.npz") for t in tasks],
        "code": code or recipe_digest(settings),
        "torch": torch.__version__,
    }
    return hashlib.sha256(json.dumps(inputs, sort_keys=True).encode()).hexdigest()


def recipe_digest(settings: RunSettings) -> str:
    """The digest of the recipe a run with `settings` trains by (packed or alone), as it is now."""
    return _recipe_digest(ROOT, tuple((f, *_version(ROOT / f)) for f in (PACKED_RECIPE if settings.pack else RECIPE)))


def equivalent_fingerprints(
    condition: Condition, settings: RunSettings, model_dir: Path, tasks_dir: Path
) -> dict[str, str]:
    """Each fingerprint a result of this run, and of its training alone (settings.unmeasured),
    holds when a recipe declared equivalent (EQUIVALENT_RECIPES) made it -> the current one."""
    return {
        fingerprint(condition, asked, model_dir, tasks_dir, code): fingerprint(condition, asked, model_dir, tasks_dir)
        for asked in (settings, settings.unmeasured())
        for code in EQUIVALENT_RECIPES
    }


def _version(path: Path) -> tuple[int, int]:
    stat = Path(path).stat()
    return stat.st_mtime_ns, stat.st_size


def _file_sha256(path: Path) -> str:
    """sha256_of, once per file version in a process: a stage fingerprints every condition twice
    (with and without its measurements) over the same token files."""
    return _sha256_of_version(Path(path), *_version(path))


@functools.lru_cache(maxsize=512)
def _sha256_of_version(path: Path, mtime_ns: int, size: int) -> str:
    return sha256_of(path)


@functools.lru_cache(maxsize=8)
def _recipe_digest(root: Path, versions: tuple) -> str:
    """The recipe's normalised code under `root` (codehash.code_digest: comments, docstrings
    and formatting do not count), once per version of its files in a process."""
    return code_digest([file for file, *_ in versions], root)


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
    """Finetune and score one condition: prepare, train (each intermediate task, then the
    final one), measure, write. With `log`, its per-epoch progress is appended there (the
    stage's own output stays one line per run). With `weights`, the finetuned weights are
    kept there (train.keep_weights). With `kept`, a finished result of this training run
    whose weights are at `weights`, nothing trains: the measurements `settings` ask for are
    made on those weights (measure_kept_weights)."""
    with progress_log(log) as progress:
        if kept is not None:
            if weights is None:
                raise ValueError(
                    f"{condition.describe()}: a kept result is measured on its weights, and none are given"
                )
            return measure_kept_weights(condition, settings, model_dir, tasks_dir, key, weights, kept, progress)
        final = prepare_final_step(condition, settings, model_dir, tasks_dir, key, progress)
        if isinstance(final, RunResult):  # an intermediate step diverged
            return final
        outcome = train_members(
            [final.member(checkpoint)], final.task, final.train_split, *final.seeds, final.eval_split_if(log_epochs)
        )[0]
        return finish(final, outcome, weights)


@dataclass(frozen=True)
class RunJob:
    """One run as a worker receives it (pickled into a spawned process, a SLURM job or a Ray task):
    run_condition's arguments, the result file its checkpoint and log sit beside, and its training
    fingerprint, with which a pack saves each run as it leaves (packed.run_pack). Paths are
    absolute: SLURM and Ray workers do not start in the stage's folder."""

    condition: Condition
    settings: RunSettings
    model_dir: Path
    tasks_dir: Path
    result_file: Path
    key: str
    training_key: str
    log_epochs: bool = False
    weights: Path | None = None  # where its finetuned weights are kept (train.keep_weights), or read from (`kept`)
    kept: RunResult | None = None  # a finished result of this training whose kept weights are measured

    @property
    def checkpoint(self) -> Path:
        return self.result_file.with_suffix(".ckpt")

    @property
    def log(self) -> Path:
        return self.result_file.with_suffix(".log")


def run_job(job: RunJob) -> RunResult:
    """run_condition of a job: what an executor calls in its worker."""
    return run_condition(
        job.condition,
        job.settings,
        job.model_dir,
        job.tasks_dir,
        job.log_epochs,
        job.checkpoint,
        job.key,
        job.log,
        job.weights,
        job.kept,
    )


@dataclass
class FinalStep:
    """A run ready to train its final task (its starting model on its device, measured at the
    start) and what finishing it needs: train_members trains it, alone or in a pack."""

    condition: Condition
    settings: RunSettings
    key: str
    task: TaskSpec
    model: Finetuner
    record: dict
    fresh: set[str]
    train_split: splits.TokenizedSplit
    indices: np.ndarray
    eval_split: splits.TokenizedSplit
    start_weights: dict
    run: Measured
    at_start: dict
    device: torch.device
    progress: Callable[[str], None]
    tasks_dir: Path  # span QA fits its null threshold on the training pool's held-out questions

    @property
    def seeds(self) -> tuple[int, int]:
        """(batch order, dropout) of the final task: the same for every run of one (task, size, trial)."""
        return training_seeds(self.condition, self.settings.seed)

    def eval_split_if(self, log_epochs: bool) -> splits.TokenizedSplit | None:
        return self.eval_split if log_epochs else None

    def member(self, checkpoint: Path | None) -> Member:
        return Member(
            self.model,
            self.settings,
            frozenset(self.fresh),
            self.condition.lr_multiplier,
            checkpoint,
            self.key,
            self.progress,
            layer_change_tracker(lambda: layer_weights(self.model.encoder)),
        )


def prepare_final_step(
    condition: Condition,
    settings: RunSettings,
    model_dir: Path,
    tasks_dir: Path,
    key: str,
    progress: Callable[[str], None],
) -> FinalStep | RunResult:
    """The condition's starting model on its device, every intermediate task trained (a
    RunResult if one diverged), and the final task's data and start-of-run measurements."""
    task = get_task(condition.task)
    chain = [get_task(name) for name in condition.intermediate_steps]
    model, record, device = _starting_model(condition, settings, model_dir, chain[0] if chain else task)
    progress(
        f"{condition.describe()}: training on {device.type} (torch {torch.__version__}, "
        f"{torch.get_num_threads()} threads)"
    )
    # The multiplier is for the whole tensors the scheme reinitialised (not head slices,
    # not the always-new task head).
    fresh = reinitialised_layer_parameters(model, record["reinitialised"])
    record["intermediate_steps"] = []
    if chain:
        diverged = _train_intermediate_steps(model, record, chain, fresh, condition, settings, tasks_dir, progress)
        if diverged is not None:
            return _result(condition, settings, record, diverged, {}, [], task, key)
        record["reinitialised"] += _new_head(model, task, condition, settings.seed)
        fresh = set()  # the scheme's fresh layers were fresh in the first step
    return _final_step(condition, settings, key, model, record, fresh, device, progress, model_dir, tasks_dir)


def _starting_model(
    condition: Condition, settings: RunSettings, model_dir: Path, head: TaskSpec
) -> tuple[Finetuner, dict, torch.device]:
    """The condition's starting model (pretrained, with its layers fresh: build_finetuner, a pure
    function of the condition) with a task head for `head`, on the device, and build_finetuner's record."""
    model, record = build_finetuner(
        model_dir, condition, head.kind.head_outputs(head.num_labels), settings.seed, head.kind.token_level
    )
    device = _device(settings)
    model.to(device)
    return model, record, device


def _train_intermediate_steps(
    model: Finetuner,
    record: dict,
    chain: list[TaskSpec],
    fresh: set[str],
    condition: Condition,
    settings: RunSettings,
    tasks_dir: Path,
    progress: Callable[[str], None],
) -> dict | None:
    """Sequential finetuning (Huang et al. 4.1): each intermediate task of `chain` in order before
    the final one, each with a head of its own (the model starts with the first's); the scheme's
    fresh layers are fresh in the first. Each step is recorded in record["intermediate_steps"];
    the outcome of the step that diverged, else None."""
    seed = settings.seed
    pool_size = lambda name: _load(tasks_dir, name, "train").examples  # noqa: E731 - read only for `full`
    for step, (step_task, (_, size, epochs)) in enumerate(zip(chain, condition.steps(pool_size))):
        if step:
            record["reinitialised"] += _new_head(model, step_task, condition, seed)
        step_split, indices = _training_split(tasks_dir, step_task.name, size, condition, seed)
        order_seed, dropout_seed = training_seeds(condition, seed, step)
        outcome = finetune(
            model,
            step_task,
            step_split,
            replace(settings, epochs=epochs),
            order_seed,
            fresh,
            condition.lr_multiplier,
            progress=lambda line, name=step_task.name: progress(f"intermediate {name}: {line}"),
            dropout_seed=dropout_seed,
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
            return outcome
        fresh = set()
    return None


def _final_step(
    condition: Condition,
    settings: RunSettings,
    key: str,
    model: Finetuner,
    record: dict,
    fresh: set[str],
    device: torch.device,
    progress: Callable[[str], None],
    model_dir: Path,
    tasks_dir: Path,
) -> FinalStep:
    """`model` about to train the final task: its data, its starting weights, and what the
    measurements `settings` ask for take from the start. What training (prepare_final_step) and
    measuring kept weights (measure_kept_weights) both start from."""
    task = get_task(condition.task)
    train_split, indices = _training_split(tasks_dir, task.name, condition.size, condition, settings.seed)
    eval_split = _load(tasks_dir, task.name, "eval")
    start_weights = layer_weights(model.encoder)
    run = _measured(model, task, train_split, eval_split, settings, model_dir, tasks_dir, record["depth"])
    at_start = _at_start(run, settings)
    record["base_weights_sha256"] = BaseModelRecord.read(model_dir).weights_sha256
    return FinalStep(
        condition,
        settings,
        key,
        task,
        model,
        record,
        fresh,
        train_split,
        indices,
        eval_split,
        start_weights,
        run,
        at_start,
        device,
        progress,
        tasks_dir,
    )


def finish(final: FinalStep, outcome: dict, weights: Path | None = None) -> RunResult:
    """Score and measure the finetuned model (its weights kept at `weights`), and write down what the run was."""
    model, task, settings, record = final.model, final.task, final.settings, final.record
    evaluation, changes = {}, []
    if outcome["status"] == "ok":
        if task.kind.fits_null_threshold:  # on training questions it did not train on
            held_out, record["null_threshold_questions"] = _held_out_split(
                final.tasks_dir, task.name, final.indices, final.condition, settings.seed
            )
            final.run.null_threshold = record["null_threshold"] = fit_null_threshold(
                model, task, held_out, settings.eval_batch_size, settings.precision
            )
        final.run.evaluation = evaluate(
            model,
            task,
            final.eval_split,
            settings.eval_batch_size,
            settings.precision,
            final.run.null_threshold,
            layer_features=settings.cka,
        )
        evaluation = final.run.evaluation
        changes = weight_change(final.start_weights, layer_weights(model.encoder))
        record.update(_at_end(final.run, settings, final.at_start))
        if weights is not None:
            record["weights_sha256"] = _keep_weights(model, weights)
    record["train_subset_sha256"] = hashlib.sha256(final.indices.tobytes()).hexdigest()
    record["eval_examples"] = final.eval_split.examples
    # what the fingerprint assumed, as it ran
    record["device"], record["torch"] = final.device.type, torch.__version__
    return _result(final.condition, settings, record, outcome, evaluation, changes, task, final.key)


@contextmanager
def progress_log(log: Path | None):
    """A function that appends one line to `log` (nothing without one)."""
    if log is None:
        yield lambda line: None
        return
    log.parent.mkdir(parents=True, exist_ok=True)
    with open(log, "a") as f:  # appended: a resumed or requeued run adds to its earlier attempt's lines
        yield lambda line: print(line, file=f, flush=True)


def _load(tasks_dir: Path, task: str, split: str) -> splits.TokenizedSplit:
    return splits.load_split(tasks_dir / task / "tokens.npz", split)


def _training_split(
    tasks_dir: Path, task: str, size: int, condition: Condition, seed: int
) -> tuple[splits.TokenizedSplit, np.ndarray]:
    """The examples (task, size, trial) trains on (tokens.training_subset) and their indices."""
    pool = _load(tasks_dir, task, "train")
    indices = tokens.training_subset(pool.examples, size, task, condition.stream("subset"), seed)
    return pool.of_examples(indices), indices


def _held_out_split(
    tasks_dir: Path, task: str, indices: np.ndarray, condition: Condition, seed: int
) -> tuple[splits.TokenizedSplit, int]:
    """The training-pool examples the run did not train on that span QA fits its threshold on
    (tokens.held_out_subset), and how many."""
    pool = _load(tasks_dir, task, "train")
    held_out = tokens.held_out_subset(pool.examples, indices, task, condition.stream("subset"), seed)
    return pool.of_examples(held_out), len(held_out)


def measure_kept_weights(
    condition: Condition,
    settings: RunSettings,
    model_dir: Path,
    tasks_dir: Path,
    key: str,
    weights: Path,
    kept: RunResult,
    progress: Callable[[str], None] = lambda line: None,
) -> RunResult:
    """`kept` (a finished run of this training that kept its weights, train.keep_weights) with
    the measurements `settings` ask for: those it made are kept, the missing ones are made on
    its kept weights instead of training again. The starting model is rebuilt from the condition
    (a pure function of it: build_finetuner) for the measurements that read it (`at_start`),
    which is why a run with an intermediate task cannot give them this way
    (schedule.measurable_from_weights, which also checks that they are the file the run
    recorded). They must reproduce its eval predictions exactly, else this fails and says so."""
    missing = missing_measurements(kept, settings)
    switches = {m.setting: m.setting in missing for m in MEASUREMENTS}
    only = replace(settings, **switches)  # type: ignore[arg-type]  # each MEASUREMENTS setting is a bool field
    model, record, device = _starting_model(condition, settings, model_dir, get_task(condition.task))
    progress(f"{condition.describe()}: measuring {', '.join(missing)} on its kept weights {weights.name}, no training")
    final = _final_step(condition, only, key, model, record, set(), device, progress, model_dir, tasks_dir)
    load_model(model, weights, device=str(device))
    final.run.null_threshold = kept.null_threshold
    final.run.evaluation = evaluate(
        model,
        final.task,
        final.eval_split,
        settings.eval_batch_size,
        settings.precision,
        final.run.null_threshold,
        layer_features=only.cka,
    )
    if final.task.kind.encode_predictions(final.run.evaluation["predictions"]) != kept.predictions:
        raise RuntimeError(
            f"the weights in {weights} do not reproduce their run's eval predictions (another device, precision or "
            "thread count?): delete them and the result to retrain"
        )
    made = _at_end(final.run, only, final.at_start)
    return measured_as(kept, settings, key, {m.field: getattr(kept, m.field) for m in MEASUREMENTS} | made)


def _measured(
    model, task, train_split, eval_split, settings: RunSettings, model_dir: Path, tasks_dir: Path, depth: dict
) -> Measured:
    """What the measurements read of this run (src/measures): the base model's encoder and eval
    features are loaded once per worker process and task. `depth`: build_finetuner's depth audit,
    which pretrained layer each position holds."""
    device = next(model.parameters()).device.type
    tokens_file = tasks_dir / task.name / "tokens.npz"

    def score(split) -> float:
        # with the run's fitted null threshold once there is one, as its reported score is made
        scored = evaluate(model, task, split, settings.eval_batch_size, settings.precision, run.null_threshold)
        return scored["scores"][task.headline]

    run = Measured(
        model=model,
        task=task,
        train_split=train_split,
        eval_split=eval_split,
        settings=settings,
        evaluation={},
        pretrained_encoder=lambda: _pretrained(model_dir, device),
        pretrained_features=lambda: _pretrained_features(
            model_dir, device, tokens_file, settings.eval_batch_size, settings.precision
        ),
        score=score,
        source_layers=[layer - 1 for layer in depth["kept"]],
    )
    return run


def _at_start(run: Measured, settings: RunSettings) -> dict:
    """What each measurement `settings` ask for takes from the starting weights, by setting."""
    return {m.setting: m.at_start(run) for m in MEASUREMENTS if getattr(settings, m.setting) and m.at_start is not None}


def _at_end(run: Measured, settings: RunSettings, at_start: dict) -> dict:
    """Each measurement `settings` ask for, made on the finetuned model: RunResult field -> value,
    and `measurement_code`, the digest of the code that made each (reuse.made_now)."""
    made = {m.field: m.at_end(run, at_start.get(m.setting)) for m in MEASUREMENTS if getattr(settings, m.setting)}
    return {**made, "measurement_code": made_now(settings)}


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


def _new_head(model: Finetuner, task, condition: Condition, seed: int) -> list:
    """A fresh task head for `task` (every finetuning step gets its own)."""
    return new_task_head(
        model,
        task.kind.head_outputs(task.num_labels),
        condition,
        seed,
        cast("PretrainedConfig", model.encoder.config).initializer_range,
        task.kind.token_level,
    )


def training_seeds(condition: Condition, seed: int, step: int | None = None) -> tuple[int, int]:
    """(batch order, dropout) of the final task's training (`step` None), the same for every run of
    one (task, size, trial), or of intermediate step `step` (the first keeps its earlier purpose name)."""
    purpose = "train" if step is None else "train-intermediate" if step == 0 else f"train-intermediate-{step}"
    return condition.seed(seed, purpose, "order"), condition.seed(seed, purpose, "dropout")


def _seeds(condition: Condition, seed: int) -> dict[str, int | str]:
    """The seeds the run drew from, one per source (each reinitialised tensor has its own, from its name),
    each from the function that draws it."""
    c = condition
    order, dropout = training_seeds(c, seed)
    seeds: dict[str, int | str] = {
        "base": seed,
        "subset": tokens.subset_seed(seed, c.task, c.size, c.stream("subset")),
        "order": order,
        "dropout": dropout,
    }
    seeds.update(c.scheme_seeds(seed))
    for step, task in enumerate(c.intermediate_steps):
        suffix = f"_{step}" if step else ""
        size = c.size if c.intermediate_size is None else c.intermediate_size
        seeds[f"subset_intermediate{suffix}"] = (
            tokens.subset_seed(seed, task, int(size), c.stream("subset")) if size != FULL else "the whole training set"
        )
        seeds[f"order_intermediate{suffix}"], seeds[f"dropout_intermediate{suffix}"] = training_seeds(c, seed, step)
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
