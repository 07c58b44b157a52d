"""The statistical tests behind every verdict: paired contrasts over trials and eval
examples, equivalence and minimum-effect tests, bootstrap intervals, exact permutation p,
Holm and the intersection-union test (src/stats/power.py: the probability that one decides).

What comes from scipy / statsmodels: t and chi-square quantiles, the exact permutation
test (scipy.stats.permutation_test), Welch's statistic (scipy.stats.ttest_ind), Holm
(statsmodels multipletests). What is
written here, because neither has it: the variance of a mean over a crossed trials x
eval-examples design (two-way random-effects mean squares on the trials' df, applied
to example-jackknife pseudo-values so that F1 and MCC get it too), the tests from that
estimate's standard error, the curve bootstrap (with the two-way pigeonhole bootstrap of a
crossed seed_design's subsets and draws). Each has a test against
the textbook case it reduces to (tests/unit/stats/test_hypothesis.py), and its calibration is
measured by simulation (tools/calibrate, docs/calibration.md). The task metric a test
resamples over the eval examples comes from its caller (an ExampleMetric; src/tasks/metrics.py
defines them): this module imports nothing from the project.
"""

from __future__ import annotations

import functools
import itertools
import math
from dataclasses import dataclass, replace
from typing import Protocol

import numpy as np
from scipy import stats
from statsmodels.stats.multitest import multipletests


class ExampleMetric(Protocol):
    """A metric of the eval examples, passed in by the caller (src/tasks/metrics.py example_metric
    defines accuracy, F1, MCC and SQuAD F1; this module imports nothing from the project).
    `weighted`: the metric of every trial (rows of predictions [T, N]) under each bootstrap draw's
    example multiplicities [B, N]: [B, T]. `pseudo_values`: the example-jackknife pseudo-values
    N*m_t - (N-1)*m_t(-n) of each trial's metric m_t ([..., T, N] for predictions [..., T, N]):
    their mean over examples is the metric's jackknife estimate and their spread its example
    variance (Tukey 1958); for accuracy exactly the per-example correctness."""

    def weighted(self, predictions: np.ndarray, labels: np.ndarray, example_counts: np.ndarray) -> np.ndarray: ...

    def pseudo_values(self, predictions: np.ndarray, labels: np.ndarray) -> np.ndarray: ...


# --- the variance of a mean over crossed trials x eval examples ---------------------------------


@dataclass(frozen=True)
class CrossedVariance:
    """Var(grand mean) of values over crossed random factors without replication, the last the
    eval examples and the others the trials' (one factor for independent trials; subsets and
    draws for a crossed seed_design). With factors F, the model is d = mu + sum over every
    nonempty set A of F of an effect with variance s2_A (main effects and interactions), and
    Var(mean) = sum_A s2_A / prod_{i in A} n_i, each component counted once. Since
    E[MS_B] = sum_{A >= B} s2_A prod_{i not in A} n_i, Moebius inversion gives each
    s2_A from the mean squares, and Var's unbiased estimate is
    sum_B (-1)^(|B|+1) MS_B / prod_i n_i; for trials x examples, (MS_T + MS_E - MS_TE)/(T N)
    (Searle, Casella & McCulloch 1992, ch. 4). A component that estimates negative is set to 0
    and its mean squares left out: for independent trials the trials' part (what more trials
    shrink) is then max(MS_T, MS_TE)/(T N), never below what the interaction alone gives, and the
    eval set's part (what they do not) max(MS_E - MS_TE, 0)/(T N).

    The degrees of freedom are the trials': T - 1 (the smaller factor's levels - 1 on a crossed
    seed_design), never more, as measured (docs/calibration.md). Satterthwaite's (1946) df, which
    grow toward the examples' N - 1 as the eval set's share grows, are read off the same noisy
    mean squares as the variance, so a sample whose trials happen to agree gets both a small
    variance and many df: with the trial component dropped from the df where it estimated <= 0,
    one-sided size 13x nominal at alpha/53 (T = 3); even with the trials' part on T - 1 df inside
    Satterthwaite's sum, 1.4x (T = 10). Nor does bounding the trials' part by its chi-square upper
    limit on T - 1 df and then reading the eval set's N - 1 df recover power: the trials' part carries
    the trial x example interaction, which the limit multiplies (79x at T = 3, level 0.025), and a test
    combining that bound with the t test lost power in every cell measured (tools/calibrate/variance_bound.py,
    docs/calibration.md). Every field is an array over any leading (batch) axes."""

    variance: np.ndarray  # Var(grand mean) at the observed design
    df: np.ndarray  # of `variance`: the trials' (T - 1)
    trial_variance: np.ndarray  # (variance - fixed_variance) x trials: a single trial's share, which shrinks as 1/T
    trial_df: np.ndarray  # of `trial_variance`: T - 1
    fixed_variance: np.ndarray  # s2_E/N: the eval set's share, which more trials do not shrink


