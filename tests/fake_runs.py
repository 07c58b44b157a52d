"""Fake run functions for the executor tests: spawned workers and SLURM / Ray tasks import
this module by name, so it stays light (no torch, no test framework)."""

import os
import time
from pathlib import Path


def note_slot(run: int, seconds: float, rendezvous: str, together: int) -> dict:
    """Which GPU the run saw, in which process, and when. The first `together` runs wait for
    each other in `rendezvous`, so that many runs are certainly in flight at once."""
    if run < together:
        Path(rendezvous, str(run)).touch()
        deadline = time.monotonic() + 60
        while len(os.listdir(rendezvous)) < together and time.monotonic() < deadline:
            time.sleep(0.01)
    start = time.monotonic()  # CLOCK_MONOTONIC: one clock for every process of the machine
    time.sleep(seconds)
    return {
        "run": run,
        "slot": os.environ.get("CUDA_VISIBLE_DEVICES"),
        "pid": os.getpid(),
        "start": start,
        "end": time.monotonic(),
    }


def fail_odd(run: int) -> dict:
    if run % 2:
        raise ValueError(f"run {run} is odd")
    return {"run": run}


def take_steps(run: int, steps: int) -> dict:
    """`steps` optimizer steps on one parameter: what the stage's step counter sees of a run."""
    import torch  # here, not at the top: the other fake runs stay light

    weight = torch.nn.Parameter(torch.zeros(1))
    optimizer = torch.optim.SGD([weight], lr=0.1)
    for _ in range(steps):
        weight.sum().backward()
        optimizer.step()
    return {"run": run}
