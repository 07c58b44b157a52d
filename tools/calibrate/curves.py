"""The curve statistics (k90, rho against a probe curve, their differences between two sizes, the drop point)
by the percentile bootstrap, as the report draws them: on independent trials (curve_table) and on a crossed
seed_design (crossed_curve_table)."""

from __future__ import annotations

import math
from dataclasses import replace

import numpy as np
from scipy import stats

from src.stats import hypothesis
from src.stats.hypothesis import ExampleMetric
from src.tasks.metrics import example_metric
from tools.calibrate.crossed import crossed_effects
from tools.calibrate.nulls import (
    CURVE_NULLS,
    EXAMPLES,
    SHARED_EXAMPLE_SD,
    TRAINED_ALIKE_CURVE_NULLS,
    TRIALS,
    Null,
    mean_for,
)
from tools.calibrate.row import ALPHA, LEVEL, Row

# expected accuracy with the first k of L = 6 layers kept (scratch at k = 0, full at k = L): a
# concave rise, and a probe curve that peaks in the middle
CURVE = np.array([0.60, 0.70, 0.76, 0.785, 0.80, 0.805, 0.81])
PROBE = np.array([0.50, 0.60, 0.66, 0.68, 0.66, 0.63, 0.60])


PROBE_SEEDS = 3  # probe.seeds' default


def simulate_curve(
    null: Null,
    n_trials: int,
    rng: np.random.Generator,
    shared: np.ndarray,
    positive: np.ndarray,
    accuracies: np.ndarray = CURVE,
    collapsing: tuple | None = None,
    design: tuple[int, int] | None = None,
    compensate: bool = True,
) -> np.ndarray:
    """Correctness [R, K, T, N] of every k-layers condition (expected accuracy exactly
    accuracies[k]) on the eval set of each replicate, whose difficulty every condition shares:
    `shared` [R, 1, 1, N]. The conditions in `collapsing` (default `null.collapsing_ks`) collapse at
    `null.collapse`: such a trial predicts one class, so it is right exactly on that class's examples
    (`positive` [R, N]). A probe curve is simulated the same way (collapsing nothing), its seeds as the trials.
    With a crossed seed_design `design` = (S, D), n_trials = S*D and trial t's effect is that of
    subset t // D plus that of draw t % D, each condition (k) with its own effects, as in
    simulate_crossed (Null's subset_sd). Without `compensate` the trained runs' expected accuracy is
    accuracies[k] whatever the collapses."""
    reps, n_examples = shared.shape[0], shared.shape[-1]
    collapsing = null.collapsing_ks if collapsing is None else collapsing
    collapse = np.array([null.collapse if k in collapsing else 0.0 for k in range(len(accuracies))])
    means = np.array([mean_for(a, null, q if compensate else 0.0) for a, q in zip(accuracies, collapse)])
    means = means[None, :, None, None]
    if design is None:
        trial_effects = null.trial_sd * rng.standard_normal((reps, len(accuracies), n_trials, 1))
    else:
        sds = null.subset_sd, math.sqrt(null.trial_sd**2 - null.subset_sd**2)
        trial_effects = crossed_effects(rng, (reps, len(accuracies)), design, sds).reshape(reps, len(accuracies), -1, 1)
    latent = (
        means
        + trial_effects
        + null.example_sd * rng.standard_normal((reps, len(accuracies), 1, n_examples))
        + shared
        + rng.standard_normal((reps, len(accuracies), n_trials, n_examples))
    )
    collapsed = rng.random((reps, len(accuracies), n_trials, 1)) < collapse[None, :, None, None]
    return np.where(collapsed, positive[:, None, None, :], latent > 0).astype(float)


def _as_predictions(correct: np.ndarray) -> tuple[ExampleMetric | None, np.ndarray, np.ndarray, np.ndarray]:
    """hypothesis.curve_draws' arguments (accuracy) for simulated correctness [K, T, N]: labels all 1,
    predictions = correctness."""
    return example_metric("accuracy"), correct, np.ones(correct.shape[-1]), correct.mean(axis=-1)


