"""Where a finetune stage's runs execute: params.yaml `executor:` (docs/cluster.md).

DVC decides which runs are missing; this module hands them to an engine and yields each
outcome as it finishes, so the stage saves it at once:
- `local`: `train.workers` spawn processes of `train.threads` torch threads on CPU; on a
  machine with GPUs, `runs_per_gpu` processes per GPU, each pinned to its GPU by
  CUDA_VISIBLE_DEVICES before torch initialises CUDA.
- `slurm`: one submitit job array; a timed-out or preempted run is requeued by submitit
  and resumes from its checkpoint (`train.checkpoint_every`); a failed one is resubmitted.
- `ray`: one Ray task per run (`num_gpus` may be a fraction), `max_calls=1` so each run
  gets a fresh process and frees its GPU memory, retried when its worker is lost.
Every backend calls the same run function with the same arguments, so results do not
depend on the backend. A run that still fails after `executor.max_retries` retries is
yielded as a `Failure` with its cause; the others go on. submitit and Ray are imported
only by their backends (requirements-cluster.txt), never by the default install.
"""

from __future__ import annotations

import multiprocessing
import os
import signal
import subprocess
import sys
import time
import traceback
from collections.abc import Callable, Iterator, Sequence
from concurrent.futures import ProcessPoolExecutor, as_completed
from concurrent.futures.process import BrokenProcessPool
from dataclasses import dataclass
from multiprocessing.sharedctypes import Synchronized
from pathlib import Path
from typing import TypeVar

import torch

from src.config.schema import ExecutorConfig, TrainConfig
from src.core.process import die_with_parent
from src.train.loop import reuse_freed_memory
from src.train.progress import count_steps

ROOT = Path(__file__).resolve().parents[2]
R = TypeVar("R")  # what the run function returns


@dataclass(frozen=True)
class Failure:
    """A run that did not produce a result: its last error and how often it was tried."""

    cause: str
    attempts: int


def execute(
    run: Callable[..., R],
    runs: Sequence[tuple],
    executor: ExecutorConfig,
    train: TrainConfig,
    gpus: list[str] | None = None,
    steps: Synchronized | None = None,
) -> Iterator[tuple[int, R | Failure]]:
    """Call `run(*runs[i])` for every i on the configured backend; yield (i, result or Failure)
    in the order runs finish. `gpus` (local backend): the GPU ids to place runs on; None =
    this machine's visible GPUs (a test passes fake ones). `steps` (local backend): a shared
    integer its workers add each optimizer step to (progress.count_steps)."""
    if executor.kind == "slurm":
        yield from _slurm(run, runs, executor, train.threads)
    elif executor.kind == "ray":
        yield from _ray(run, runs, executor, train.threads)
    else:
        gpus = visible_gpus() if gpus is None else gpus
        slots = [gpu for gpu in gpus for _ in range(executor.runs_per_gpu)]
        yield from _local(run, runs, len(slots) if slots else train.workers, train.threads, slots or None, steps)


def run_in_worker(threads: int, run: Callable[..., R], *args) -> R:
    """One run in a fresh worker process (SLURM, Ray): the same process settings as a local worker."""
    _set_up_for_training(threads)
    return run(*args)


# --- local --------------------------------------------------------------------------------


def visible_gpus() -> list[str]:
    """GPU ids a pinned worker may be given: CUDA_VISIBLE_DEVICES's entries if set, else 0..n-1.
    torch.cuda.device_count() asks the driver without creating a CUDA context here."""
    count = torch.cuda.device_count()
    listed = [d for d in os.environ.get("CUDA_VISIBLE_DEVICES", "").split(",") if d.strip()]
    return listed[:count] if listed else [str(i) for i in range(count)]


