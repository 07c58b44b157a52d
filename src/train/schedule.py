"""A finetune stage's work: which of its conditions still need a run, running them on the
configured executor, saving each result as it finishes, and removing what is stale.

Finished conditions survive a kill: each result is written atomically with the
fingerprint of everything it depends on, the stage's output is `persist` in dvc.yaml,
and a rerun reuses every result whose fingerprint still matches, resumes a half-done
condition from its checkpoint (train.checkpoint_every), and trains the rest. Files of
conditions the params no longer ask for are removed at the end.
"""

from __future__ import annotations

import json
import math
import shutil
from collections.abc import Callable, Iterator
from dataclasses import dataclass, replace
from enum import Enum
from pathlib import Path
from typing import TYPE_CHECKING

from src.artefacts.base_model import BaseModelRecord
from src.artefacts.run_result import (
    MEASUREMENT_CODE_FILE,
    PACK_FALLBACKS,
    RunResult,
    readable,
    result_path,
    weights_path,
)
from src.conditions.condition import Condition
from src.conditions.studies import all_study_conditions, focus_conditions, head_references, trained_conditions
from src.config.schema import Config, ExecutorConfig, TrainConfig
from src.core.errors import ParamsError
from src.core.files import sha256_of, write_json_atomically
from src.measures import MEASUREMENTS
from src.schemes.registry import scheme_of
from src.tasks.registry import get_task
from src.train.device import resolve_precision, run_device
from src.train.executors import Failure, concurrency, execute
from src.train.loop import RunSettings
from src.train.packed import cpu_pack_warning, keys_as_trained, pack_key, run_pack
from src.train.progress import LaterWork, Progress, optimizer_steps
from src.train.reuse import (
    as_current,
    kept_stale,
    measurement_code,
    missing_measurements,
    stale_measurements,
    with_measurements_of,
)
from src.train.run import RunJob, equivalent_fingerprints, fingerprint, run_job

if TYPE_CHECKING:  # annotations only
    from src.params.load import ModelLimits


def run_settings(config: Config, epochs: int, full_model: bool = False, head_reference: bool = False) -> RunSettings:
    """The settings of a run; `precision: auto` resolved for the device the run trains on,
    so the result and its fingerprint hold the precision actually used. The measurements
    are resolved for the run too (`full_model`: nothing reinitialised, permuted or trained
    before, see is_full_model; `head_reference`: a head study compares its runs with this
    one, see head_references), so switching one that applies to some runs only leaves
    every other run's fingerprint as it was."""
    train, device = config.train, run_device(config.executor)
    precision = resolve_precision(train.precision, device)
    if train.pack and precision == "fp16":
        raise ParamsError(
            f"params.yaml: train.pack = {train.pack} is invalid with train.precision {train.precision!r}, which is "
            "fp16 here (a GPU without bf16): fp16 loss scaling is per run; allowed: train.pack 0, or precision fp32"
        )
    criticality = train.criticality == "all" or (train.criticality == "full_model" and full_model)
    importance = {"off": False, "head_studies": full_model and head_reference, "full_model": full_model}
    return RunSettings(
        train.lr,
        train.batch_size,
        epochs,
        train.weight_decay,
        train.eval_batch_size,
        train.group_by_length,
        precision,
        train.checkpoint_every,
        train.threads,
        config.seed,
        device,
        pack=train.pack,
        cka=train.cka,
        criticality=criticality,
        criticality_examples=train.criticality_examples if criticality else 0,
        head_importance=importance[train.head_importance],
    )


def is_full_model(condition: Condition, num_layers: int) -> bool:
    """Plain finetuning of the whole pretrained model: nothing reinitialised, permuted or removed, no task first."""
    return (
        not condition.reinit_layers(num_layers)
        and not scheme_of(condition.scheme).alters_model
        and condition.intermediate_task is None
    )