def crossed_variance(values: np.ndarray, factors: int = 2, examples: bool = True) -> CrossedVariance:
    """The CrossedVariance of `values` [..., n_1, ..., n_k], whose last k = `factors` axes are
    the crossed factors (each of size >= 2), the eval examples last: [..., T, N] for independent
    trials, [..., S, D, N] for S subsets crossed with D draws. Without eval examples (`examples`
    False: [..., S, D], a crossed seed_design's trial scores) every factor is the trials', the
    df the smaller factor's levels - 1 and `fixed_variance` the last factor's share."""
    d = np.asarray(values, dtype=float)
    sizes = d.shape[-factors:]
    axes = range(d.ndim - factors, d.ndim)
    sets = [b for r in range(1, factors + 1) for b in itertools.combinations(range(factors), r)]
    # each set's effect by inclusion-exclusion of marginal means, its mean square and df
    ms, df = {}, {}
    for b in sets:
        effect = sum(
            (-1) ** (len(b) - len(c)) * d.mean(axis=tuple(axes[i] for i in range(factors) if i not in c), keepdims=True)
            for r in range(len(b) + 1)
            for c in itertools.combinations(b, r)
        )
        df[b] = math.prod(sizes[i] - 1 for i in b)
        outside = math.prod(n for i, n in enumerate(sizes) if i not in b)
        ms[b] = outside * (effect**2).sum(axis=tuple(axes)) / df[b]
    # each component's estimate (Moebius inversion of the expected mean squares); kept if > 0
    kept = {a: sum((-1) ** (len(b) - len(a)) * ms[b] for b in sets if set(a) <= set(b)) > 0 for a in sets}
    # Var = sum_b weight_b MS_b / prod n, the weights summing the kept components' signs
    weight = {b: sum((-1) ** (len(b) - len(a)) * kept[a] for a in sets if set(a) <= set(b)) for b in sets}
    last = (factors - 1,)
    fixed_weight = {b: (-1) ** (len(b) - 1) * kept[last] if last[0] in b else 0 for b in sets}
    trial_df = np.full(np.shape(ms[last]), float(min(n - 1 for n in (sizes[:-1] if examples else sizes))))
    fixed_total = sum(fixed_weight[b] * ms[b] for b in sets)
    trial_total = sum(weight[b] * ms[b] for b in sets) - fixed_total
    cells = math.prod(sizes)
    return CrossedVariance(
        variance=(trial_total + fixed_total) / cells,
        df=trial_df,
        trial_variance=trial_total / sizes[-1],
        trial_df=trial_df,
        fixed_variance=fixed_total / cells,
    )


