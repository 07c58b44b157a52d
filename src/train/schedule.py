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
from collections.abc import Iterator
from pathlib import Path
from typing import TYPE_CHECKING

from src.artefacts.base_model import BaseModelRecord
from src.artefacts.run_result import RunResult, readable, result_path, weights_path
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
from src.train.packed import RUN_ARGUMENTS, pack_key, run_pack
from src.train.progress import LaterWork, Progress, optimizer_steps
from src.train.reuse import missing_measurements, with_measurements_of
from src.train.run import fingerprint, run_condition

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


def pool_sizes(tasks_dir: Path):
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
    if study is None:
        conditions, where, log_epochs = focus_conditions(config), "the focus condition", False
    else:
        reported = all_study_conditions(config, limits.num_layers)
        conditions, where = trained_conditions(reported, study, limits.num_layers), f"studies.{study}"
        log_epochs = config.studies[study].epochs is not None
    for condition in conditions:
        condition.check(limits.num_layers, limits.num_heads)
    check_sizes(conditions, tasks_dir, where)
    later = later_work(config, limits.num_layers, study, out.parent, tasks_dir) if study is not None else None
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
    studies_dir: Path, condition: Condition, settings: RunSettings, key: str, training_key: str
) -> tuple[RunResult, Path] | None:
    """(result, its file) of a study that finished this run (with_measurements_of), if any."""
    for study in sorted(p for p in studies_dir.iterdir() if p.is_dir()):
        path = result_path(study, condition)
        if (result := with_measurements_of(readable(path), settings, key, training_key)) is not None:
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


