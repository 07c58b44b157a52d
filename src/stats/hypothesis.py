"""The statistical tests behind every verdict: paired contrasts over trials and eval
examples, equivalence tests, bootstrap intervals, exact permutation p, Holm, and the
number of trials a test would need.

What comes from scipy / statsmodels: t quantiles, the exact permutation test
(scipy.stats.permutation_test), Welch's test (scipy.stats.ttest_ind), Holm
(statsmodels multipletests) and paired / two-sample t power (statsmodels). What is
written here, because neither has it: the paired multi-bootstrap over trials *and*
eval examples (Sellam et al., "The MultiBERTs", ICLR 2022), equivalence and
minimum-effect p from its standard error, and the trials an equivalence test needs.
Each has a test against the textbook case it reduces to (tests/test_inference.py).
"""

from __future__ import annotations

import math
from dataclasses import dataclass

import numpy as np
from scipy import stats
from statsmodels.stats.multitest import multipletests
from statsmodels.stats.power import TTestIndPower, TTestPower

POWER = 0.8  # the planner's default: the usual 80%


# --- the paired multi-bootstrap -----------------------------------------------------------------


def example_weighted_metric(
    metric: str, predictions: np.ndarray, labels: np.ndarray, example_counts: np.ndarray, scores: np.ndarray
) -> np.ndarray:
    """The metric of every trial (rows of `predictions`, [T, N]) under each bootstrap draw's
    example multiplicities (`example_counts`, [B, N]): [B, T]. Accuracy, F1 and MCC (binary)
    are computed from weighted counts, SQuAD F1 as the weighted mean of per-question F1; for
    other metrics (regression correlations) the examples are not resampled and each trial keeps its `scores` value."""
    if metric == "accuracy":
        return example_counts @ (predictions == labels).T.astype(float) / labels.size
    if metric == "squad_f1":  # span QA: the stored predictions are each question's F1, the metric their mean
        return example_counts @ predictions.T.astype(float) / labels.size
    if metric in ("f1", "mcc"):
        positive, truth = (predictions == 1).astype(float), (labels == 1).astype(float)
        tp = example_counts @ (positive * truth).T
        fp = example_counts @ (positive * (1 - truth)).T
        fn = example_counts @ ((1 - positive) * truth).T
        tn = example_counts @ ((1 - positive) * (1 - truth)).T
        with np.errstate(invalid="ignore", divide="ignore"):
            if metric == "f1":
                value = 2 * tp / (2 * tp + fp + fn)
            else:  # sklearn's convention: MCC is 0 when a margin is empty
                value = (tp * tn - fp * fn) / np.sqrt((tp + fp) * (tp + fn) * (tn + fp) * (tn + fn))
        return np.nan_to_num(value, nan=0.0)
    return np.broadcast_to(scores, (example_counts.shape[0], len(scores)))


@dataclass(frozen=True)
class Estimate:
    """A contrast's point estimate, its standard error and the trials behind it."""

    estimate: float
    se: float
    n: int  # trials (the t distribution has n - 1 degrees of freedom)

    @property
    def df(self) -> int:
        return self.n - 1

    def interval(self, level: float = 0.95) -> tuple[float, float]:
        if self.n < 2 or not np.isfinite(self.se):
            return math.nan, math.nan
        half = stats.t.ppf(0.5 + level / 2, self.df) * self.se
        return self.estimate - half, self.estimate + half

    def p_zero(self) -> float:
        """Two-sided p of H0: contrast = 0."""
        if self.n < 2 or not np.isfinite(self.se):
            return math.nan
        if self.se == 0:
            return 0.0 if self.estimate != 0 else 1.0
        return float(2 * stats.t.sf(abs(self.estimate) / self.se, self.df))

    def p_equivalent(self, margin: float) -> float:
        """TOST p of H0: |contrast| >= margin (small p: within the margin)."""
        if self.n < 2 or not np.isfinite(self.se):
            return math.nan
        if self.se == 0:
            return 0.0 if abs(self.estimate) < margin else 1.0
        lower = stats.t.sf((self.estimate + margin) / self.se, self.df)
        upper = stats.t.cdf((self.estimate - margin) / self.se, self.df)
        return float(max(lower, upper))

    def p_beyond(self, margin: float) -> float:
        """p of H0: |contrast| <= margin (small p: an effect larger than the margin)."""
        if self.n < 2 or not np.isfinite(self.se):
            return math.nan
        if self.se == 0:
            return 0.0 if abs(self.estimate) > margin else 1.0
        return float(stats.t.sf((abs(self.estimate) - margin) / self.se, self.df))

    @property
    def trial_sd(self) -> float:
        """The per-trial standard deviation this SE implies (for planning trials)."""
        return self.se * math.sqrt(self.n)