@dataclass(frozen=True)
class Estimate:
    """A contrast's point estimate, its standard error with its degrees of freedom, and how
    that variance splits: `trial_sd` (one trial's SD, on `trial_df` df; the part that shrinks
    as 1/sqrt(trials)) and `fixed_se` (the eval set's part, which more trials do not shrink):
    se^2 = trial_sd^2 / n + fixed_se^2."""

    estimate: float
    se: float
    n: int  # trials
    df: float = math.nan
    trial_sd: float = math.nan
    trial_df: float = math.nan
    fixed_se: float = 0.0

    def _p(self, p_of_z, degenerate) -> float:
        """p_of_z(shift -> z) mapped over the estimate (an array over batch axes, or one value): where
        se is 0 the p is 0 if `degenerate` (the estimate alone decides) holds, else 1; NaN without a test
        (fewer than 2 trials, or no finite SE)."""
        se = np.asarray(self.se, dtype=float)
        with np.errstate(invalid="ignore", divide="ignore"):
            p = np.where(se > 0, p_of_z(lambda shift: (self.estimate - shift) / se), np.where(degenerate, 0.0, 1.0))
        p = np.where((self.n >= 2) & np.isfinite(se), p, math.nan)
        # element-wise over batch axes (tools/calibrate's arrays); src/ passes one value and gets a float
        return float(p) if p.ndim == 0 else p  # type: ignore[return-value]

    def interval(self, level: float = 0.95) -> tuple[float, float]:
        se = np.asarray(self.se, dtype=float)
        with np.errstate(invalid="ignore"):
            half = np.where(se > 0, stats.t.ppf(0.5 + level / 2, self.df) * se, 0.0)
        half = np.where((self.n >= 2) & np.isfinite(se), half, math.nan)
        low, high = self.estimate - half, self.estimate + half
        # element-wise over batch axes (tools/calibrate's arrays); src/ passes one value and gets floats
        return (float(low), float(high)) if np.ndim(low) == 0 else (low, high)  # type: ignore[return-value]

    def p_zero(self) -> float:
        """Two-sided p of H0: contrast = 0."""
        return self._p(lambda z: 2 * stats.t.sf(np.abs(z(0.0)), self.df), np.asarray(self.estimate) != 0)

    def p_greater(self, bound: float = 0.0) -> float:
        """One-sided p of H0: contrast <= bound (small p: the contrast is above `bound`)."""
        return self._p(lambda z: stats.t.sf(z(bound), self.df), np.asarray(self.estimate) > bound)

    def p_less(self, bound: float = 0.0) -> float:
        """One-sided p of H0: contrast >= bound (small p: the contrast is below `bound`)."""
        return replace(self, estimate=-self.estimate).p_greater(-bound)

    def p_equivalent(self, margin: float) -> float:
        """TOST p of H0: |contrast| >= margin (small p: within the margin)."""
        return self._p(
            lambda z: np.maximum(stats.t.sf(z(-margin), self.df), stats.t.cdf(z(margin), self.df)),
            np.abs(self.estimate) < margin,
        )

    def p_beyond(self, margin: float) -> float:
        """p of H0: |contrast| <= margin against H1: |contrast| > margin (small p: an effect
        larger than the margin, in either direction). The p is the chance, at the boundary
        contrast = +margin (by symmetry the same at -margin; the largest over H0), of an
        estimate at least as far from 0 as the observed one: both tails count, so a large
        estimate of either sign is evidence and the size stays at alpha."""
        far = replace(self, estimate=np.abs(self.estimate))
        return far._p(
            lambda z: stats.t.sf(z(margin), self.df) + stats.t.cdf(-z(-margin), self.df),
            np.abs(self.estimate) > margin,
        )


