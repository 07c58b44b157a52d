"""metrics/focus.json: the focus condition's mean headline score and its 95% t interval over
its trials, for `dvc exp run -S k=3` and `dvc metrics show`.

One writer (`FocusSummary.write`: the focus stage), one reader (`FocusSummary.read`). An
undefined statistic is null (NaN is not JSON), with the reason beside it.
"""

from __future__ import annotations

import json
from dataclasses import asdict, dataclass
from pathlib import Path

from src.artefacts.run_result import RunResult
from src.config.schema import Config
from src.core.files import write_json_atomically
from src.stats.intervals import mean_ci
from src.tasks.registry import get_task


@dataclass(frozen=True)
class FocusSummary:
    task: str
    size: int
    k: int
    metric: str  # the task's headline metric
    mean: float | None  # None: no trial finished
    ci95: float | None  # the 95% t half-width; None with fewer than 2 finished trials
    n: int  # finished trials
    diverged: int
    ci95_note: str | None = None  # why ci95 is None (absent from the file otherwise)

    @classmethod
    def of(cls, config: Config, results: list[RunResult]) -> FocusSummary:
        """The summary of the focus condition's (params.yaml task, size, k) trials."""
        metric = get_task(config.task).headline
        mean, half, n = mean_ci([r.scores[metric] for r in results if r.ok])
        note = f"a confidence interval needs at least 2 finished runs; this condition has {n}" if n < 2 else None
        return cls(
            config.task,
            config.size,
            config.k,
            metric,
            mean if n else None,
            half if n >= 2 else None,
            n,
            len(results) - n,
            note,
        )

    def write(self, path: Path) -> None:
        fields = asdict(self)
        if self.ci95_note is None:
            del fields["ci95_note"]
        write_json_atomically(path, fields)

    @classmethod
    def read(cls, path: Path) -> FocusSummary:
        return cls(**json.loads(Path(path).read_text()))
