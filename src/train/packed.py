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

import inspect
from contextlib import ExitStack
from dataclasses import replace
from pathlib import Path

from src.artefacts.run_result import RunResult
from src.conditions.condition import Condition
from src.train.loop import RunSettings, train_members
from src.train.run import finish, prepare_final_step, progress_log, run_condition, training_seeds
from src.train.stacked import StackedPath

RUN_ARGUMENTS = tuple(inspect.signature(run_condition).parameters)  # what a run's argument tuple holds


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


def run_pack(runs: list[tuple], saves: list[tuple[Path, str]]) -> list[RunResult]:
    """Train runs that share a pack_key (each the argument tuple of run.run_condition, none
    measuring kept weights) as one stacked pack. Each is prepared as it would be alone, and
    finished (scored, measured, its weights kept) and saved (`saves`: its result file and
    training fingerprint) as soon as it leaves the pack; its log and checkpoint stay its own.
    A run that cannot be stacked (schedule.packs gives it alone) runs as run_condition."""
    arguments, runs = runs, [dict(zip(RUN_ARGUMENTS, run)) for run in runs]
    first = runs[0]
    if first["kept"] is not None or pack_key(first["condition"], first["settings"], first["settings"].seed) is None:
        return [run_condition(*arguments[0])]  # measured on kept weights, or a chain of tasks: alone, unstacked
    with ExitStack() as logs:
        finals = []
        for run in runs:
            progress = logs.enter_context(progress_log(run["log"]))
            final = prepare_final_step(
                run["condition"], run["settings"], run["model_dir"], run["tasks_dir"], run["key"], progress
            )
            if isinstance(final, RunResult):
                raise ValueError(f"{run['condition'].describe()} has an intermediate task: it trains alone")
            finals.append(final)
        results: list[RunResult | None] = [None] * len(runs)

        def finished(i: int, outcome: dict) -> None:
            results[i] = finish(finals[i], outcome, runs[i]["weights"]).save_finished(*saves[i])

        first = finals[0]
        train_members(
            [final.member(run["checkpoint"]) for final, run in zip(finals, runs)],
            first.task,
            first.train_split,
            *first.seeds,
            first.eval_split_if(runs[0]["log_epochs"]),
            path=StackedPath,
            finished=finished,
        )
    return results