def paired_contrast(
    terms: list[tuple[float, np.ndarray, np.ndarray]], labels: np.ndarray, metric: str, resamples: int, seed: int
) -> Estimate:
    """sum_i w_i * mean over trials of metric(run of condition i), paired by trial.

    `terms`: (weight, predictions [T, N], scores [T]) per condition, rows in the same trial
    order (trial t of every condition shares its training subset and seeds), columns the
    eval examples. The standard error comes from the paired multi-bootstrap: each draw
    resamples trials and eval examples with replacement, the same draw for every term.
    A bootstrap over T trials has variance (T-1)/T of the textbook one, so the SE is
    scaled by sqrt(T/(T-1)), and intervals use t with T-1 degrees of freedom: with the
    eval examples' variance at zero this is exactly the paired t interval; with it, the
    interval also covers a new draw of eval examples (conservatively: the scaling applies
    to that part too). One trial gives no SE."""
    n_trials = len(terms[0][2])
    estimate = float(sum(weight * np.mean(scores) for weight, _, scores in terms))
    if n_trials < 2:
        return Estimate(estimate, math.nan, n_trials)
    rng = np.random.default_rng(seed)
    trial_counts = rng.multinomial(n_trials, np.full(n_trials, 1 / n_trials), size=resamples)
    example_counts = rng.multinomial(labels.size, np.full(labels.size, 1 / labels.size), size=resamples).astype(float)
    draws = np.zeros(resamples)
    for weight, predictions, scores in terms:
        per_trial = example_weighted_metric(
            metric, predictions, labels, example_counts, np.asarray(scores, dtype=float)
        )
        draws += weight * (per_trial * trial_counts).sum(axis=1) / n_trials
    return Estimate(estimate, float(draws.std(ddof=1) * math.sqrt(n_trials / (n_trials - 1))), n_trials)


# --- percentile bootstrap of a statistic of whole curves -----------------------------------------


@dataclass(frozen=True)
class Bootstrap:
    """A statistic with its bootstrap draws (for k90 and correlations of curves)."""

    estimate: float
    draws: np.ndarray  # NaN where the statistic is undefined in a draw
    n: int  # trials resampled

    def interval(self, level: float = 0.95) -> tuple[float, float]:
        defined = self.draws[np.isfinite(self.draws)]
        if len(defined) == 0:
            return math.nan, math.nan
        low, high = np.quantile(defined, [0.5 - level / 2, 0.5 + level / 2])
        return float(low), float(high)

    @property
    def undefined_share(self) -> float:
        return float(np.mean(~np.isfinite(self.draws)))

    def p_zero(self) -> float:
        """Two-sided bootstrap p of H0: statistic = 0 (twice the smaller tail at 0, ties counted in both)."""
        defined = self.draws[np.isfinite(self.draws)]
        if len(defined) == 0:
            return math.nan
        return float(min(1.0, 2 * min(np.mean(defined <= 0), np.mean(defined >= 0))))

    def p_equivalent(self, margin: float) -> float:
        defined = self.draws[np.isfinite(self.draws)]
        return float(max(np.mean(defined >= margin), np.mean(defined <= -margin))) if len(defined) else math.nan

    def p_beyond(self, margin: float) -> float:
        defined = self.draws[np.isfinite(self.draws)]
        return float(np.mean(np.abs(defined) <= margin)) if len(defined) else math.nan


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


