"""Whether the runs a claim reads trained long enough: a check, not a test.

A verdict about transfer is a verdict about training length where more training still changes the
score: at 128 examples three epochs are 48 steps, and a condition still climbing when it stops makes
"A beats B" a statement about who climbs faster. The check reads the longer-training runs (a study with
`epochs` above the default, App. D's), paired by trial with the plain runs of the same (task, size, k):
a (task, size) has **reached a plateau** where every such k gains less than report.modifier_margin
(App. D's "minimal effect") from the extra epochs, and is **undertrained** where some k gains that much
or more; the point estimate decides (its 95% t interval over trials is printed beside it, and with
three trials it is wide). Without longer-training runs at a (task, size), it is **not checked**. The k
the longer-training study runs (0 and L in the default) stand for the curve between them.
"""

from __future__ import annotations

import math
from dataclasses import dataclass

import numpy as np
from scipy import stats

from src.claims.claim import per_trial_contrast
from src.claims.evidence import Evidence, grouped

PLATEAU, UNDERTRAINED, NOT_CHECKED = "reached a plateau", "undertrained", "not checked"
CONFOUNDED = "confounded by training length"


@dataclass(frozen=True)
class EpochGain:
    """Longer − default training of one k at one (task, size), paired by trial."""

    k: int
    epochs: tuple[int, int]  # (default, longer)
    gains: tuple[float, ...]  # per trial

    @property
    def estimate(self) -> float:
        return float(np.mean(self.gains)) if self.gains else math.nan

    @property
    def interval(self) -> tuple[float, float]:
        if len(self.gains) < 2:
            return math.nan, math.nan
        ci = stats.ttest_1samp(self.gains, 0.0).confidence_interval(0.95)
        return float(ci.low), float(ci.high)


@dataclass(frozen=True)
class TrainingCheck:
    task: str
    size: int
    gains: tuple[EpochGain, ...]
    margin: float

    @property
    def status(self) -> str:
        finite = [g.estimate for g in self.gains if np.isfinite(g.estimate)]
        if not finite:
            return NOT_CHECKED
        return UNDERTRAINED if max(finite) >= self.margin else PLATEAU

    def evidence(self) -> str:
        """The check in a line: its status and every k's gain with its interval and trials."""
        where = f"{self.task} n={self.size}"
        if self.status == NOT_CHECKED:
            return f"{where}: {NOT_CHECKED} (no longer-training runs)"
        parts = []
        for g in self.gains:
            low, high = g.interval
            interval = f" [{low:+.3f}, {high:+.3f}]" if np.isfinite(low) else ""
            parts.append(
                f"k={g.k} {g.epochs[0]}→{g.epochs[1]} epochs {g.estimate:+.3f}{interval} ({len(g.gains)} trials)"
            )
        return f"{where}: {self.status} ({'; '.join(parts)}; margin {self.margin})"


def training_checks(ev: Evidence) -> dict[tuple[str, int], TrainingCheck]:
    """The check at every (task, size) with plain runs: each unmodified progressive condition that trained more
    epochs than the plain run of its k (only its epochs differ), against that plain run."""
    longer = [
        c for c in ev.conditions("progressive", plain=False) if not c.condition.modified and c.condition.k is not None
    ]
    checks = {}
    for task, size in sorted({(c.task, c.size) for c in ev.conditions()}):
        gains = []
        here = [c for c in longer if c.task == task and c.size == size]
        for (k, _, epochs), (c,) in grouped(here, lambda c: (c.condition.k, c.slug, c.condition.epochs)):
            base = ev.curve(task, size).get(k)
            if base is None or not epochs > base.condition.epochs:
                continue
            per_trial = per_trial_contrast(ev, task, size, {c.slug: 1.0, base.slug: -1.0})
            gains.append(EpochGain(k, (base.condition.epochs, epochs), tuple(float(x) for x in per_trial)))
        checks[(task, size)] = TrainingCheck(task, size, tuple(gains), ev.settings.modifier_margin)
    return checks


def training_of(units, checks: dict[tuple[str, int], TrainingCheck]) -> list[TrainingCheck]:
    """The checks of every (task, size) the units read (their own and the gaps they need), in order."""
    keys = dict.fromkeys(key for u in units for key in ((u.key,) if u.key else ()) + tuple(u.reads) + tuple(u.gaps))
    return [checks[key] for key in keys if key in checks]