def _local(
    run: Callable[..., R],
    runs: Sequence[tuple],
    workers: int,
    threads: int,
    slots: list[str] | None,
    steps: Synchronized | None = None,
) -> Iterator[tuple[int, R | Failure]]:
    if slots is None and (workers == 1 or len(runs) <= 1):  # in this process: no spawn cost for one run
        _set_up_for_training(threads)
        counting = count_steps(steps) if steps is not None else None
        try:
            for i, args in enumerate(runs):
                try:
                    yield i, run(*args)
                except Exception:  # noqa: BLE001 - any error of one run is that run's failure, the others go on
                    yield i, Failure(_cause(), 1)
        finally:
            if counting is not None:
                counting.remove()  # this process goes on: its later optimizers count for no one
        return
    # spawn, not fork: a forked child inherits torch's thread pools in an unusable state, and
    # CUDA cannot be initialised again in a fork of a process that used it.
    context = multiprocessing.get_context("spawn")
    free_slots = None
    if slots is not None:  # one slot per worker for its lifetime: runs_per_gpu workers share a GPU
        free_slots = context.Queue()
        for slot in slots:
            free_slots.put(slot)
    pool = ProcessPoolExecutor(
        min(workers, len(runs)),
        mp_context=context,
        initializer=_start_worker,
        initargs=(threads, free_slots, os.getpid(), steps),
    )
    try:
        futures = {pool.submit(run, *args): i for i, args in enumerate(runs)}
        for future in as_completed(futures):
            try:
                yield futures[future], future.result()
            except BrokenProcessPool:  # a worker was killed (e.g. out of memory): every run not finished is lost
                yield (
                    futures[future],
                    Failure("a worker process died (killed, or out of memory) before this run finished", 1),
                )
            except Exception:  # noqa: BLE001
                yield futures[future], Failure(_cause(), 1)
    finally:
        pool.shutdown(wait=True, cancel_futures=True)  # on an interrupt, start no further run


def _set_up_for_training(threads: int) -> None:
    torch.set_num_threads(threads)
    reuse_freed_memory()


def _start_worker(threads: int, free_slots, stage: int, steps=None) -> None:
    die_with_parent(stage)  # a killed stage must leave no run training on, even one killed while this worker started
    if free_slots is not None:  # before anything touches CUDA: torch reads it when CUDA initialises
        os.environ["CUDA_VISIBLE_DEVICES"] = free_slots.get()
    _set_up_for_training(threads)
    if steps is not None:
        count_steps(steps)


def _cause() -> str:
    """The current exception as its last traceback line (the full one goes to stderr)."""
    text = traceback.format_exc()
    print(text, file=sys.stderr)
    return text.strip().splitlines()[-1]


# --- SLURM ----------------------------------------------------------------------------------

ALIVE = {
    "PENDING",
    "CONFIGURING",
    "RUNNING",
    "COMPLETING",
    "REQUEUED",
    "REQUEUE_HOLD",
    "REQUEUE_FED",
    "RESIZING",
    "SUSPENDED",
    "PREEMPTED",
    "SIGNALING",
    "STAGE_OUT",
}


def _slurm(
    run: Callable[..., R], runs: Sequence[tuple], executor: ExecutorConfig, threads: int
) -> Iterator[tuple[int, R | Failure]]:
    import submitit

    class Run(submitit.helpers.Checkpointable):
        """Checkpointable: on timeout or preemption submitit requeues the same call, which
        resumes from the run's own checkpoint file (train.checkpoint_every)."""

        def __call__(self, *args):
            return run_in_worker(*args)

    log_dir = Path(executor.log_dir).resolve()
    slurm = submitit.SlurmExecutor(folder=log_dir / "%j", max_num_timeout=executor.max_retries)
    gpus = int(executor.gpus_per_run)
    slurm.update_parameters(
        partition=executor.partition,
        time=executor.time_limit_min,
        cpus_per_task=executor.cpus_per_run,
        mem=f"{executor.mem_gb_per_run}GB",
        array_parallelism=executor.array_parallelism,
        job_name="finetune",
        gpus_per_task=gpus or None,
        setup=[f"export PYTHONPATH={ROOT}${{PYTHONPATH:+:$PYTHONPATH}}"],
        stderr_to_stdout=True,
    )
    signal.signal(signal.SIGTERM, signal.default_int_handler)  # `kill` / dvc's stop: cancel the array below

    def submit(indices: list[int]) -> dict:
        with slurm.batch():  # one job array for all of them
            jobs = [slurm.submit(Run(), threads, run, *runs[i]) for i in indices]
        return {job: i for job, i in zip(jobs, indices)}

    attempts = {i: 1 for i in range(len(runs))}
    pending = submit(list(range(len(runs))))
    gone: set = set()  # jobs slurm reported ended without a result file at the previous poll
    try:
        while pending:
            time.sleep(2)
            states = _squeue_states([job.job_id for job in pending])
            retry = []
            for job, i in list(pending.items()):
                ended = states.get(job.job_id) not in ALIVE
                if not job.paths.result_pickle.exists() and not (ended and job in gone):
                    if ended:
                        gone.add(job)  # seen once: the result file may still be on its way (shared filesystem)
                    continue
                del pending[job]
                if not job.paths.result_pickle.exists():  # killed, out of memory, node lost: no result to read
                    cause = (
                        f"slurm job {job.job_id} ended ({states.get(job.job_id, 'left the queue')}) without a result"
                    )
                else:
                    try:
                        yield i, job.result()
                        continue
                    except Exception as error:  # noqa: BLE001 - the run raised: submitit re-raises it with its traceback
                        cause = _last_exception_line(str(error))
                if attempts[i] > executor.max_retries:
                    yield i, Failure(f"{cause} (log: {job.paths.stdout})", attempts[i])
                else:
                    attempts[i] += 1
                    retry.append(i)
            if retry:
                pending.update(submit(retry))
    finally:
        for job in pending:  # stopped early: runs in flight are lost, as locally
            job.cancel(check=False)