def paired_contrast(
    terms: list[tuple[float, np.ndarray, np.ndarray]],
    labels: np.ndarray,
    metric: ExampleMetric | None,
    design: tuple[int, int] | None = None,
) -> Estimate:
    """sum_i w_i * mean over trials of metric(run of condition i), paired by trial.

    `terms`: (weight, predictions [T, N], scores [T]) per condition, rows in the same trial
    order (trial t of every condition shares its training subset and seeds), columns the
    eval examples. With an ExampleMetric `metric` (accuracy, F1, MCC, SQuAD F1) the variance is
    the crossed trials x examples one (`crossed_variance`) of the contrast's example-jackknife
    pseudo-values sum_i w_i pv_i[t, n]: trials and eval examples are both random, each component
    counted once; its calibration is measured in docs/calibration.md. With None (other metrics,
    or no per-example predictions) and without eval labels the examples are not resampled and
    the test is the paired t over trials. One trial gives no SE. With a crossed seed_design
    `design` = (S subsets, D draws) covering trials 0..S*D-1 (trial t: subset t // D, draw
    t % D), the trials are not independent: they share subsets and draws, so the variance is
    the crossed subsets x draws (x examples) one, each component counted once."""
    scores = [np.asarray(s, dtype=float) for _, _, s in terms]
    n_trials = len(scores[0])
    per_trial = np.asarray(sum(weight * s for (weight, _, _), s in zip(terms, scores)))
    estimate = float(np.mean(per_trial))
    if n_trials < 2:
        return Estimate(estimate, math.nan, n_trials)
    labels = np.asarray(labels)
    crossed = design is not None and min(design) >= 2 and math.prod(design) == n_trials
    if metric is None or labels.size < 2:
        if not crossed:
            sd = float(np.std(per_trial, ddof=1))
            return Estimate(estimate, sd / math.sqrt(n_trials), n_trials, n_trials - 1, sd, n_trials - 1)
        v = crossed_variance(per_trial.reshape(design), examples=False)  # subsets x draws, no eval examples
        se = float(np.sqrt(v.variance))
        return Estimate(estimate, se, n_trials, float(v.df), se * math.sqrt(n_trials), float(v.df))
    contrast = np.asarray(sum(weight * metric.pseudo_values(np.asarray(p), labels) for weight, p, _ in terms))
    if crossed and design is not None:
        v = crossed_variance(contrast.reshape(*design, -1), factors=3)
    else:
        v = crossed_variance(contrast)
    return Estimate(
        estimate,
        float(np.sqrt(v.variance)),
        n_trials,
        float(v.df),
        float(np.sqrt(v.trial_variance)),
        float(v.trial_df),
        float(np.sqrt(v.fixed_variance)),
    )


def two_sample(a: np.ndarray, b: np.ndarray) -> Estimate:
    """mean(a) - mean(b) of two independent samples (the last axis; leading axes are a batch) with Welch's
    standard error sqrt(s_a^2/n_a + s_b^2/n_b) on min(n_a, n_b) - 1 df, the conservative bound of Welch's
    Satterthwaite df (Hsu 1938; Scheffe 1970): that df, read off the two sample variances, is anti-conservative
    at small levels (size 1.5x nominal at alpha/53 with 5 or 10 runs a side and unequal SDs; docs/calibration.md).
    Its statistic is scipy.stats.ttest_ind(equal_var=False)'s."""
    a, b = np.asarray(a, dtype=float), np.asarray(b, dtype=float)
    n = min(a.shape[-1], b.shape[-1])
    if n < 2:
        return Estimate(a.mean(axis=-1) - b.mean(axis=-1), math.nan, n)
    se = np.sqrt(a.var(axis=-1, ddof=1) / a.shape[-1] + b.var(axis=-1, ddof=1) / b.shape[-1])
    # the planner's trial part: se^2 = trial_sd^2 / n on n - 1 df, n the smaller sample (more of both shrink it)
    return Estimate(a.mean(axis=-1) - b.mean(axis=-1), se, n, n - 1, se * math.sqrt(n), n - 1)


# --- percentile bootstrap of a statistic of whole curves -----------------------------------------


@dataclass(frozen=True)
class Bootstrap:
    """A statistic with its bootstrap draws (for k90 and correlations of curves).

    Its p-values are shares of the defined draws, floored at 1/(B+1) with B the defined
    draws: B draws cannot show a p below that (Davison & Hinkley 1997, eq. 4.11), and a p of
    exactly 0 would stay 0 under any multiplicity adjustment. Undefined draws (NaN) are left
    out of every share; `undefined_share` says how many, so that a caller can refuse a
    verdict above a declared share."""

    estimate: float
    draws: np.ndarray  # NaN where the statistic is undefined in a draw
    n: int  # trials resampled

    @property
    def _defined(self) -> np.ndarray:
        return self.draws[np.isfinite(self.draws)]

    def _floored(self, share) -> float:
        """`share` (of the defined draws) floored at 1/(B+1) and capped at 1; NaN with no defined draw."""
        count = len(self._defined)
        return float(min(1.0, max(share, 1 / (count + 1)))) if count else math.nan

    def interval(self, level: float = 0.95) -> tuple[float, float]:
        defined = self._defined
        if len(defined) == 0:
            return math.nan, math.nan
        low, high = np.quantile(defined, [0.5 - level / 2, 0.5 + level / 2])
        return float(low), float(high)

    @property
    def undefined_share(self) -> float:
        return float(np.mean(~np.isfinite(self.draws)))

    def p_zero(self) -> float:
        """Two-sided bootstrap p of H0: statistic = 0 (twice the smaller tail at 0, ties counted in both)."""
        defined = self._defined
        return self._floored(2 * min(np.mean(defined <= 0), np.mean(defined >= 0)) if len(defined) else 0.0)

    def p_greater(self, bound: float = 0.0) -> float:
        """One-sided bootstrap p of H0: statistic <= bound."""
        return self._floored(np.mean(self._defined <= bound) if len(self._defined) else 0.0)

    def p_less(self, bound: float = 0.0) -> float:
        """One-sided bootstrap p of H0: statistic >= bound."""
        return self._floored(np.mean(self._defined >= bound) if len(self._defined) else 0.0)

    def p_equivalent(self, margin: float) -> float:
        defined = self._defined
        return self._floored(max(np.mean(defined >= margin), np.mean(defined <= -margin)) if len(defined) else 0.0)

    def p_beyond(self, margin: float) -> float:
        return self._floored(np.mean(np.abs(self._defined) <= margin) if len(self._defined) else 0.0)


