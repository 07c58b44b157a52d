"""The estimate tests (one-sided, difference, equivalence, beyond a margin) of an accuracy contrast: each
estimator measured (estimates) and their size, coverage and half-width per null and T (estimate_table)."""

from __future__ import annotations

import math
from dataclasses import dataclass, field, fields, replace

import numpy as np
from scipy import stats

from src.claims.evidence import runs_flagged
from src.stats import hypothesis
from src.tasks.kinds import COLLAPSE_SHARE
from tools.calibrate.nulls import ACCURACY, CHUNK, EXAMPLES, MARGIN, NULLS, TRIALS, TWO_CONDITIONS, simulate
from tools.calibrate.row import ALPHA, HOLM_LEVEL, LEVEL, Row
from tools.calibrate.variance_bound import BoundedEstimate

# the combined test of tools/calibrate/variance_bound.py, measured beside the claims' test and rejected
VARIANCE_BOUND = "variance bound (rejected)"
ESTIMATORS = ("new", VARIANCE_BOUND, "before", "trial-only t", "collapsed excluded")
TRAINED = "trained runs"  # "collapsed excluded" as the test of a margin or chance level (trained_table), not a reading


def _mean_squares(d: np.ndarray):
    """MS_T, MS_E, MS_TE of tables d [R, T, N] (two-way, one value per cell)."""
    _, n_trials, n_examples = d.shape
    grand = d.mean(axis=(1, 2))
    ss_t = n_examples * ((d.mean(axis=2) - grand[:, None]) ** 2).sum(axis=1)
    ss_e = n_trials * ((d.mean(axis=1) - grand[:, None]) ** 2).sum(axis=1)
    ss_te = (d**2).sum(axis=(1, 2)) - n_trials * n_examples * grand**2 - ss_t - ss_e
    return ss_t / (n_trials - 1), ss_e / (n_examples - 1), ss_te / ((n_trials - 1) * (n_examples - 1))


def dropped_component_df(d: np.ndarray) -> np.ndarray:
    """BEFORE's df, for the tables only: Satterthwaite's over the mean squares of the components kept,
    so that a trial component estimated <= 0 left the variance on MS_E's N - 1 df."""
    n_trials, n_examples = d.shape[1:]
    ms_t, ms_e, ms_te = _mean_squares(d)
    keep_t, keep_e = ms_t > ms_te, ms_e > ms_te
    terms = (
        (keep_t, ms_t, n_trials - 1),
        (keep_e, ms_e, n_examples - 1),
        (1.0 - keep_t - keep_e, ms_te, (n_trials - 1) * (n_examples - 1)),
    )
    total = sum(w * m for w, m, _ in terms)
    with np.errstate(invalid="ignore", divide="ignore"):
        return total**2 / sum((w * m) ** 2 / df for w, m, df in terms)


def estimates(
    correct: np.ndarray, majority: np.ndarray, estimator: str, weights=(1, -1)
) -> tuple[hypothesis.Estimate, np.ndarray]:
    """The accuracy contrast sum_c weights[c] * accuracy_c (A - B by default) of each replicate as
    `estimator` tests it, over a batch: an Estimate of arrays [R] (NaN where refused) and the refused mask.
    "new" (the claims' test: hypothesis.Estimate, the t test on the trials' T - 1 df), VARIANCE_BOUND (the same
    variance, the t test joined by the variance-bound test, each at half the level: a BoundedEstimate) and
    "trial-only t" keep every run, (nearly) collapsed ones included, as src/claims/units.py does; "collapsed
    excluded", the robustness reading, reads the trials where no condition's run (nearly) collapsed or degraded
    (evidence.runs_flagged), with no p below 2 of them;
    "before" kept every run and refused where (1 - q)^T > ALPHA for the largest share q of runs collapsed
    (share >= COLLAPSE_SHARE) in the replicate's own conditions."""
    # accuracy's pseudo-values are the correctness
    d = np.tensordot(np.asarray(weights, dtype=np.float32), correct.astype(np.float32), axes=1)
    reps, n_trials, n_examples = d.shape
    estimate, se, df, n, trial_sd, fixed_se = (np.full(reps, math.nan) for _ in range(6))
    kept: np.ndarray = np.ones((reps, n_trials), dtype=bool)
    refused = np.zeros(reps, dtype=bool)
    if estimator == "before":
        rate = (majority >= COLLAPSE_SHARE).mean(axis=2).max(axis=0)
        refused = (rate > 0) & ((1 - rate) ** n_trials > ALPHA)
    elif estimator in ("collapsed excluded", TRAINED):
        kept = ~np.any(runs_flagged(False, majority), axis=0)
        refused = kept.sum(axis=1) < 2
    for k in np.unique(kept.sum(axis=1)):
        rows = np.flatnonzero((kept.sum(axis=1) == k) & ~refused)
        if not len(rows):
            continue
        table = d[rows][kept[rows]].reshape(len(rows), k, -1)
        estimate[rows], n[rows] = table.mean(axis=(1, 2)), k
        if estimator == "trial-only t":
            se[rows], df[rows] = table.mean(axis=2).std(axis=1, ddof=1) / math.sqrt(k), k - 1
            continue
        v = hypothesis.crossed_variance(table)
        se[rows], trial_sd[rows], fixed_se[rows] = (
            np.sqrt(v.variance),
            np.sqrt(v.trial_variance),
            np.sqrt(v.fixed_variance),
        )
        df[rows] = dropped_component_df(table) if estimator == "before" else v.df
    # Estimate holds one array over the batch per field (its p and interval are vectorised); its fields are
    # annotated for one value
    batch = hypothesis.Estimate(estimate, se, np.where(refused, 0, n), df, trial_sd, df, fixed_se)  # type: ignore[arg-type]
    if estimator == VARIANCE_BOUND:  # the variance-bound test on the eval set's N - 1 df joins the t test
        batch = BoundedEstimate(*(getattr(batch, f.name) for f in fields(batch)), fixed_df=n_examples - 1.0)
    return batch, refused