def _last_exception_line(message: str) -> str:
    """`ValueError: ...` out of submitit's FailedJobError text (header, ---- traceback ----, log paths)."""
    parts = message.split("-" * 22)
    lines = [line for line in (parts[1] if len(parts) > 2 else message).splitlines() if line.strip()]
    return lines[-1].strip() if lines else message


def _squeue_states(job_ids: list[str]) -> dict[str, str]:
    """State of each job (array task ids like 12_3) that slurmctld still knows. squeue, not
    sacct: sacct needs accounting (slurmdbd), which small clusters and the test cluster lack."""
    array_ids = sorted({job_id.split("_")[0] for job_id in job_ids})
    out = subprocess.run(
        ["squeue", "--states=all", "--noheader", "--array", "--format=%i|%T", "--jobs", ",".join(array_ids)],
        capture_output=True,
        text=True,
    )
    if out.returncode != 0:  # e.g. the jobs aged out of slurmctld: nothing known is alive
        return {}
    return dict(line.split("|", 1) for line in out.stdout.split())


# --- Ray ------------------------------------------------------------------------------------


def _ray(
    run: Callable[..., R], runs: Sequence[tuple], executor: ExecutorConfig, threads: int
) -> Iterator[tuple[int, R | Failure]]:
    import ray

    connect = not ray.is_initialized()  # a caller (a test) may have set up its own cluster
    if connect:  # the workers import src/ from this checkout: the shared-filesystem requirement
        ray.init(address=executor.address, runtime_env={"env_vars": {"PYTHONPATH": str(ROOT)}}, log_to_driver=False)
    task = ray.remote(
        num_cpus=threads,
        num_gpus=executor.gpus_per_run,
        max_calls=1,  # a fresh process per run: its GPU memory is freed
        max_retries=executor.max_retries,  # resubmitted when its worker or node is lost
    )(run_in_worker)
    pending = {task.remote(threads, run, *args): i for i, args in enumerate(runs)}
    try:
        while pending:
            done, _ = ray.wait(list(pending), num_returns=1)
            i = pending.pop(done[0])
            try:
                yield i, ray.get(done[0])
            except Exception as error:  # noqa: BLE001 - the run raised (not retried: it would again) or its worker was lost too often
                yield (
                    i,
                    Failure(
                        str(error).strip().splitlines()[-1],
                        1 + executor.max_retries * isinstance(error, ray.exceptions.WorkerCrashedError),
                    ),
                )
    finally:
        for ref in pending:
            ray.cancel(ref, force=True)
        if connect:
            ray.shutdown()


def concurrency(executor: ExecutorConfig, train: TrainConfig, gpus: list[str] | None = None) -> int | None:
    """How many runs execute at once, where the stage can know it (Ray schedules by its own resources)."""
    if executor.kind == "slurm":
        return executor.array_parallelism
    if executor.kind == "ray":
        return None
    slots = len(visible_gpus() if gpus is None else gpus) * executor.runs_per_gpu
    return slots or train.workers
