"""The hurdle that tests "A beats B" (src/stats/collapse.py): collapse rates and the trained runs' contrast,
combined by Bonferroni; its size under its own nulls and its rejection rates under alternatives (hurdle_table)."""

from __future__ import annotations

import math
from dataclasses import dataclass

import numpy as np

from src.claims.evidence import runs_flagged
from src.stats.collapse import HURDLE_PARTS, hurdle
from tools.calibrate.estimates import estimates
from tools.calibrate.nulls import CHUNK, NULLS, TRIALS, TWO_CONDITIONS, Null, simulate
from tools.calibrate.row import ALPHA, HOLM_LEVEL, shown

# The hurdle's null is "the same collapse rate AND the same trained runs' accuracy" (simulate without
# compensation): the collapse nulls of NULLS, whose conditions collapse at different rates with equal means over all
# runs, are alternatives here, and measured as such (HURDLE_ALTERNATIVES).
HURDLE_NULLS = {
    "no collapse (trial + example)": NULLS["trial + example"],
    "no collapse (example-dominated)": NULLS["example-dominated"],
    "both collapse (0.2)": Null(trial_sd=0.05, example_sd=0.2, collapse=0.2, collapse_a=0.2),
    "both nearly collapse (0.15)": NULLS["both nearly collapse (0.15)"],
    "collapses and near-collapses mixed, equal rates": Null(
        trial_sd=0.15, example_sd=0.3, collapse=0.15, collapse_a=0.05, near_a=0.15, near_b=0.05
    ),
    # B's runs degrade just below the degradation check (evidence.DEGRADE_GAP), so they count as trained runs, its
    # other runs compensating: the trained runs' contrast (the estimand) is 0, a mixture of shallow degradations
    "B degrades just below the check (1/3), trained runs' mean equal": NULLS["B degrades just below the check (1/3)"],
}
COMPENSATED_NULLS = {"B degrades just below the check (1/3), trained runs' mean equal"}  # simulated with compensation
# (null, compensate): B collapses or degrades more often than A. "Means over all runs equal" is the paper's null and
# not the hurdle's: B's trained runs are better there (its p_less is not a size)
HURDLE_ALTERNATIVES = {
    "B collapses (0.2), trained runs alike": (NULLS["B collapses (0.2)"], False),
    "B collapses (2/3), trained runs alike": (Null(trial_sd=0.05, example_sd=0.2, collapse=2 / 3), False),
    "B collapses (0.2), means over all runs equal (the old null)": (NULLS["B collapses (0.2)"], True),
    "B degrades below the flag (0.2), trained runs alike": (NULLS["B degrades below the flag (0.2)"], False),
    "B degrades below the flag (1/3), trained runs alike": (NULLS["B degrades below the flag (1/3)"], False),
    "B degrades below the flag (0.2), means over all runs equal": (NULLS["B degrades below the flag (0.2)"], True),
    "B degrades below the flag (1/3), means over all runs equal": (NULLS["B degrades below the flag (1/3)"], True),
}


# The second difference of three conditions (the curve's change of step, reinit_curve_change_not_constant): A, then
# two conditions alike in distribution with B
SECOND_DIFFERENCE = (1, -2, 1)
HURDLE_CONTRASTS = {"A − B": TWO_CONDITIONS, "second difference": SECOND_DIFFERENCE}


@dataclass(frozen=True)
class HurdleRow:
    """One cell of hurdle_table: the rejection rates of the hurdle's p_greater (the contrast > 0: A better) and
    p_less (< 0: A worse) at ALPHA and HOLM_LEVEL; `by_rate`: the share of rejections at ALPHA the rate part made
    (rather than the trained runs' part); `no_trained`: the share of replicates with fewer than 2 trials where
    no condition's run (nearly) collapsed (the trained part cannot reject there). `symmetric`: the null and the
    contrast alike under a swap of its sides, so that both tails measure one size."""

    null: str
    trials: int
    reps: int
    greater: tuple[float, float]
    less: tuple[float, float]
    by_rate: float
    no_trained: float
    symmetric: bool
    contrast: str  # its HURDLE_CONTRASTS name

    @property
    def size(self) -> tuple[float, float]:
        """A symmetric null's two one-sided tests measure one size (averaged); else the larger tail's."""
        pick = (lambda g, x: (g + x) / 2) if self.symmetric else max
        return tuple(pick(g, x) for g, x in zip(self.greater, self.less))

    def size_ok(self, sigmas: float = 0.0) -> bool:
        """Size <= the level (no 1.2 slack: the hurdle is meant to hold the level itself) + `sigmas` MC SEs."""
        tails = 2 if self.symmetric else 1
        return all(
            size <= level + sigmas * math.sqrt(level * (1 - level) / (self.reps * tails))
            for size, level in zip(self.size, (ALPHA, HOLM_LEVEL))
        )