@dataclass
class _Tally:
    """Running counts of one estimate test's cell over the chunks of a simulation."""

    rejected: np.ndarray  # [2, 2]: at ALPHA, HOLM_LEVEL, by tail
    covered: int = 0
    half: float = 0.0
    values: list[np.ndarray] = field(default_factory=list)
    refused: int = 0


ESTIMATE_TESTS = {  # test: (contrast simulated, rejected per level at it)
    "one-sided (p_greater)": 0.0,
    "difference (p_zero)": 0.0,
    f"equivalence (TOST, m={MARGIN})": MARGIN,
    f"beyond margin (p_beyond, m={MARGIN})": MARGIN,
}


def _rejections(test: str, e: hypothesis.Estimate) -> np.ndarray:
    """Rejections [R, 2, 2] of `test` in each replicate, per level and per tail (the one-sided test's p_greater
    and p_less; the other tests' one p twice)."""
    levels = np.array([ALPHA, HOLM_LEVEL])
    if test.startswith("one-sided"):
        tails = (np.asarray(e.p_greater()), np.asarray(e.p_less()))
        return np.stack([p[:, None] < levels for p in tails], axis=-1)
    p = np.asarray(
        {"difference": e.p_zero, "equivalence": lambda: e.p_equivalent(MARGIN)}.get(
            test.split(" ")[0], lambda: e.p_beyond(MARGIN)
        )()
    )
    return np.repeat((p[:, None] < levels)[..., None], 2, axis=-1)


def estimate_table(
    reps: int,
    seed: int = 0,
    trials=TRIALS,
    nulls=None,
    estimators=ESTIMATORS,
    n_examples=EXAMPLES,
    margin_reps: int | None = None,
    null_table=NULLS,
    compensate: bool = True,
    weights=TWO_CONDITIONS,
):
    """Every estimate test (ESTIMATE_TESTS) under every null of `null_table` at every T, by each estimator, in
    chunks of CHUNK replicates: `reps` at a true contrast of 0, `margin_reps` (default `reps`) at the margin. The
    one-sided size of an asymmetric null is the larger of its two tails'. `compensate`: as simulate's (without it
    the trained runs' contrast is the one at 0 or at the margin). `weights` (1,): condition A alone against a
    constant (a chance level), its trained runs' accuracy minus ACCURACY − the contrast; more than two weights:
    a contrast of as many conditions, B's draws after A (SLOPE_WEIGHTS, at a true contrast of 0 only)."""
    rng = np.random.default_rng(seed)
    replicates = {0.0: reps, MARGIN: reps if margin_reps is None else margin_reps}
    rows = []
    for name in nulls or null_table:
        null = null_table[name]
        for n_trials in trials:
            tests = [t for t, contrast in ESTIMATE_TESTS.items() if replicates[contrast]]
            tallies = {(t, m): _Tally(np.zeros((2, 2))) for t in tests for m in estimators}
            for start in range(0, max(replicates.values()), CHUNK):
                for contrast in (c for c, n in replicates.items() if start < n):
                    size = min(CHUNK, replicates[contrast] - start)
                    correct, majority = simulate(
                        null, n_trials, size, rng, contrast, n_examples, compensate, max(2, len(weights))
                    )
                    for method in estimators:
                        e, refused = estimates(correct[: len(weights)], majority[: len(weights)], method, weights)
                        if len(weights) == 1:  # A against the constant its expected accuracy exceeds by `contrast`
                            e = replace(e, estimate=e.estimate - (ACCURACY - contrast))
                        for test in (t for t in tests if ESTIMATE_TESTS[t] == contrast):
                            tally = tallies[(test, method)]
                            tally.rejected += np.sum(_rejections(test, e) & ~refused[:, None, None], axis=0)
                            tally.refused += int(refused.sum())
                            if test.startswith("difference"):
                                low, high = e.interval(LEVEL)
                                tally.covered += int(np.sum((low <= 0) & (high >= 0)))
                                tally.half += float(np.nansum((high - low) / 2))
                                tally.values.append(np.asarray(e.estimate)[~refused])
            for (test, method), tally in tallies.items():
                n = replicates[ESTIMATE_TESTS[test]]
                # a symmetric null's two one-sided tests measure one size (averaged); else the larger tail's
                tails = 2 if test.startswith("one-sided") and null.symmetric and len(weights) == 2 else 1
                rejected = tally.rejected.mean(axis=1) if tails == 2 else tally.rejected.max(axis=1)
                decided = n - tally.refused
                coverage = half_width = math.nan
                if tally.values:
                    values = np.concatenate(tally.values)
                    oracle = stats.norm.ppf(0.5 + LEVEL / 2) * values.std(ddof=1)
                    coverage = tally.covered / decided if decided else math.nan
                    half_width = tally.half / decided / oracle if decided and oracle > 0 else math.nan
                rows.append(
                    Row(
                        test,
                        name,
                        n_trials,
                        n,
                        float(rejected[0] / n),
                        coverage,
                        half_width,
                        estimator=method,
                        size_holm=float(rejected[1] / n),
                        refused=tally.refused / n,
                        tails=tails,
                    )
                )
    return rows