def example_draws(n_examples: int, resamples: int, rng: np.random.Generator) -> np.ndarray:
    """Multiplicities [B, N] of the eval examples under `resamples` bootstrap draws. Every curve
    scored on one eval set takes the same draws (curve_draws' `example_counts`), so the noise
    of that eval set, which they share, is resampled jointly and cancels where they are compared."""
    return rng.multinomial(n_examples, np.full(n_examples, 1 / n_examples), size=resamples).astype(float)


def trial_multiplicities(
    n_trials: int, resamples: int, rng: np.random.Generator, design: tuple[int, int] | None = None
) -> np.ndarray:
    """Multiplicities [B, T] of the trials under `resamples` bootstrap draws. Independent trials
    are drawn with replacement. With a crossed seed_design `design` = (S subsets, D draws)
    (trial t: subset t // D, draw t % D) the subsets and the draws are drawn independently and
    cell (s, d) is weighted by the product of their multiplicities (the two-way "pigeonhole"
    bootstrap, Owen 2007): resampling the S*D cells as if independent would take the trials that
    share a subset or a draw for replication. Its variance carries the interaction (here every
    cell's own noise) about three times, once with each factor and once with their product;
    docs/calibration.md measures what that does to coverage."""
    if design is None:
        return rng.multinomial(n_trials, np.full(n_trials, 1 / n_trials), size=resamples).astype(float)
    subsets, draws = design
    if subsets * draws != n_trials:
        raise ValueError(f"a seed_design of {subsets} x {draws} covers {subsets * draws} trials, not {n_trials}")
    by_subset = rng.multinomial(subsets, np.full(subsets, 1 / subsets), size=resamples)
    by_draw = rng.multinomial(draws, np.full(draws, 1 / draws), size=resamples)
    return (by_subset[:, :, None] * by_draw[:, None, :]).reshape(resamples, n_trials).astype(float)