def _bootstrap_row(test, null_name, n_trials, estimates, boots, truth, design=None, refused=None) -> Row:
    """Size (p_zero at a true 0, over every replicate, a refused one never rejecting; NaN otherwise), coverage of
    `truth` and the half-width ratio of percentile-bootstrap statistics over the replicates not `refused` (a
    boolean per replicate: units.refuse_collapsed_curves); `undefined` is the mean share of undefined draws."""
    estimates = np.asarray(estimates, dtype=float)
    refused = np.zeros(len(boots), dtype=bool) if refused is None else np.asarray(refused, dtype=bool)
    intervals = np.array([b.interval(LEVEL) for b in boots])
    covered = ((intervals[:, 0] <= truth) & (truth <= intervals[:, 1]))[~refused]
    defined = np.isfinite(estimates)
    oracle = stats.norm.ppf(0.5 + LEVEL / 2) * estimates[defined].std(ddof=1)
    half = np.nanmean((intervals[:, 1] - intervals[:, 0])[~refused]) / 2 if (~refused).any() else math.nan
    rejected = np.array([b.p_zero() < ALPHA for b in boots]) & ~refused
    return Row(
        test,
        null_name,
        n_trials,
        len(boots),
        float(np.mean(rejected)) if truth == 0 else math.nan,
        float(np.mean(covered)) if len(covered) else math.nan,
        float(half / oracle) if oracle > 0 else math.nan,
        float(np.mean([b.undefined_share for b in boots])),
        design=design,
        refused=float(np.mean(refused)) if test in CURVE_DIFFERENCES else 0.0,
    )


CURVE_DIFFERENCES = ("k90 difference", "difference of rho", "drop-point difference")  # "bootstrap-difference"


def curve_truths() -> dict[str, float]:
    """Every curve statistic curve_boots measures, with its true value (CURVE and PROBE's)."""
    from src.stats.curves import first_reaching  # the claims' definition, measured as it is

    return {
        "k90": first_reaching(CURVE),
        "k90 difference": 0.0,
        "Spearman rho vs probe": hypothesis.spearman(PROBE, CURVE),
        "difference of rho": 0.0,
        "max(curve) − max(probe)": CURVE.max() - PROBE.max(),
        "k90(probe) − k90(curve)": first_reaching(PROBE) - first_reaching(CURVE),
        "drop-point difference": 0.0,
    }


def curve_boots(
    null: Null,
    n_trials: int,
    reps: int,
    resamples: int,
    rng,
    design: tuple[int, int] | None = None,
    read_design: bool = True,
    compensate: bool = True,
) -> tuple[dict[str, list[hypothesis.Bootstrap]], np.ndarray]:
    """The curve statistics of the claims (curve_truths), by the percentile bootstrap, as the report
    draws them, in `reps` replicates: two sizes' finetuning curves A and B (equal expected curves;
    under a collapse null B's `null.collapsing_ks` conditions collapse, A's do not) and a probe curve of
    PROBE_SEEDS seeds, all scored on one eval set per replicate, their draws taking the same
    eval-set draw (hypothesis.example_draws; src/claims/claim.py Shared.eval_draws). With a crossed
    seed_design `design` (n_trials = S*D), both sizes' runs come from it and their draws read it
    (or, without `read_design`, take its S*D trials as independent); the probe's seeds stay independent.
    `compensate`: as simulate_curve's, for B's curve. Also,
    per replicate, whether either size's curve holds a collapsed run, where the report refuses a difference of
    the two (units.refuse_collapsed_curves)."""
    from src.stats.curves import drop_point, first_reaching

    shared = SHARED_EXAMPLE_SD * rng.standard_normal((reps, 1, 1, EXAMPLES))
    positive = rng.integers(0, 2, (reps, EXAMPLES))  # the examples of the class a collapsed run predicts
    # as in the contrasts, only B collapses (smaller data collapse more often), the expected curves equal
    correct_a = simulate_curve(null, n_trials, rng, shared, positive, collapsing=(), design=design)
    correct_b = simulate_curve(null, n_trials, rng, shared, positive, design=design, compensate=compensate)
    correct_probe = simulate_curve(null, PROBE_SEEDS, rng, shared, positive, PROBE, collapsing=())
    # a collapsed run is right exactly on the examples of the class it predicts (simulate_curve)
    collapsed = (correct_b == positive[:, None, None, :]).all(axis=-1).any(axis=(1, 2))
    boots: dict[str, list[hypothesis.Bootstrap]] = {test: [] for test in curve_truths()}
    read = design if read_design else None  # the design the two sizes' draws resample by
    for r in range(reps):
        counts = hypothesis.example_draws(EXAMPLES, resamples, rng)  # the eval set's draws, shared
        (a, draws_a), (b, draws_b), (probe, draws_probe) = (
            (c[r].mean(axis=(1, 2)), hypothesis.curve_draws(*_as_predictions(c[r]), resamples, rng, counts, used))
            for c, used in ((correct_a, read), (correct_b, read), (correct_probe, None))
        )
        k90_a, k90_b, k90_probe = (np.apply_along_axis(first_reaching, 1, d) for d in (draws_a, draws_b, draws_probe))
        rho_a, rho_b = (hypothesis.spearman_rows(draws_probe, d) for d in (draws_a, draws_b))
        for test, estimate, draws in (
            ("k90", first_reaching(a), k90_a),
            ("k90 difference", first_reaching(a) - first_reaching(b), k90_a - k90_b),
            ("Spearman rho vs probe", hypothesis.spearman(probe, a), rho_a),
            ("difference of rho", hypothesis.spearman(probe, a) - hypothesis.spearman(probe, b), rho_a - rho_b),
            ("max(curve) − max(probe)", a.max() - probe.max(), draws_a.max(axis=1) - draws_probe.max(axis=1)),
            ("k90(probe) − k90(curve)", first_reaching(probe) - first_reaching(a), k90_probe - k90_a),
            ("drop-point difference", drop_point(a) - drop_point(b), drop_point(draws_a) - drop_point(draws_b)),
        ):
            boots[test].append(hypothesis.Bootstrap(estimate, draws, n_trials))
    return boots, collapsed


