"""The data-generating model (the package docstring's probit threshold model): the designs a cell is simulated
under (Null, NULLS, CURVE_NULLS), the trained runs' mean that gives an expected accuracy (mean_for), and the
correctness of two or more conditions' runs on one eval set per replicate (simulate)."""

from __future__ import annotations

import math
from dataclasses import dataclass

import numpy as np
from scipy import stats

ACCURACY = 0.8  # a trained run's expected accuracy (condition A)
MARGIN = 0.02  # equivalence / minimum-effect margin (accuracy points), as report.single_layer_margin
TRIALS = (3, 5, 10)
EXAMPLES = 500
SHARED_EXAMPLE_SD = 1.0  # u: difficulty every condition shares (it cancels from a contrast)
CHUNK = 2000  # replicates simulated at once
# a degraded run's majority share, U(0.82, 0.88), just below the near-collapse flag (NEAR_COLLAPSE_SHARE, 0.90): a
# share 2s - 1 of its examples pushed to its one class, the rest predicted about half each way, gives share s
DEGRADE_SHARE = (0.82, 0.88)
# just below the degradation check (DEGRADE_GAP: 0.06 above its references, about 0.5 here)
SHALLOW_SHARE = (0.53, 0.56)


@dataclass(frozen=True)
class Null:
    """A data-generating design: the SDs (probit scale) of a condition's per-trial and per-example
    effects, and the shares of each condition's runs that collapse (`collapse_a`, `collapse`: A's, B's;
    in the curves, `collapse` is that of the smaller size's `collapsing_ks` conditions), nearly collapse (`near_a`,
    `near_b`) or degrade just below the near-collapse flag (`degrade_a`, `degrade_b`: a share DEGRADE_SHARE
    of the run's eval set predicted as one class, `degrade_share` the band of that share: the near-collapse flag
    misses it). On a crossed seed_design
    (simulate_curve's `design`) a trial's effect is its subset's (SD `subset_sd`) plus its draw's (SD
    sqrt(trial_sd^2 - subset_sd^2)), so the expected accuracy is the same as with independent trials."""

    trial_sd: float
    example_sd: float
    collapse: float = 0.0
    subset_sd: float = 0.0
    collapse_a: float = 0.0
    near_a: float = 0.0
    near_b: float = 0.0
    degrade_a: float = 0.0
    degrade_b: float = 0.0
    degrade_share: tuple[float, float] = DEGRADE_SHARE
    collapsing_ks: tuple[int, ...] = (0, 1)  # scratch and k = 1, as in the runs

    @property
    def symmetric(self) -> bool:
        """A and B alike, so both one-sided tests measure one size (their rates are averaged)."""
        return (self.collapse_a, self.near_a, self.degrade_a) == (self.collapse, self.near_b, self.degrade_b)


NULLS = {
    "trial-dominated": Null(trial_sd=0.3, example_sd=0.1),
    "trial + example": Null(trial_sd=0.15, example_sd=0.3),
    "example-dominated": Null(trial_sd=0.02, example_sd=0.8),
    "interaction-only": Null(trial_sd=0.0, example_sd=0.0),
    "B collapses (0.2)": Null(trial_sd=0.05, example_sd=0.2, collapse=0.2),
    "A, the full model, collapses (0.2)": Null(trial_sd=0.05, example_sd=0.2, collapse_a=0.2),
    "both collapse (0.2)": Null(trial_sd=0.05, example_sd=0.2, collapse=0.2, collapse_a=0.2),
    "both nearly collapse (0.15)": Null(trial_sd=0.15, example_sd=0.3, near_a=0.15, near_b=0.15),
    "collapses and near-collapses mixed": Null(
        trial_sd=0.15, example_sd=0.3, collapse=0.1, collapse_a=0.05, near_a=0.1, near_b=0.15
    ),
    # sub-threshold degradation: B's runs degrade just below the near-collapse flag, its other runs compensating
    # (CoLA, 69% one class, is where this band lives); no flag sees them, so every test reads them as trained runs
    "B degrades below the flag (0.2)": Null(trial_sd=0.05, example_sd=0.2, degrade_b=0.2),
    "B degrades below the flag (1/3)": Null(trial_sd=0.05, example_sd=0.2, degrade_b=1 / 3),
    "B degrades just below the check (1/3)": Null(
        trial_sd=0.05, example_sd=0.2, degrade_b=1 / 3, degrade_share=SHALLOW_SHARE
    ),
}
# the curve statistics' nulls: B's low-k conditions collapse, their trained runs compensating so that the
# expected curves stay equal (a curve statistic keeps every run)
CURVE_NULLS = {
    "trial-dominated": NULLS["trial-dominated"],
    "example-dominated": NULLS["example-dominated"],
    "interaction-only": NULLS["interaction-only"],
    "collapse-skewed": Null(trial_sd=0.05, example_sd=0.2, collapse=0.2),
    # the smaller size's full model (k = L = 6) collapses, its trained runs compensating: the gap, and so k90, moves
    "full model collapses (0.2)": Null(trial_sd=0.05, example_sd=0.2, collapse=0.2, collapsing_ks=(6,)),
    "full model collapses (0.2), trained runs alike": Null(
        trial_sd=0.05, example_sd=0.2, collapse=0.2, collapsing_ks=(6,)
    ),
}
# the curve nulls whose trained runs do not compensate for the collapses: the trained runs' expected curves are
# equal (the estimand of a difference the report decides only where no run collapsed: units.refuse_collapsed_curves)
TRAINED_ALIKE_CURVE_NULLS = {"full model collapses (0.2), trained runs alike"}