def hurdle_rejections(correct: np.ndarray, majority: np.ndarray, weights=TWO_CONDITIONS):
    """(p_greater < level, p_less < level, rate part rejected at ALPHA, fewer than 2 trained trials) of each
    replicate, the levels (ALPHA, HOLM_LEVEL) on the last axis of the first two: the hurdle of the contrast
    `weights` as src/claims/units.py computes it. Collapse is read from the sample by the pipeline's rule
    (evidence.runs_flagged: (nearly) collapsed or degraded); the trained part is the crossed test of the trials
    where no condition's run was flagged ("collapsed excluded")."""
    flags = runs_flagged(False, majority)
    trained, refused = estimates(correct, majority, "collapsed excluded", weights)
    result = hurdle(flags, weights, (trained.p_greater(), trained.p_less()), ALPHA)
    levels = np.array([ALPHA, HOLM_LEVEL])
    greater, less = (np.asarray(p)[:, None] < levels for p in (result.p_greater, result.p_less))
    by_rate = result.rate_counts & ((HURDLE_PARTS * np.fmin(*result.rate)) < ALPHA)
    return greater, less, by_rate & (greater[:, 0] | less[:, 0]), refused


def hurdle_table(
    reps: int, seed: int = 0, trials=TRIALS, nulls=None, alternatives=None, contrast: str = "A − B"
) -> list[HurdleRow]:
    """The hurdle's one-sided rejection rates at ALPHA and HOLM_LEVEL under each of HURDLE_NULLS (sizes) and
    HURDLE_ALTERNATIVES (B collapses more: power of p_greater, and p_less's rate of the wrong direction), at each
    T, in chunks of CHUNK replicates, for the contrast HURDLE_CONTRASTS[contrast]."""
    weights = HURDLE_CONTRASTS[contrast]
    rng = np.random.default_rng(seed)
    cells = {
        name: (HURDLE_NULLS[name], name in COMPENSATED_NULLS) for name in (HURDLE_NULLS if nulls is None else nulls)
    }
    cells |= {
        name: HURDLE_ALTERNATIVES[name] for name in (HURDLE_ALTERNATIVES if alternatives is None else alternatives)
    }
    rows = []
    for name, (null, compensate) in cells.items():
        for n_trials in trials:
            counts = np.zeros(6)
            for start in range(0, reps, CHUNK):
                size = min(CHUNK, reps - start)
                correct, majority = simulate(null, n_trials, size, rng, compensate=compensate, conditions=len(weights))
                greater, less, by_rate, refused = hurdle_rejections(correct, majority, weights)
                counts += [*greater.sum(axis=0), *less.sum(axis=0), by_rate.sum(), refused.sum()]
            rejected_at_alpha = counts[0] + counts[2]
            rows.append(
                HurdleRow(
                    name,
                    n_trials,
                    reps,
                    (counts[0] / reps, counts[1] / reps),
                    (counts[2] / reps, counts[3] / reps),
                    counts[4] / rejected_at_alpha if rejected_at_alpha else math.nan,
                    counts[5] / reps,
                    null.symmetric and name in HURDLE_NULLS and weights == TWO_CONDITIONS,
                    contrast,
                )
            )
    return rows


HURDLE_HEADER = (
    f"| contrast | null or alternative | T | reps | size at {ALPHA} / {HOLM_LEVEL:.5f} | > 0, A better (p_greater) "
    f"at {ALPHA} / {HOLM_LEVEL:.5f} | < 0, A worse (p_less) | rejections by the rate part | < 2 trained trials | "
    "targets missed |\n" + "|---" * 10 + "|"
)


def hurdle_markdown_row(row: HurdleRow) -> str:
    """A line of the hurdle table; size and "targets missed" (size <= the level, 2 Monte Carlo SEs of slack) only
    under the nulls."""
    is_null = row.null in HURDLE_NULLS
    size = f"{row.size[0]:.4f} / {row.size[1]:.5f}" if is_null else "(not a null)"
    missed = ("–" if row.size_ok(2) else "size") if is_null else "–"
    return (
        f"| {row.contrast} | {row.null} | {row.trials} | {row.reps * (2 if row.symmetric else 1):,} | {size} | "
        f"{row.greater[0]:.4f} / {row.greater[1]:.5f} | {row.less[0]:.4f} / {row.less[1]:.5f} | "
        f"{shown(row.by_rate, '.2f')} | {row.no_trained:.3f} | {missed} |"
    )