def exact_permutation_p(x, y, method: str = "spearman") -> float:
    """Two-sided p of a correlation by permutation of the pairings: exact (every
    permutation) up to 8 points, 20,000 random permutations beyond. scipy's asymptotic p
    is unreliable at the 4-7 points these tables have."""
    x, y = np.asarray(x, dtype=float), np.asarray(y, dtype=float)
    if len(x) < 3 or np.ptp(x) == 0 or np.ptp(y) == 0:
        return math.nan
    statistic = (
        (lambda a: stats.spearmanr(a, y).statistic)
        if method == "spearman"
        else (lambda a: stats.pearsonr(a, y).statistic)
    )
    exact = math.factorial(len(x)) <= 40_320
    result = stats.permutation_test(
        (x,),
        statistic,
        permutation_type="pairings",
        n_resamples=np.inf if exact else 20_000,
        alternative="two-sided",
        rng=0,
    )
    return float(result.pvalue)


# --- multiplicity and planning ------------------------------------------------------------------------


def holm(pvalues: list[float]) -> list[float]:
    """Holm-adjusted p-values (NaN stays NaN and does not count toward the family size)."""
    p = np.asarray(pvalues, dtype=float)
    adjusted = np.full_like(p, math.nan)
    finite = np.isfinite(p)
    if finite.any():
        adjusted[finite] = multipletests(p[finite], method="holm")[1]
    return adjusted.tolist()


def trials_for_difference(effect: float, trial_sd: float, alpha: float, power: float = POWER) -> int | None:
    """Trials a paired t test at `alpha` needs to detect `effect` with `power`, if the
    per-trial SD stays `trial_sd`. None when the observed effect is 0."""
    if not (np.isfinite(effect) and np.isfinite(trial_sd)) or effect == 0:
        return None
    if trial_sd == 0:
        return 2
    n = TTestPower().solve_power(effect_size=abs(effect) / trial_sd, alpha=alpha, power=power, alternative="two-sided")
    return max(2, math.ceil(n))


def trials_for_equivalence(
    effect: float, trial_sd: float, margin: float, alpha: float, power: float = POWER
) -> int | None:
    """Trials a TOST at `alpha` needs to show |contrast| < margin with `power`, if the true
    contrast is the observed `effect` and the per-trial SD stays `trial_sd` (Julious 2004:
    the smallest n with (margin - |effect|) / (sd / sqrt n) >= t(1-alpha) + t(1-beta),
    t(1 - beta/2) when the effect is 0). None when |effect| >= margin: no number of
    trials shows equivalence if the effect is what was observed."""
    if not (np.isfinite(effect) and np.isfinite(trial_sd)) or abs(effect) >= margin:
        return None
    beta = (1 - power) / 2 if effect == 0 else 1 - power
    for n in range(2, 100_001):
        if (margin - abs(effect)) * math.sqrt(n) / max(trial_sd, 1e-12) >= stats.t.ppf(1 - alpha, n - 1) + stats.t.ppf(
            1 - beta, n - 1
        ):
            return n
    return None


def trials_for_two_samples(effect: float, sd: float, alpha: float, power: float = POWER) -> int | None:
    """Trials per group a two-sample t test at `alpha` needs to detect `effect` with `power`."""
    if not (np.isfinite(effect) and np.isfinite(sd)) or effect == 0:
        return None
    if sd == 0:
        return 2
    return max(
        2,
        math.ceil(
            TTestIndPower().solve_power(effect_size=abs(effect) / sd, alpha=alpha, power=power, alternative="two-sided")
        ),
    )