def curve_table(reps: int, resamples: int, seed: int = 0, trials=TRIALS, nulls=None) -> list[Row]:
    """The curve statistics of the claims (curve_boots) under every null at every T. Measured: k90
    (first k reaching 90% of the full-vs-scratch gap), the difference of the two sizes' k90,
    Spearman rho of a curve against the probe curve, the difference of the two sizes' rho, and the
    probe-against-finetuning contrasts (maximum of the curve minus the probe's, k90 of the probe
    minus the curve's), and the difference of the two sizes' steepest step (the drop point)."""
    rng = np.random.default_rng(seed)
    rows = []
    for name in nulls or CURVE_NULLS:
        for n_trials in trials:
            compensate = name not in TRAINED_ALIKE_CURVE_NULLS
            boots, collapsed = curve_boots(CURVE_NULLS[name], n_trials, reps, resamples, rng, compensate=compensate)
            for test, truth in curve_truths().items():
                estimates = [b.estimate for b in boots[test]]
                refused = collapsed if test in CURVE_DIFFERENCES else None
                rows.append(_bootstrap_row(test, name, n_trials, estimates, boots[test], truth, refused=refused))
    return rows


CROSSED_CURVE_NULLS = {  # crossed_table's subset and draw SDs (probit), and a collapse null like NULLS'
    "subset-dominated": Null(trial_sd=math.hypot(0.3, 0.05), example_sd=0.1, subset_sd=0.3),
    "draws-dominated": Null(trial_sd=math.hypot(0.05, 0.3), example_sd=0.1, subset_sd=0.05),
    "collapse-skewed": Null(trial_sd=math.hypot(0.05, 0.05), example_sd=0.2, collapse=0.2, subset_sd=0.05),
}
CROSSED_CURVE_DESIGNS = ((2, 2), (3, 3), (2, 5), (5, 2), (3, 4), (4, 3), (3, 5), (5, 3), (4, 4))  # (subsets, draws)


def crossed_curve_table(
    reps: int, resamples: int, seed: int = 0, designs=CROSSED_CURVE_DESIGNS, nulls=None, old: bool = False
) -> list[Row]:
    """The differences of like curve statistics between two sizes (CURVE_DIFFERENCES, tested at 0)
    when both sizes' runs come from a crossed seed_design, their draws reading it ("new":
    hypothesis.curve_draws' `design`, subsets and draws resampled by the pigeonhole bootstrap)
    and, with `old`, on other replicates of the same cell, taking its S*D trials as independent
    ("OLD": what the curve bootstrap did before it read the design)."""
    rng = np.random.default_rng(seed)
    rows = []
    for name in nulls or CROSSED_CURVE_NULLS:
        for design in designs:
            n_trials = design[0] * design[1]
            for estimator in ("new", "old") if old else ("new",):
                boots, collapsed = curve_boots(
                    CROSSED_CURVE_NULLS[name], n_trials, reps, resamples, rng, design, estimator == "new"
                )
                for test in CURVE_DIFFERENCES:
                    estimates = [b.estimate for b in boots[test]]
                    row = _bootstrap_row(test, name, n_trials, estimates, boots[test], 0.0, design, collapsed)
                    rows.append(replace(row, test=f"{test}, crossed {design[0]}x{design[1]}", estimator=estimator))
    return rows