def pool_sizes(tasks_dir: Path) -> Callable[[str], int]:
    """task -> its training examples, as the data stage recorded them (what `full` means)."""
    return lambda task: json.loads((tasks_dir / task / "info.json").read_text())["train_examples"]


def check_sizes(conditions: list[Condition], tasks_dir: Path, where: str) -> None:
    """Every training size, intermediate steps included, must fit its task's pool: fail before
    the first condition trains."""
    pool = pool_sizes(tasks_dir)
    for condition in conditions:
        for task, size, _ in condition.steps(lambda task: 0):  # `full` asks for 0: it always fits
            if size > pool(task):
                raise ParamsError(
                    f"params.yaml: {where} asks for {size} training examples of task {task!r}, which has {pool(task)}"
                )
        final, size = condition.task, condition.size
        if get_task(final).kind.fits_null_threshold and size >= pool(final):
            raise ParamsError(
                f"params.yaml: {where} asks for {size} training examples of task {final!r}, all {pool(final)}: "
                f"span QA fits its no-answer threshold on training questions the run does not train on; at most "
                f"{pool(final) - 1}"
            )


def run_stage_conditions(
    config: Config,
    limits: ModelLimits,
    model_dir: Path,
    tasks_dir: Path,
    out: Path,
    study: str | None,
    reuse: Path | None,
) -> list[RunResult]:
    """A finetune stage's runs: the conditions of studies.<study> that no earlier study trains
    (src/conditions/studies.py), or with no study the focus condition's trials; every one
    checked against the model and its task's pool before the first trains."""
    num_layers, num_heads = limits.num_layers, limits.num_heads
    if num_layers is None or num_heads is None:  # model_limits of a prepared model knows both
        raise ParamsError(f"{model_dir} holds no prepared model (base.json) to check the conditions against")
    if study is None:
        conditions, where, log_epochs = focus_conditions(config), "the focus condition", False
    else:
        reported = all_study_conditions(config, num_layers)
        conditions, where = trained_conditions(reported, study, num_layers), f"studies.{study}"
        # StudyConfig's fields are made from the scheme registry (make_dataclass): mypy cannot see them
        log_epochs = config.studies[study].epochs is not None  # type: ignore[attr-defined]
    for condition in conditions:
        condition.check(num_layers, num_heads)
    check_sizes(conditions, tasks_dir, where)
    later = later_work(config, num_layers, study, out.parent, tasks_dir) if study is not None else None
    return run_all(conditions, config, model_dir, tasks_dir, out, where, log_epochs, reuse, later)


def later_work(config: Config, num_layers: int, study: str, studies_dir: Path, tasks_dir: Path) -> LaterWork:
    """The runs the finetune stages after `study` (in params.yaml's order, which dvc.yaml's foreach keeps) have
    no result file for yet, and the examples they train: what the pipeline's ETA adds to this stage's."""
    names = list(config.studies)
    later_studies = names[names.index(study) + 1 :]
    reported, pool = all_study_conditions(config, num_layers), pool_sizes(tasks_dir)
    missing = [
        condition
        for name in later_studies
        for condition in trained_conditions(reported, name, num_layers)
        if not result_path(studies_dir / name, condition).exists()
    ]
    return LaterWork(len(later_studies), len(missing), sum(c.examples_trained(pool) for c in missing))


def finished_in_studies(
    studies_dir: Path,
    condition: Condition,
    settings: RunSettings,
    key: str,
    training_key: str,
    equivalent: dict[str, str],
) -> tuple[RunResult, Path] | None:
    """(result, its file) of a study that finished this run (with_measurements_of; `equivalent`:
    as_current; a packed one at the pack sizes it trained at: keys_as_trained), if any."""
    for study in sorted(p for p in studies_dir.iterdir() if p.is_dir()):
        path = result_path(study, condition)
        found = as_current(readable(path), equivalent)
        if result := with_measurements_of(found, settings, *keys_as_trained(settings, key, training_key, found)):
            return result, path
    return None


