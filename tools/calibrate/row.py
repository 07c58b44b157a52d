"""One measured cell of a calibration table (Row), the levels it is measured at and the targets it is held to
(size <= MAX_SIZE x the level, coverage >= MIN_COVERAGE, half-width <= MAX_HALF_WIDTH x the oracle)."""

from __future__ import annotations

import math
from dataclasses import dataclass

from scipy import stats

from tools.calibrate.nulls import TRIALS

ALPHA = 0.05
FAMILY = 53  # one-sided tests in the report's Holm family (metrics/report.md)
HOLM_LEVEL = ALPHA / FAMILY  # the smallest level a p is compared against there
LEVEL = 0.95
# the calibration targets every test type must meet (docs/calibration.md)
MAX_SIZE = 1.2  # x the level
MIN_COVERAGE = 0.94
MAX_HALF_WIDTH = 1.25  # x the oracle half-width, from 10 trials


@dataclass(frozen=True)
class Row:
    """One cell of a calibration table: size at ALPHA and at HOLM_LEVEL (NaN where not measured),
    coverage, half-width / oracle, the shares of undefined and refused replicates. `tails`: 2 where both
    one-sided tests of a symmetric null were counted (their rates averaged), which halves the variance."""

    test: str
    null: str
    trials: int
    reps: int
    size: float
    coverage: float
    half_width: float  # mean half-width / oracle half-width (NaN where no oracle)
    undefined: float = 0.0  # share of replicates (or draws) where the statistic is undefined
    estimator: str = "new"
    design: tuple[int, int] | None = None  # a crossed seed_design's (subsets, draws)
    size_holm: float = math.nan
    refused: float = 0.0
    tails: int = 1

    def mc_se(self, rate: float) -> float:
        return math.sqrt(max(rate * (1 - rate), 1e-6) / (self.reps * self.tails))

    def holm_upper(self) -> float:
        """The one-sided 95% Clopper-Pearson upper bound of the size at HOLM_LEVEL, from its count of rejections
        over reps x tails draws (two tails of one replicate taken as two draws: they are negatively correlated, so
        the bound errs wide)."""
        if math.isnan(self.size_holm):
            return math.nan
        draws = self.reps * self.tails
        hits = round(self.size_holm * draws)
        return float(stats.binomtest(hits, draws, alternative="less").proportion_ci(0.95).high)

    def size_ok(self, sigmas: float = 0.0) -> bool:
        return all(
            math.isnan(size) or size <= MAX_SIZE * level + sigmas * self.mc_se(MAX_SIZE * level)
            for size, level in ((self.size, ALPHA), (self.size_holm, HOLM_LEVEL))
        )

    def coverage_ok(self, sigmas: float = 0.0) -> bool:
        return math.isnan(self.coverage) or self.coverage >= MIN_COVERAGE - sigmas * self.mc_se(MIN_COVERAGE)

    def half_width_ok(self) -> bool:
        """The half-width target applies from 10 trials: below, a valid t interval on the trials' few df cannot
        come near the normal oracle (t(2) is 4.30, not 1.96)."""
        return math.isnan(self.half_width) or self.trials < max(TRIALS) or self.half_width <= MAX_HALF_WIDTH

    def ok(self, sigmas: float = 0.0) -> bool:
        return self.size_ok(sigmas) and self.coverage_ok(sigmas) and self.half_width_ok()


def shown(value: float, fmt: str = ".3f") -> str:
    """A number as a table shows it: "–" where it is NaN (not measured)."""
    return "–" if math.isnan(value) else format(value, fmt)


def targets_missed(row: Row) -> str:
    """The targets a row misses, with 2 Monte Carlo SEs of slack on size and coverage."""
    checks = (("size", row.size_ok(2)), ("coverage", row.coverage_ok(2)), ("half-width", row.half_width_ok()))
    return ", ".join(name for name, ok in checks if not ok) or "–"