def run_all(  # noqa: C901, PLR0912, PLR0915
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
    weights, or trained now. With train.keep_weights every finished run has its weights beside it."""
    paths = [result_path(out, condition) for condition in conditions]
    weights = [weights_path(path) for path in paths]
    keep = config.train.keep_weights
    num_layers = BaseModelRecord.read(model_dir).num_layers
    compared = head_references(config, num_layers) if config.train.head_importance == "head_studies" else set()
    settings = [run_settings(config, c.epochs, is_full_model(c, num_layers), c in compared) for c in conditions]
    keys = [fingerprint(c, s, model_dir, tasks_dir) for c, s in zip(conditions, settings)]
    training_keys = [fingerprint(c, s.unmeasured(), model_dir, tasks_dir) for c, s in zip(conditions, settings)]
    results: list[RunResult | None] = []
    measure: dict[int, RunResult] = {}  # runs whose kept weights give what they lack
    for i, condition in enumerate(conditions):
        tag = f"[{i + 1}/{len(conditions)}] {condition.describe()}"
        found = readable(paths[i])
        result = with_measurements_of(found, settings[i], keys[i], training_keys[i])
        if result is not None and keep and result.ok and not weights[i].exists():
            print(f"{tag}: finished earlier without its weights; trains again to keep them (train.keep_weights)")
            result = None
        elif result is not None:
            note = ""
            if result is not found:  # it measured more than asked now: the same run, kept without the rest
                result.write(paths[i])
                note = " (the measurements no longer asked for dropped)"
            print(f"{tag}: finished earlier, kept{note}")
        elif reuse is not None and (
            twin := finished_in_studies(reuse, condition, settings[i], keys[i], training_keys[i])
        ):
            result, source = twin
            if keep and result.ok and not weights_path(source).exists():
                print(f"{tag}: the same run as in {source}, without its weights; trains again to keep them")
                result = None
            else:
                if keep and result.ok:  # the weights first: a result without them would train again
                    weights[i].parent.mkdir(parents=True, exist_ok=True)
                    shutil.copyfile(weights_path(source), weights[i])
                result.write(paths[i])
                print(f"{tag}: the same run as in {source}, copied")
        elif measurable_from_weights(found, condition, settings[i], training_keys[i], weights[i]):
            measure[i] = found
        results.append(result)
    # Longest runs first, so that a stage ends on a short one and the other workers idle less; measuring
    # kept weights trains nothing.
    pool = pool_sizes(tasks_dir)
    examples = [0 if i in measure else condition.examples_trained(pool) for i, condition in enumerate(conditions)]
    todo = sorted((i for i, result in enumerate(results) if result is None), key=lambda i: -examples[i])
    # Absolute paths: SLURM and Ray workers do not start in this folder (it must be on a shared filesystem).
    runs = [
        (
            conditions[i],
            settings[i],
            model_dir.resolve(),
            tasks_dir.resolve(),
            log_epochs,
            paths[i].with_suffix(".ckpt").resolve(),
            keys[i],
            paths[i].with_suffix(".log").resolve(),
            weights[i].resolve() if keep or i in measure else None,
            measure.get(i),
        )
        for i in todo
    ]
    # Steps are counted by local unpacked workers only (torch's optimizer-step hook: SLURM and Ray
    # runs, and packs, whose AdamW is written out, report when they finish).
    steps = [0 if i in measure else optimizer_steps(conditions[i], pool, config.train.batch_size) for i in todo]
    steps = steps if config.executor.kind == "local" and not config.train.pack else None
    with Progress(
        [examples[i] for i in todo], concurrency(config.executor, config.train), steps, f"finetune {where}", later=later
    ) as progress:
        if config.train.pack:  # runs of one (task, size, trial) in stacked packs; measuring kept weights trains nothing
            keys_of_packs = [None if i in measure else pack_key(conditions[i], settings[i], config.seed) for i in todo]
            saves = [(paths[i], training_keys[i]) for i in todo]
            outcomes = execute_packs(
                runs, packs(keys_of_packs, config.train.pack), saves, config.executor, config.train
            )
        else:
            outcomes = execute(run_condition, runs, config.executor, config.train, steps=progress.steps)
        failed = []
        for done, (job, result) in enumerate(outcomes, 1):
            i = todo[job]
            line = f"[{len(conditions) - len(todo) + done}/{len(conditions)}] {conditions[i].describe()}"
            if isinstance(result, Failure):  # recorded with its cause; the other runs go on
                write_json_atomically(
                    paths[i].with_suffix(".failed"),
                    {
                        "condition": conditions[i].as_dict(),
                        "fingerprint": keys[i],
                        "attempts": result.attempts,
                        "cause": result.cause,
                    },
                )
                failed.append(f"{conditions[i].describe()}: {result.cause}")
                progress.finished(
                    job, f"{line}: failed after {result.attempts} attempt(s): {result.cause}", failed=True
                )
                continue
            results[i] = result = result.save_finished(paths[i], training_keys[i])  # saved as it finishes
            if i in measure:
                progress.finished(job, f"{line}: measured on its kept weights, not trained {result.scores}")
            else:
                progress.finished(job, f"{line}: {result.status} {result.scores} ({result.train_seconds} s)")

    remove_stale(out, paths, keep)
    if failed:  # every finished result is saved above; a rerun trains only these
        raise SystemExit(
            f"finetune {where}: {len(failed)} of {len(conditions)} runs failed (their causes are in <run>.failed next "
            "to each result):\n  " + "\n  ".join(failed)
        )
    return results


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
    runs: list[tuple],
    groups: list[list[int]],
    saves: list[tuple[Path, str]],
    executor: ExecutorConfig,
    train: TrainConfig,
) -> Iterator[tuple[int, RunResult | Failure]]:
    """Every run of `groups` (packs of positions in `runs`) trained packed on the executor;
    (position, result or Failure) as each pack ends. A pack that fails is tried once more,
    then each of its runs not finished yet trains as a pack of one (the same stacked step, so
    its numbers are the ones its fingerprint promises); a run that fails then is a Failure."""
    for attempt in (1, 2, 3):
        jobs = groups if attempt < 3 else [[position] for group in groups for position in group]
        failed = []
        for job, outcome in execute(
            run_pack, [([runs[p] for p in job], [saves[p] for p in job]) for job in jobs], executor, train
        ):
            if not isinstance(outcome, Failure):
                yield from zip(jobs[job], outcome)
                continue
            left = []
            for position in jobs[job]:  # members that left before the pack failed were saved then
                saved = readable(saves[position][0])
                if saved is not None and saved.fingerprint == runs[position][RUN_ARGUMENTS.index("key")]:
                    yield position, saved
                else:
                    left.append(position)
            if attempt == 3:
                yield from ((p, Failure(outcome.cause, 3)) for p in left)
            elif left:
                failed.append(left)
        groups = failed
        if not groups:
            return


def remove_stale(out: Path, paths: list[Path], keep_weights: bool = False) -> None:
    """Delete every file under `out` that belongs to no condition asked for (and every run's kept
    weights unless train.keep_weights), then empty folders."""
    out.mkdir(parents=True, exist_ok=True)  # DVC's output, even for a study whose runs all belong to others
    kept = {path.with_suffix(suffix) for path in paths for suffix in (".json", ".ckpt", ".log", ".failed")}
    kept |= {weights_path(path) for path in paths} if keep_weights else set()
    for stale in [p for p in out.rglob("*") if p.is_file() and p not in kept]:
        stale.unlink()
    for folder in sorted((p for p in out.rglob("*") if p.is_dir()), reverse=True):
        if not any(folder.iterdir()):
            folder.rmdir()