def measurable_from_weights(
    found: RunResult | None, condition: Condition, settings: RunSettings, training_key: str, weights: Path
) -> bool:
    """Whether `found`, a finished result at this condition's place, trained as asked and kept its
    weights (train.keep_weights: the file it recorded, by sha256), so that the measurements it
    lacks are made on them instead of training again (run.measure_kept_weights). Not for a
    measurement that reads the weights the run started from on a run with an intermediate task:
    that start was not kept."""
    if found is None or not found.ok or found.training_fingerprint != training_key or found.weights_sha256 is None:
        return False
    reads_start = {m.setting for m in MEASUREMENTS if m.reads_start}
    if condition.intermediate_steps and reads_start & set(missing_measurements(found, settings)):
        return False
    return weights.exists() and sha256_of(weights) == found.weights_sha256


class Action(Enum):
    """What a finetune stage does with one run."""

    KEEP = "keep"  # finished earlier here with this fingerprint, or measured more than asked now
    COPY = "copy"  # the same run finished in another study (`reuse`)
    MEASURE = "measure"  # trained as asked and kept its weights: the missing measurements are made on them
    TRAIN = "train"


@dataclass(frozen=True)
class Planned:
    """A run's action and why: `line`, printed before anything trains (none for a plain MEASURE or TRAIN)."""

    action: Action
    result: RunResult | None = None  # KEEP, COPY: the result as this stage records it; MEASURE: the one measured
    source: Path | None = None  # COPY: the other study's result file
    line: str = ""
    rewrite: bool = False  # KEEP: written again without the measurements no longer asked for, or relabelled


def plan_run(job: RunJob, keep_weights: bool, reuse: Path | None, equivalent: dict[str, str]) -> Planned:
    """What the stage does with `job`, from the files at its place and in the studies of `reuse`;
    it reads them only, so a stage plans every run before it writes or trains anything. A result
    whose fingerprint a recipe declared equivalent made (`equivalent`: as_current) is current, and
    so is a packed one at the pack sizes it trained at (keys_as_trained)."""
    weights = weights_path(job.result_file)
    on_disk = readable(job.result_file)
    found = as_current(on_disk, equivalent)
    key, training_key = keys_as_trained(job.settings, job.key, job.training_key, found)
    result = with_measurements_of(found, job.settings, key, training_key)
    if result is not None and keep_weights and result.ok and not weights.exists():
        line = "finished earlier without its weights; trains again to keep them (train.keep_weights)"
        return Planned(Action.TRAIN, line=line)
    if result is not None:
        dropped = result is not found  # it measured more than asked now: the same run, kept without the rest
        note = " (the measurements no longer asked for dropped)" if dropped else ""
        # a measurement digest declared equivalent is recorded as today's, so the report reads it current
        relabelled = on_disk is not None and result.measurement_code != on_disk.measurement_code
        return Planned(Action.KEEP, result, line=f"finished earlier, kept{note}", rewrite=dropped or relabelled)
    if reuse is not None and (
        twin := finished_in_studies(reuse, job.condition, job.settings, job.key, job.training_key, equivalent)
    ):
        result, source = twin
        if keep_weights and result.ok and not weights_path(source).exists():
            return Planned(
                Action.TRAIN, line=f"the same run as in {source}, without its weights; trains again to keep them"
            )
        return Planned(Action.COPY, result, source, f"the same run as in {source}, copied")
    if measurable_from_weights(found, job.condition, job.settings, training_key, weights):
        return Planned(Action.MEASURE, found)  # what it lacks, stale measurements included, made on its kept weights
    if (result := kept_stale(found, job.settings, key, training_key)) is not None:
        stale = ", ".join(stale_measurements(result, job.settings))
        line = f"finished earlier, kept; its {stale} made by older code, stale (no kept weights to redo it)"
        return Planned(Action.KEEP, result, line=line, rewrite=result is not found)
    return Planned(Action.TRAIN)


