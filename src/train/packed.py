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
"""

from __future__ import annotations

from contextlib import ExitStack
from dataclasses import replace

from src.artefacts.run_result import RunResult
from src.conditions.condition import Condition
from src.train.loop import RunSettings, train_members
from src.train.run import RunJob, finish, prepare_final_step, progress_log, run_job, training_seeds
from src.train.stacked import StackedPath


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


def run_pack(jobs: list[RunJob]) -> list[RunResult]:
    """Train jobs that share a pack_key (none measuring kept weights) as one stacked pack. Each is
    prepared as it would be alone, and finished (scored, measured, its weights kept) and saved (its
    result file, with its training fingerprint) as soon as it leaves the pack; its log and
    checkpoint stay its own. A job that cannot be stacked (schedule.packs gives it alone) runs as
    run_condition."""
    first = jobs[0]
    if first.kept is not None or pack_key(first.condition, first.settings, first.settings.seed) is None:
        return [run_job(first)]  # measured on kept weights, or a chain of tasks: alone, unstacked
    with ExitStack() as logs:
        finals = []
        for job in jobs:
            progress = logs.enter_context(progress_log(job.log))
            final = prepare_final_step(job.condition, job.settings, job.model_dir, job.tasks_dir, job.key, progress)
            if isinstance(final, RunResult):
                raise ValueError(f"{job.condition.describe()} has an intermediate task: it trains alone")
            finals.append(final)
        results: dict[int, RunResult] = {}  # by member: they leave in the order their epochs end

        def finished(i: int, outcome: dict) -> None:
            job = jobs[i]
            results[i] = finish(finals[i], outcome, job.weights).save_finished(job.result_file, job.training_key)

        lead = finals[0]
        train_members(
            [final.member(job.checkpoint) for final, job in zip(finals, jobs)],
            lead.task,
            lead.train_split,
            *lead.seeds,
            lead.eval_split_if(first.log_epochs),
            path=StackedPath,
            finished=finished,
        )
    return [results[i] for i in range(len(jobs))]
