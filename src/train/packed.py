"""Packed training (train.pack): the runs of one group trained together, one stacked step each.

The seed design makes a pack exact in what each run sees: the training subset, the batch
order and the dropout masks come from (task, size, trial) alone, so every run of one group
(pack_key) sees the same batches with the same masks; only the weights and the lr groups
differ. A pack trains by the loop every run goes through (src/train/loop.train_members: its
epochs, its checkpoints, one file per member, a diverged member leaving at the end of the
epoch, as it stops alone, and members leaving after their own last epoch), with the stacked
step of src/train/stacked.py. Each run is prepared and finished as it would be alone
(src/train/run.py) and writes its own result, log and resume point; the stage groups runs
into packs and retries a failing one (src/train/schedule.py).

What decides a packed run's bits beyond what run.fingerprint hashes is the pack size it trained
at (on a GPU the kernels depend on it; on the CPU they do not, bit for bit): a pack keeps its
size while members leave (stacked.StackedPath), so the size changes only where the pack is
formed again, on a resume after some members finished or after a failure. Each result records
its sizes (RunResult.pack_sizes) and its fingerprints hold them (keys_as_trained).
"""

from __future__ import annotations

import hashlib
import json
import sys
from contextlib import ExitStack
from dataclasses import replace

from src.artefacts.run_result import RunResult
from src.conditions.condition import Condition
from src.train.loop import Member, RunSettings, train_members
from src.train.run import RunJob, finish, prepare_final_step, progress_log, run_job, training_seeds
from src.train.stacked import StackedPath

# The one-line warning of a packed stage on a CPU, where a pack trains each run exact but slower than alone
CPU_PACK_WARNING = (
    "warning: params.yaml: train.pack = {pack} on a CPU: packed runs are exact there but 2-6x slower per run than "
    "each alone; train.pack is for GPUs, 0 trains each run alone"
)


def pack_key(condition: Condition, settings: RunSettings, seed: int) -> tuple | None:
    """Runs with equal keys may share a pack: the same batches (task, size, subset, order), the
    same dropout masks, the same model shape (layers removed, pooling) and every setting but
    the epochs and the measurements (which never change training). None: the run trains alone
    (one with an intermediate task has a chain of steps of its own)."""
    if condition.intermediate_task is not None:
        return None
    return (
        condition.task,
        condition.size,
        condition.stream("subset"),
        *training_seeds(condition, seed),
        tuple(condition.removed_layers()),
        condition.pooling,
        replace(settings.unmeasured(), epochs=0),
    )


def at_pack_sizes(key: str, pack_sizes: list[list[int]]) -> str:
    """The fingerprint `key` (run.fingerprint of a packed run) of a run that trained at `pack_sizes`
    ([first step, pack size] from each start of its training: RunResult.pack_sizes)."""
    return hashlib.sha256(json.dumps({"fingerprint": key, "pack_sizes": pack_sizes}).encode()).hexdigest()


def keys_as_trained(settings: RunSettings, key: str, training_key: str, found: RunResult | None) -> tuple[str, str]:
    """(fingerprint, training fingerprint) that `found`, a finished result of the run whose
    fingerprints as asked are `key` and `training_key`, holds where it is current: with
    train.pack, those at the pack sizes it trained at when each is at most train.pack (a run
    trained at any pack size up to it is a result of these params, and its fingerprint says
    which); else those as asked."""
    sizes = found.pack_sizes if found is not None else []
    if not settings.pack or not sizes or any(size > settings.pack for _, size in sizes):
        return key, training_key
    return at_pack_sizes(key, sizes), at_pack_sizes(training_key, sizes)


def cpu_pack_warning(settings: RunSettings) -> None:
    """CPU_PACK_WARNING on stderr for a packed stage (settings: any of its runs') on a CPU."""
    if settings.pack and settings.device == "cpu":
        print(CPU_PACK_WARNING.format(pack=settings.pack), file=sys.stderr, flush=True)


def run_pack(jobs: list[RunJob], fallback: str | None = None) -> list[RunResult]:
    """Train jobs that share a pack_key (none measuring kept weights) as one stacked pack. Each is
    prepared as it would be alone, and finished (scored, measured, its weights kept) and saved (its
    result file, with the pack sizes it trained at, the fingerprints at those sizes, and the
    pack `fallback` it trained after: RunResult.pack_fallback) as soon as it leaves the pack;
    its log and checkpoint stay its own. A job that cannot be stacked (schedule.packs gives it
    alone) runs as run_condition; one measured on its kept weights keeps their pack sizes."""
    first = jobs[0]
    if first.kept is not None:
        result = run_job(first)
        key, training_key = keys_as_trained(first.settings, first.key, first.training_key, first.kept)
        return [replace(result, fingerprint=key, training_fingerprint=training_key)]
    if pack_key(first.condition, first.settings, first.settings.seed) is None:
        return [run_job(first)]  # a chain of tasks: alone, unstacked
    with ExitStack() as logs:
        finals = []
        for job in jobs:
            progress = logs.enter_context(progress_log(job.log))
            final = prepare_final_step(job.condition, job.settings, job.model_dir, job.tasks_dir, job.key, progress)
            if isinstance(final, RunResult):
                raise ValueError(f"{job.condition.describe()} has an intermediate task: it trains alone")
            finals.append(final)
        results: dict[int, RunResult] = {}  # by member: they leave in the order their epochs end
        packs: list[StackedPath] = []

        def stacked(members: list[Member], task) -> StackedPath:
            packs.append(StackedPath(members, task))
            return packs[0]

        def finished(i: int, outcome: dict) -> None:
            job, sizes = jobs[i], [list(size) for size in packs[0].sizes]
            result = replace(
                finish(finals[i], outcome, job.weights),
                fingerprint=at_pack_sizes(job.key, sizes),
                pack_sizes=sizes,
                pack_fallback=fallback,
            )
            results[i] = result.save_finished(job.result_file, at_pack_sizes(job.training_key, sizes))

        lead = finals[0]
        train_members(
            [final.member(job.checkpoint) for final, job in zip(finals, jobs)],
            lead.task,
            lead.train_split,
            *lead.seeds,
            lead.eval_split_if(first.log_epochs),
            path=stacked,
            finished=finished,
        )
    return [results[i] for i in range(len(jobs))]