def run_all(
    conditions: list[Condition],
    config: Config,
    model_dir: Path,
    tasks_dir: Path,
    out: Path,
    where: str,
    log_epochs: bool,
    reuse: Path | None = None,
    later: LaterWork | None = None,
) -> list[RunResult]:
    """Every condition's result: kept, copied from another study (`reuse`), measured on its kept
    weights, or trained now (plan_run). With train.keep_weights every finished run has its weights beside it."""
    keep = config.train.keep_weights
    num_layers = BaseModelRecord.read(model_dir).num_layers
    compared = head_references(config, num_layers) if config.train.head_importance == "head_studies" else set()
    settings = [run_settings(config, c.epochs, is_full_model(c, num_layers), c in compared) for c in conditions]
    keys = [fingerprint(c, s, model_dir, tasks_dir) for c, s in zip(conditions, settings)]
    training_keys = [fingerprint(c, s.unmeasured(), model_dir, tasks_dir) for c, s in zip(conditions, settings)]
    # Absolute paths: SLURM and Ray workers do not start in this folder (it must be on a shared filesystem).
    jobs = [
        RunJob(
            c, s, model_dir.resolve(), tasks_dir.resolve(), result_path(out, c).resolve(), key, training_key, log_epochs
        )
        for c, s, key, training_key in zip(conditions, settings, keys, training_keys)
    ]
    equivalent = [equivalent_fingerprints(c, s, model_dir, tasks_dir) for c, s in zip(conditions, settings)]
    plan = [plan_run(job, keep, reuse, same) for job, same in zip(jobs, equivalent)]
    results = [
        settle(job, planned, keep, f"[{i + 1}/{len(jobs)}] {job.condition.describe()}")
        for i, (job, planned) in enumerate(zip(jobs, plan))
    ]
    pool = pool_sizes(tasks_dir)
    failed = execute_and_record(submitted(jobs, plan, keep, pool), results, config, pool, where, later)
    remove_stale(out, [result_path(out, c) for c in conditions], keep)
    if conditions:  # what the report calls a result's measurements stale against
        write_json_atomically(out / MEASUREMENT_CODE_FILE, measurement_code())
    if failed:  # every finished result is saved as it finished; a rerun trains only these
        raise SystemExit(
            f"finetune {where}: {len(failed)} of {len(conditions)} runs failed (their causes are in <run>.failed next "
            "to each result):\n  " + "\n  ".join(failed)
        )
    return [result for result in results if result is not None]


def settle(job: RunJob, planned: Planned, keep_weights: bool, tag: str) -> RunResult | None:
    """Write what a kept or copied run needs at its place and print the plan's line; the run's
    result where it has one now (KEEP, COPY)."""
    if planned.action is Action.KEEP and planned.result is not None and planned.rewrite:
        planned.result.write(job.result_file)
    elif planned.action is Action.COPY and planned.result is not None and planned.source is not None:
        if keep_weights and planned.result.ok:  # the weights first: a result without them would train again
            weights = weights_path(job.result_file)
            weights.parent.mkdir(parents=True, exist_ok=True)
            shutil.copyfile(weights_path(planned.source), weights)
        planned.result.write(job.result_file)
    if planned.line:
        print(f"{tag}: {planned.line}")
    return planned.result if planned.action in (Action.KEEP, Action.COPY) else None


def submitted(
    jobs: list[RunJob], plan: list[Planned], keep_weights: bool, pool: Callable[[str], int]
) -> list[tuple[int, RunJob]]:
    """(position, job as submitted) of every run that measures or trains: its weights' file where it
    keeps or reads them, the result it measures. Longest runs first, so that a stage ends on a short one
    and the other workers idle less; measuring kept weights trains nothing."""
    todo = []
    for i, (job, planned) in enumerate(zip(jobs, plan)):
        measure = planned.action is Action.MEASURE
        if measure or planned.action is Action.TRAIN:
            weights = weights_path(job.result_file) if keep_weights or measure else None
            todo.append((i, replace(job, weights=weights, kept=planned.result if measure else None)))
    return sorted(todo, key=lambda item: 0 if item[1].kept is not None else -item[1].condition.examples_trained(pool))


