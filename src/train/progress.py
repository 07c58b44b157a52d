"""What a finetune stage prints while its runs execute, and how workers report their steps.

Workers count their optimizer steps into one shared integer (`count_steps`: a global
optimizer hook, so the training recipe, whose code every result's fingerprint hashes, is
untouched); the stage reads it twice a second. Only the local executor's workers share it:
SLURM and Ray runs report when they finish.
"""

from __future__ import annotations

import multiprocessing
import os
import sys
import threading
import time
from collections.abc import Callable
from dataclasses import dataclass

from torch.optim.optimizer import register_optimizer_step_post_hook
from tqdm import tqdm

from src.conditions.condition import Condition

POLL_SECONDS = 0.5


@dataclass(frozen=True)
class LaterWork:
    """What the finetune stages after this one will train (runs without a result on disk yet): an estimate for
    the pipeline's ETA, at this stage's examples/s (their scoring after every epoch, and the stages that train
    nothing, are not in it)."""

    stages: int
    runs: int
    examples: int


def optimizer_steps(condition: Condition, pool_size: Callable[[str], int], batch_size: int) -> int:
    """Optimizer steps the run takes, every finetuning step's epochs included (src/data/tokens.py
    batches: ceil(examples / batch_size) batches an epoch)."""
    return sum(epochs * -(-size // batch_size) for _, size, epochs in condition.steps(pool_size))


def count_steps(counter):
    """In a process that trains: add one to `counter` (a shared multiprocessing Value) after
    every optimizer step. Returns the hook's handle (`.remove()` stops counting)."""

    def hook(optimizer, args, kwargs):
        with counter.get_lock():
            counter.value += 1

    return register_optimizer_step_post_hook(hook)


def live(stream) -> bool:
    """One line updated in place: on a terminal, unless TQDM_DISABLE or CI says to be quiet."""
    quiet = os.environ.get("TQDM_DISABLE", "").lower() not in ("", "0", "false") or os.environ.get("CI")
    return stream.isatty() and not quiet


class Progress:
    """What a stage prints while its runs execute. On a terminal: each finished run's line
    above one live tqdm line (runs done / total, optimizer steps done / total, steps/s and the
    ETA from them), updated while runs train; in a log or CI (not live): one plain line per
    finished run with runs done, running, failed, queued, examples/s and ETA. Each run's own
    detail goes to its log file, never here: worker output cannot interleave. A context
    manager: leaving it stops the live line."""

    def __init__(
        self,
        examples: list[int],
        concurrency: int | None,
        steps: list[int] | None = None,
        label: str = "finetune",
        stream=None,
        later: LaterWork | None = None,
    ):
        self.examples, self.concurrency, self.later = examples, concurrency, later
        self.total_steps = sum(steps or [])
        self.stream = stream or sys.stdout
        self.done = self.failed = self.trained = 0
        self.left_examples = sum(examples)
        self.start = time.monotonic()
        self.steps = multiprocessing.get_context("spawn").Value("q", 0)  # the workers' optimizer steps
        self.bar = None
        if examples and live(self.stream):  # nothing to run: no line
            self.bar = tqdm(
                total=self.total_steps or None,  # None: no steps counted here, runs only
                unit="step",
                desc=label,
                file=self.stream,
                dynamic_ncols=True,
                smoothing=0.1,
            )
            self.bar.set_postfix_str(self.runs())
            self._stop = threading.Event()
            self._poller = threading.Thread(target=self._poll, daemon=True)
            self._poller.start()

    def __enter__(self) -> Progress:
        return self

    def __exit__(self, *exc) -> None:
        if self.bar is not None:
            self._stop.set()
            self._poller.join()
            self._refresh()
            self.bar.close()

    def _poll(self) -> None:
        while not self._stop.wait(POLL_SECONDS):
            self._refresh()

    def _refresh(self) -> None:
        assert self.bar is not None  # only a live bar polls or refreshes
        self.bar.update(min(self.steps.value, self.total_steps) - self.bar.n)

    def finished(self, run: int, line: str, failed: bool = False) -> None:
        self.done += 1
        self.failed += failed
        self.trained += 0 if failed else self.examples[run]
        self.left_examples -= self.examples[run]
        if self.bar is not None:
            self.bar.write(line, file=self.stream)
            self.bar.set_postfix_str(self.runs(), refresh=False)
            self._refresh()
        else:
            self.stream.write(f"{line} | {self.status()}\n")
            self.stream.flush()

    def runs(self) -> str:
        runs = f"runs {self.done}/{len(self.examples)}" + (f", {self.failed} failed" if self.failed else "")
        return runs + (f"; {self.after(self.later)}" if self.later and self.later.runs else "")

    def after(self, later: LaterWork) -> str:
        """The finetune stages after this one, and the ETA to the end of them at this stage's examples/s."""
        elapsed = time.monotonic() - self.start
        rate = self.trained / elapsed if elapsed > 0 else 0.0
        eta = _duration((self.left_examples + later.examples) / rate) if rate > 0 else "-"
        return f"then {later.runs} runs in {later.stages} finetune stage(s), ETA to their end {eta}"

    def status(self) -> str:
        left = len(self.examples) - self.done
        running = left if self.concurrency is None else min(self.concurrency, left)
        elapsed = time.monotonic() - self.start
        rate = self.trained / elapsed if elapsed > 0 else 0.0
        eta = f"ETA {_duration(self.left_examples / rate)}" if rate > 0 and left else "ETA -"
        counts = f"{self.done - self.failed} done, {running} running, {self.failed} failed, {left - running} queued"
        steps = f"steps {min(self.steps.value, self.total_steps)}/{self.total_steps}; " if self.total_steps else ""
        after = f"; {self.after(self.later)}" if self.later and self.later.runs else ""
        return f"{counts}; {steps}{rate:.1f} examples/s, {eta}{after}"


def _duration(seconds: float) -> str:
    minutes, seconds = divmod(int(seconds), 60)
    hours, minutes = divmod(minutes, 60)
    return f"{hours}h{minutes:02d}m" if hours else f"{minutes}m{seconds:02d}s"