def curve_draws(
    metric: ExampleMetric | None,
    predictions: np.ndarray,
    labels: np.ndarray,
    scores: np.ndarray,
    resamples: int,
    rng,
    example_counts: np.ndarray | None = None,
    design: tuple[int, int] | None = None,
) -> np.ndarray:
    """Percentile-bootstrap draws [B, K] of a curve's mean over trials, from each point's
    predictions [K, T, N] and scores [K, T], with each variance component counted once, as in
    crossed_variance: the trials are resampled (the same draw at every k, so the curve stays
    paired), which carries s2_T/T + s2_TE/(T N); the eval set's own part s2_E/N is added once,
    as the deviation of the all-trials mean under one example draw (shared by every k), scaled
    per k to crossed_variance's `fixed_variance` (an example draw alone would also carry
    s2_TE/(T N) again; resampling both jointly carries it about three times, Owen 2007). Without
    an ExampleMetric `metric` (None: metrics that are not example means or ratios), or with one
    trial, the trials only. `example_counts` ([B, N], example_draws) are the eval set's draws: pass the same
    ones to every curve scored on that eval set (other sizes, the probe curve) so that their
    comparisons resample it jointly; None draws fresh ones. With a crossed seed_design `design`
    = (S subsets, D draws) covering the T = S*D trials, the trials are resampled by subsets and
    draws (trial_multiplicities) and the eval set's part is the subsets x draws x examples
    table's `fixed_variance`. Its calibration is measured by tools/calibrate/curves.py
    (docs/calibration.md)."""
    scores, labels = np.asarray(scores, dtype=float), np.asarray(labels)
    n_trials = scores.shape[1]
    trial_part = trial_multiplicities(n_trials, resamples, rng, design) @ scores.T / n_trials  # [B, K]
    if metric is None or labels.size < 2 or n_trials < 2:
        return trial_part
    if example_counts is None:
        example_counts = example_draws(labels.size, resamples, rng)
    deviation = np.stack(
        [metric.weighted(p, labels, example_counts).mean(axis=1) - s.mean() for p, s in zip(predictions, scores)],
        axis=1,
    )  # [B, K]
    values = metric.pseudo_values(np.asarray(predictions), labels)  # [K, T, N]
    if design is None:
        fixed = crossed_variance(values).fixed_variance  # [K]
    else:
        fixed = crossed_variance(values.reshape(len(values), *design, -1), factors=3).fixed_variance
    spread = deviation.var(axis=0)
    with np.errstate(invalid="ignore", divide="ignore"):
        scale = np.where(spread > 0, np.sqrt(fixed / spread), 0.0)
    return trial_part + deviation * scale


def resampled_means(values: np.ndarray, resamples: int, rng: np.random.Generator) -> np.ndarray:
    """Means over trials (axis 0 of `values`, [T, ...]) under `resamples` draws of the trials
    with replacement: [resamples, ...]. The same trial draw applies to every column, so a
    curve (columns = k) stays paired by trial."""
    n = values.shape[0]
    counts = rng.multinomial(n, np.full(n, 1 / n), size=resamples)
    return np.tensordot(counts, values, axes=(1, 0)) / n


# --- correlations ------------------------------------------------------------------------------------


def spearman(x, y) -> float:
    x, y = np.asarray(x, dtype=float), np.asarray(y, dtype=float)
    if np.ptp(x) == 0 or np.ptp(y) == 0:
        return math.nan
    return float(stats.spearmanr(x, y).statistic)


def spearman_rows(x, rows) -> np.ndarray:
    """spearman(x, row) for every row of `rows` [B, K] at once (ranks with ties averaged, then
    Pearson of the ranks, as scipy does): [B], NaN where a row or x is constant. `x` is one
    vector [K] for all rows or one per row [B, K]. For bootstrap draws of a curve and the
    permutations of an exact test, where one scipy call per row is the slow part."""
    x, rows = np.asarray(x, dtype=float), np.asarray(rows, dtype=float)
    rx = stats.rankdata(x, axis=-1)
    r = stats.rankdata(rows, axis=-1)
    rx, r = rx - rx.mean(axis=-1, keepdims=True), r - r.mean(axis=-1, keepdims=True)
    with np.errstate(invalid="ignore", divide="ignore"):
        rho = (r * rx).sum(axis=-1) / np.sqrt((r**2).sum(axis=-1) * (rx**2).sum(axis=-1))
    return np.where((np.ptp(rows, axis=-1) > 0) & (np.ptp(x, axis=-1) > 0), rho, math.nan)


EXACT_MAX_POINTS = 8  # every permutation up to 8! = 40,320; random ones beyond
RANDOM_PERMUTATIONS = 20_000


@functools.cache
def _pairings(n: int) -> np.ndarray:
    """The orders exact_spearman_p permutes n points by: all n! up to EXACT_MAX_POINTS,
    RANDOM_PERMUTATIONS random ones (seed 0) beyond; cached, as every call at that n uses the
    same ones (the calibration makes thousands)."""
    if n <= EXACT_MAX_POINTS:
        orders = np.array(list(itertools.permutations(range(n))))
    else:
        orders = np.random.default_rng(0).permuted(np.tile(np.arange(n), (RANDOM_PERMUTATIONS, 1)), axis=1)
    orders.flags.writeable = False
    return orders


