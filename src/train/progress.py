"""What a finetune stage prints while its runs execute."""

from __future__ import annotations

import sys
import time


class Progress:
    """What a stage prints while its runs execute. On a terminal: each finished run's line,
    then one status line updated in place (done / running / failed / queued, examples/s,
    ETA); in a log (not a TTY): one plain line per finished run with the same status. Each
    run's own detail goes to its log file, never here: worker output cannot interleave."""

    def __init__(self, examples: list[int], concurrency: int | None, stream=None):
        self.examples, self.concurrency = examples, concurrency
        self.stream = stream or sys.stdout
        self.tty = self.stream.isatty()
        self.done = self.failed = self.trained = 0
        self.left_examples = sum(examples)
        self.start = time.monotonic()

    def finished(self, run: int, line: str, failed: bool = False) -> None:
        self.done += 1
        self.failed += failed
        self.trained += 0 if failed else self.examples[run]
        self.left_examples -= self.examples[run]
        status = self.status()
        if self.tty:
            self.stream.write(f"\r\x1b[K{line}\n{status}" + ("\n" if self.done == len(self.examples) else ""))
        else:
            self.stream.write(f"{line} | {status}\n")
        self.stream.flush()

    def status(self) -> str:
        left = len(self.examples) - self.done
        running = left if self.concurrency is None else min(self.concurrency, left)
        elapsed = time.monotonic() - self.start
        rate = self.trained / elapsed if elapsed > 0 else 0.0
        eta = f"ETA {_duration(self.left_examples / rate)}" if rate > 0 and left else "ETA -"
        counts = f"{self.done - self.failed} done, {running} running, {self.failed} failed, {left - running} queued"
        return f"{counts}; {rate:.1f} examples/s, {eta}"


def _duration(seconds: float) -> str:
    minutes, seconds = divmod(int(seconds), 60)
    hours, minutes = divmod(minutes, 60)
    return f"{hours}h{minutes:02d}m" if hours else f"{minutes}m{seconds:02d}s"