def _latent_scale(null: Null) -> float:
    return math.sqrt(1 + SHARED_EXAMPLE_SD**2 + null.trial_sd**2 + null.example_sd**2)


def mean_for(accuracy: float, null: Null, collapse: float = 0.0, chance: float = 0.5) -> float:
    """mu giving expected accuracy `accuracy` when a share `collapse` of trials scores `chance` (a
    balanced eval set's class share: 0.5 of two classes) and the rest follow the threshold model."""
    return _latent_scale(null) * float(stats.norm.ppf((accuracy - chance * collapse) / (1 - collapse)))


NEAR_PUSH = (0.8, 0.98)  # the share of a nearly collapsed run's examples pushed to its one class


def one_class_share(collapse: float, near: float, degrade: float, band=DEGRADE_SHARE) -> float:
    """The expected share of a condition's predictions pushed to one class when its runs collapse, nearly collapse
    and degrade (to a majority share in `band`) at these rates (a pushed example scores 0.5 in expectation:
    mean_for's `collapse`)."""
    return collapse + float(np.mean(NEAR_PUSH)) * near + (2 * float(np.mean(band)) - 1) * degrade


def simulate(
    null: Null,
    n_trials: int,
    reps: int,
    rng: np.random.Generator,
    contrast: float = 0.0,
    n_examples=EXAMPLES,
    compensate: bool = True,
    conditions: int = 2,
):
    """(correct [C, R, T, N], majority share [C, R, T]) of conditions A and B in `reps` replicates
    whose expected accuracy over all their runs, (nearly) collapsed ones included, differs by exactly
    `contrast` (A - B): each condition's runs collapse, nearly collapse and degrade below the flag (onto a
    class drawn per run) at the null's shares, and its trained runs' mu compensates (one_class_share). Without
    `compensate` (the hurdle's nulls) it is the trained runs' expected accuracy that differs by `contrast`,
    whatever the collapses. With more `conditions` (C) than 2, conditions 2.. are more draws of B (the hurdle's
    contrasts of three conditions)."""
    labels = rng.integers(0, 2, (reps, 1, n_examples), dtype=np.int8)
    shared = SHARED_EXAMPLE_SD * rng.standard_normal((reps, 1, n_examples), dtype=np.float32)
    correct, majority = [], []
    for accuracy, collapse, near, degrade in (
        (ACCURACY, null.collapse_a, null.near_a, null.degrade_a),
        *[(ACCURACY - contrast, null.collapse, null.near_b, null.degrade_b)] * (conditions - 1),
    ):
        latent = (
            np.float32(
                mean_for(
                    accuracy, null, one_class_share(collapse, near, degrade, null.degrade_share) if compensate else 0.0
                )
            )
            + null.trial_sd * rng.standard_normal((reps, n_trials, 1), dtype=np.float32)
            + null.example_sd * rng.standard_normal((reps, 1, n_examples), dtype=np.float32)
            + shared
            + rng.standard_normal((reps, n_trials, n_examples), dtype=np.float32)
        )
        predictions = np.where(latent > 0, labels, 1 - labels)
        draw = rng.random((reps, n_trials, 1))
        one_class = draw < collapse
        if near:
            pushed = rng.random((reps, n_trials, n_examples)) < rng.uniform(*NEAR_PUSH, (reps, n_trials, 1))
            one_class = one_class | ((draw >= collapse) & (draw < collapse + near) & pushed)
        if degrade:
            pushed = (
                rng.random((reps, n_trials, n_examples)) < 2 * rng.uniform(*null.degrade_share, (reps, n_trials, 1)) - 1
            )
            one_class = one_class | ((draw >= collapse + near) & (draw < collapse + near + degrade) & pushed)
        if collapse or near or degrade:
            # a (nearly) collapsed run predicts one class, either, as real runs do: onto class 1 alone, every
            # collapse would share one pattern of right and wrong examples, which the eval set's variance would see
            onto = rng.integers(0, 2, (reps, n_trials, 1), dtype=np.int8)
            predictions = np.where(one_class, onto, predictions)
        positive = predictions.mean(axis=-1)
        correct.append(predictions == labels)
        majority.append(np.maximum(positive, 1 - positive))
    return np.stack(correct), np.stack(majority)


TWO_CONDITIONS = (1, -1)  # A - B