def exact_spearman_p(x, y, alternative: str = "two-sided") -> float:
    """Permutation p of Spearman rho(x, y) over the pairings, as scipy.stats.permutation_test
    gives it (two-sided: twice the smaller tail, at most 1), with every permutation up to
    EXACT_MAX_POINTS points (RANDOM_PERMUTATIONS random ones beyond, p = (1 + hits) / (1 +
    draws)), vectorised: scipy calls spearmanr once per permutation (15 s for 7 points on a
    loaded core, 0.05 s here). scipy's asymptotic p is unreliable at the 4-7 points these
    tables have. The ranks are taken once: a permutation of x permutes its (tie-averaged)
    ranks, so each pairing's rho is the Pearson correlation of the permuted ranks with y's."""
    x, y = np.asarray(x, dtype=float), np.asarray(y, dtype=float)
    if len(x) < 3 or np.ptp(x) == 0 or np.ptp(y) == 0:
        return math.nan
    exact = len(x) <= EXACT_MAX_POINTS
    rx, ry = (r - r.mean() for r in (stats.rankdata(x), stats.rankdata(y)))
    scale = math.sqrt((rx**2).sum() * (ry**2).sum())
    observed = rx @ ry / scale
    null = rx[_pairings(len(x))] @ ry / scale
    tolerance = 1e-12 * max(1.0, abs(observed))
    hits = {"greater": np.sum(null >= observed - tolerance), "less": np.sum(null <= observed + tolerance)}
    tail = {k: (v / len(null) if exact else (1 + v) / (1 + len(null))) for k, v in hits.items()}
    if alternative != "two-sided":
        return float(tail[alternative])
    return float(min(1.0, 2 * min(tail.values())))


def exact_permutation_p(x, y, method: str = "spearman") -> float:
    """Two-sided p of a correlation by permutation of the pairings: exact (every
    permutation) up to EXACT_MAX_POINTS points, RANDOM_PERMUTATIONS random ones beyond.
    Spearman by exact_spearman_p; Pearson by scipy.stats.permutation_test."""
    if method == "spearman":
        return exact_spearman_p(x, y)
    x, y = np.asarray(x, dtype=float), np.asarray(y, dtype=float)
    if len(x) < 3 or np.ptp(x) == 0 or np.ptp(y) == 0:
        return math.nan
    exact = len(x) <= EXACT_MAX_POINTS
    result = stats.permutation_test(
        (x,),
        lambda a: stats.pearsonr(a, y).statistic,
        permutation_type="pairings",
        n_resamples=np.inf if exact else RANDOM_PERMUTATIONS,
        alternative="two-sided",
        rng=0,
    )
    return float(result.pvalue)


def variance_ratio_p(a: np.ndarray, b: np.ndarray) -> float:
    """One-sided F test of H0: var(a) <= var(b) (normal samples; scipy has the F distribution,
    not the test)."""
    a, b = np.asarray(a, dtype=float), np.asarray(b, dtype=float)
    if len(a) < 2 or len(b) < 2:
        return math.nan
    var_b = np.var(b, ddof=1)
    if var_b == 0:
        return 0.0 if np.var(a, ddof=1) > 0 else 1.0
    return float(stats.f.sf(np.var(a, ddof=1) / var_b, len(a) - 1, len(b) - 1))


# --- multiplicity ---------------------------------------------------------------------------------


def holm(pvalues: list[float]) -> list[float]:
    """Holm-adjusted p-values (NaN stays NaN and does not count toward the family size)."""
    p = np.asarray(pvalues, dtype=float)
    adjusted = np.full_like(p, math.nan)
    finite = np.isfinite(p)
    if finite.any():
        adjusted[finite] = multipletests(p[finite], method="holm")[1]
    return adjusted.tolist()


def intersection_union(pvalues: list[float]) -> float:
    """p of "H1 holds at every unit" from the units' own p-values: the largest of them
    (Berger 1982). The intersection-union test rejects the union of the units' nulls only
    when it rejects each one at alpha, and its size is then at most alpha with no
    multiplicity adjustment across the units. A unit without a p (NaN) leaves it NaN:
    "every unit" is not shown by skipping one."""
    p = np.asarray(pvalues, dtype=float)
    return float(p.max()) if len(p) and np.isfinite(p).all() else math.nan