def execute_and_record(
    todo: list[tuple[int, RunJob]],
    results: list[RunResult | None],
    config: Config,
    pool: Callable[[str], int],
    where: str,
    later: LaterWork | None,
) -> list[str]:
    """Run `todo` ((position, job), submitted's order) on the executor: each result saved as it
    finishes and put at its position in `results`, each failure recorded beside its result file
    (<run>.failed) with its cause while the other runs go on, one line printed per run. The
    failures, one line each."""
    jobs = [job for _, job in todo]
    examples = [0 if job.kept is not None else job.condition.examples_trained(pool) for job in jobs]
    # Steps are counted by local unpacked workers only (torch's optimizer-step hook: SLURM and Ray
    # runs, and packs, which step no torch.optim optimizer, report when they finish).
    steps = [
        0 if job.kept is not None else optimizer_steps(job.condition, pool, config.train.batch_size) for job in jobs
    ]
    counted = steps if config.executor.kind == "local" and not config.train.pack else None
    failed = []
    with Progress(
        examples, concurrency(config.executor, config.train), counted, f"finetune {where}", later=later
    ) as progress:
        for done, (position, outcome) in enumerate(outcomes(jobs, config, progress), 1):
            i, job = todo[position]
            line = f"[{len(results) - len(todo) + done}/{len(results)}] {job.condition.describe()}"
            if isinstance(outcome, Failure):  # recorded with its cause; the other runs go on
                write_failure(job, outcome)
                failed.append(f"{job.condition.describe()}: {outcome.cause}")
                progress.finished(
                    position, f"{line}: failed after {outcome.attempts} attempt(s): {outcome.cause}", failed=True
                )
                continue
            # saved as it finishes; a packed run with the training fingerprint at its pack sizes (run_pack)
            results[i] = result = outcome.save_finished(
                job.result_file, outcome.training_fingerprint or job.training_key
            )
            if job.kept is not None:
                progress.finished(position, f"{line}: measured on its kept weights, not trained {result.scores}")
            else:
                progress.finished(position, f"{line}: {result.status} {result.scores} ({result.train_seconds} s)")
    return failed


def outcomes(jobs: list[RunJob], config: Config, progress: Progress) -> Iterator[tuple[int, RunResult | Failure]]:
    """(position in `jobs`, result or Failure) as each job ends on the executor: with train.pack the
    runs of one (task, size, trial) in stacked packs (measuring kept weights trains nothing), else
    each alone, its optimizer steps counted into `progress`."""
    if not config.train.pack:
        return execute(run_job, [(job,) for job in jobs], config.executor, config.train, steps=progress.steps)
    if jobs:
        cpu_pack_warning(jobs[0].settings)
    keys = [None if job.kept is not None else pack_key(job.condition, job.settings, config.seed) for job in jobs]
    return execute_packs(jobs, packs(keys, config.train.pack), config.executor, config.train)


def write_failure(job: RunJob, failure: Failure) -> None:
    """<run>.failed beside the job's result file: its condition, fingerprint, attempts and cause."""
    write_json_atomically(
        job.result_file.with_suffix(".failed"),
        {
            "condition": job.condition.as_dict(),
            "fingerprint": job.key,
            "attempts": failure.attempts,
            "cause": failure.cause,
        },
    )


def packs(keys: list[tuple | None], size: int) -> list[list[int]]:
    """Positions of runs grouped into packs of at most `size` runs with one pack_key, each group
    split into packs as even as can be (70 runs at 32: 24, 23, 23), in the order the runs come
    (longest first: runs of similar length share a pack); a run without a key trains alone."""
    groups: dict[tuple, list[int]] = {}
    alone = []
    for position, key in enumerate(keys):
        if key is None:
            alone.append([position])
        else:
            groups.setdefault(key, []).append(position)
    result = alone
    for members in groups.values():
        count = math.ceil(len(members) / size)
        cuts = [round(len(members) * part / count) for part in range(count + 1)]
        result += [members[a:b] for a, b in zip(cuts, cuts[1:])]
    return sorted(result, key=lambda pack: pack[0])


