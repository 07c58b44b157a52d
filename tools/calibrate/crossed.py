"""A crossed seed_design (subsets x draws): the paired accuracy contrast with the crossed variance and with its
S*D runs taken as independent trials (crossed_table); the trial effects the curves' crossed designs share
(crossed_effects)."""

from __future__ import annotations

import math

import numpy as np
from scipy import stats

from src.stats import hypothesis
from src.tasks.metrics import example_metric
from tools.calibrate.nulls import ACCURACY, EXAMPLES, SHARED_EXAMPLE_SD
from tools.calibrate.row import ALPHA, HOLM_LEVEL, LEVEL, Row

CROSSED_DESIGNS = ((2, 2), (3, 3), (2, 5), (5, 2), (3, 5), (4, 4))  # (subsets, draws)
CROSSED_NULLS = {  # the SDs (probit scale) of a condition's subset and draw effects
    "subset-dominated": (0.3, 0.05),
    "draws-dominated": (0.05, 0.3),
}


def difference_row(test, null_name, n_trials, at_zero, estimator, design=None) -> Row:
    """Size of the two-sided test, coverage and half-width / oracle of the interval, from
    Estimates of a contrast whose true value is 0."""
    values = np.array([e.estimate for e in at_zero])
    oracle = stats.norm.ppf(0.5 + LEVEL / 2) * values.std(ddof=1)
    intervals = np.array([e.interval(LEVEL) for e in at_zero])
    p = np.array([e.p_zero() for e in at_zero])
    return Row(
        test,
        null_name,
        n_trials,
        len(at_zero),
        float(np.mean(p < ALPHA)),
        float(np.mean((intervals[:, 0] <= 0) & (intervals[:, 1] >= 0))),
        float(np.mean(intervals[:, 1] - intervals[:, 0]) / 2 / oracle),
        estimator=estimator,
        design=design,
        size_holm=float(np.mean(p < HOLM_LEVEL)),
    )


def crossed_effects(rng: np.random.Generator, leading: tuple, design: tuple[int, int], sds: tuple[float, float]):
    """The trial effects [*leading, S, D] of a crossed seed_design (S subsets, D draws): run (s, d)
    takes subset s's effect (SD sds[0]) plus draw d's (SD sds[1]), one set per leading index."""
    (subsets, draws), (subset_sd, draws_sd) = design, sds
    return subset_sd * rng.standard_normal((*leading, subsets, 1)) + draws_sd * rng.standard_normal(
        (*leading, 1, draws)
    )


def simulate_crossed(design: tuple[int, int], sds: tuple[float, float], reps: int, rng: np.random.Generator):
    """(labels [R, N], predictions of A and B [R, S*D, N]) of a crossed seed_design with equal
    expected accuracies: trial t sees subset t // D and draw t % D, and each condition has its
    own effect of each subset and each draw (so they do not cancel in the contrast)."""
    (subsets, draws), (subset_sd, draws_sd) = design, sds
    labels = rng.integers(0, 2, (reps, EXAMPLES))
    shared = SHARED_EXAMPLE_SD * rng.standard_normal((reps, 1, 1, EXAMPLES))
    scale = math.sqrt(1 + SHARED_EXAMPLE_SD**2 + subset_sd**2 + draws_sd**2 + 0.1**2)
    predictions = []
    for _ in range(2):
        latent = (
            scale * stats.norm.ppf(ACCURACY)
            + crossed_effects(rng, (reps,), design, sds)[..., None]
            + 0.1 * rng.standard_normal((reps, 1, 1, EXAMPLES))
            + shared
            + rng.standard_normal((reps, subsets, draws, EXAMPLES))
        ).reshape(reps, subsets * draws, EXAMPLES)
        predictions.append(np.where(latent > 0, labels[:, None], 1 - labels[:, None]))
    return labels, predictions[0], predictions[1]


def crossed_table(reps: int, seed: int = 0, designs=CROSSED_DESIGNS) -> list[Row]:
    """The paired contrast (accuracy, true contrast 0) of a crossed seed_design, with the crossed
    subsets x draws x examples variance ("new") and with the S*D cells taken as independent
    trials ("OLD": what a test that ignores the design computes)."""
    rng = np.random.default_rng(seed)
    rows = []
    for name, sds in CROSSED_NULLS.items():
        for design in designs:
            labels, a, b = simulate_crossed(design, sds, reps, rng)
            for estimator, used in (("new", design), ("old", None)):
                estimates = [
                    hypothesis.paired_contrast(
                        [(1.0, a[r], (a[r] == labels[r]).mean(axis=1)), (-1.0, b[r], (b[r] == labels[r]).mean(axis=1))],
                        labels[r],
                        example_metric("accuracy"),
                        used,
                    )
                    for r in range(reps)
                ]
                test = f"difference (accuracy), crossed {design[0]}x{design[1]}"
                rows.append(difference_row(test, name, design[0] * design[1], estimates, estimator, design))
    return rows