POWER_NULLS = ("trial-dominated", "trial + example", "example-dominated")
POWER_EFFECTS = (0.02, 0.05, 0.10)  # true A - B in accuracy: the order of the papers' reported effects
POWER_ESTIMATORS = ("new", VARIANCE_BOUND)


@dataclass(frozen=True)
class PowerRow:
    """The one-sided test's rejection rate of "A beats B" at a true contrast `effect` (no collapse), at ALPHA and
    at HOLM_LEVEL, per estimator."""

    null: str
    trials: int
    effect: float
    reps: int
    rates: dict[str, tuple[float, float]]


def power_table(
    reps: int, seed: int = 0, trials=TRIALS, nulls=POWER_NULLS, effects=POWER_EFFECTS, estimators=POWER_ESTIMATORS
) -> list[PowerRow]:
    """Power of the one-sided test (p_greater) at each true contrast of `effects`, under each null's variance
    components (NULLS; no collapse) at every T, by each estimator on the same replicates, in chunks of CHUNK."""
    rng = np.random.default_rng(seed)
    levels = np.array([ALPHA, HOLM_LEVEL])
    rows = []
    for name in nulls:
        for n_trials in trials:
            for effect in effects:
                rejected = {m: np.zeros(2) for m in estimators}
                for start in range(0, reps, CHUNK):
                    correct, majority = simulate(NULLS[name], n_trials, min(CHUNK, reps - start), rng, effect)
                    for method in estimators:
                        e, _ = estimates(correct, majority, method)
                        rejected[method] += np.sum(np.asarray(e.p_greater())[:, None] < levels, axis=0)
                rates = {m: (float(r[0] / reps), float(r[1] / reps)) for m, r in rejected.items()}
                rows.append(PowerRow(name, n_trials, effect, reps, rates))
    return rows


SLOPE_LAYERS = 6  # the default model's layers: k = 0..6
_CENTRED = np.arange(SLOPE_LAYERS + 1) - SLOPE_LAYERS / 2
# the OLS slope of the score over k as a contrast of the conditions at each k (later_reinit_costs_less)
SLOPE_WEIGHTS = tuple((_CENTRED / np.sum(_CENTRED**2)).tolist())
SLOPE_NULLS = ("trial-dominated", "trial + example", "example-dominated", "interaction-only")
# the claims' test; the variance-bound test beside it (rejected); the t over trials of per-trial slopes (the slope's
# test before: the mean of per-trial OLS slopes is the contrast, their spread its trial-only SD)
SLOPE_ESTIMATORS = ("new", VARIANCE_BOUND, "trial-only t")


def slope_table(reps: int, seed: int = 0, trials=TRIALS, nulls=SLOPE_NULLS) -> list[Row]:
    """The OLS slope over k = 0..SLOPE_LAYERS of SLOPE_LAYERS + 1 conditions alike (true slope 0, no collapse): the
    one-sided and two-sided tests' size and coverage by each of SLOPE_ESTIMATORS."""
    return estimate_table(reps, seed, trials, list(nulls), SLOPE_ESTIMATORS, margin_reps=0, weights=SLOPE_WEIGHTS)