def execute_packs(
    jobs: list[RunJob], groups: list[list[int]], executor: ExecutorConfig, train: TrainConfig
) -> Iterator[tuple[int, RunResult | Failure]]:
    """Every job of `groups` (packs of positions in `jobs`) trained packed on the executor;
    (position, result or Failure) as each pack ends. A failed pack's members that left it first
    keep their results (saved as each left); its runs not finished yet take a fallback
    (pack_fallback): one `note:` line says it, and their results record it. Each run's pack sizes
    are in its result and its fingerprint (packed.keys_as_trained), so a run trained after a
    fallback is told apart from one trained as planned."""
    todo: list[tuple[list[int], str | None, int]] = [(members, None, 0) for members in groups]  # + fallback, failures
    while todo:
        packed, todo = todo, []
        args = [([jobs[p] for p in members], fallback) for members, fallback, _ in packed]
        for pack, outcome in execute(run_pack, args, executor, train):
            members, _, failures = packed[pack]
            if not isinstance(outcome, Failure):
                yield from zip(members, outcome)
                continue
            left = []
            for position in members:  # members that left before the pack failed were saved then
                job, saved = jobs[position], readable(jobs[position].result_file)
                if (
                    saved is not None
                    and saved.fingerprint == keys_as_trained(job.settings, job.key, job.training_key, saved)[0]
                ):
                    yield position, saved
                else:
                    left.append(position)
            fallback = pack_fallback(left, outcome.cause, failures)
            if fallback is None:
                yield from ((p, Failure(outcome.cause, failures + 1)) for p in left)
                continue
            kind, parts = fallback
            sizes = ", ".join(str(len(part)) for part in parts)
            print(
                f"note: a pack of {len(left)} runs ({jobs[left[0]].condition.describe()} and {len(left) - 1} more) "
                f"failed ({outcome.cause}): {PACK_FALLBACKS[kind]}, as packs of {sizes}; each result records "
                f"pack_fallback: {kind}",
                flush=True,
            )
            todo += [(part, kind, failures + 1) for part in parts]


def pack_fallback(left: list[int], cause: str, failures: int) -> tuple[str, list[list[int]]] | None:
    """(fallback, the packs it trains `left` in) for a pack whose runs `left` did not finish,
    which failed with `cause` after `failures` earlier failures; None: they fail. Out of memory,
    the pack is split in two (a pack of one that runs out fails); any other failure is tried once
    more, then each run trains as a pack of one (the same stacked step, so its numbers are the
    ones its fingerprint promises)."""
    if not left:
        return None
    if "OutOfMemoryError" in cause:
        half = math.ceil(len(left) / 2)
        return ("split", [left[:half], left[half:]]) if len(left) > 1 else None
    if failures == 0:
        return "retried", [left]
    return ("alone", [[position] for position in left]) if failures == 1 else None


def remove_stale(out: Path, paths: list[Path], keep_weights: bool = False) -> None:
    """Delete every file under `out` that belongs to no condition asked for (and every run's kept
    weights unless train.keep_weights), then empty folders."""
    out.mkdir(parents=True, exist_ok=True)  # DVC's output, even for a study whose runs all belong to others
    kept = {path.with_suffix(suffix) for path in paths for suffix in (".json", ".ckpt", ".log", ".failed")}
    kept.add(out / MEASUREMENT_CODE_FILE)
    kept |= {weights_path(path) for path in paths} if keep_weights else set()
    for stale in [p for p in out.rglob("*") if p.is_file() and p not in kept]:
        stale.unlink()
    for folder in sorted((p for p in out.rglob("*") if p.is_dir()), reverse=True):
        if not any(folder.iterdir()):
            folder.rmdir()
