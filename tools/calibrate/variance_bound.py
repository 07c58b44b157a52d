"""A variance-bound test of an estimate, measured beside the claims' test and rejected (docs/calibration.md, "A
variance-bound test, measured and rejected"): kept here, not in src/, so its tables can be re-measured.

The rule (`BoundedEstimate`, estimator VARIANCE_BOUND in tools/calibrate/estimates.py): a test at level a rejects
where EITHER the claims' t test on the trials' T - 1 df (hypothesis.Estimate) rejects at a/2 OR the variance-bound
test rejects at a/2 (Bonferroni, so the union holds a). The bound test at level c replaces the trial variance by its
chi-square upper confidence limit at c/2, trial_sd^2 * trial_df / chi2.ppf(c/2, trial_df), and compares the
statistic with the t quantile on `fixed_df` (the eval set's N - 1) at c/2: where the trial variance is underestimated
it is so with chance <= c/2, and otherwise the statistic's tail is that of the eval set's df, so it holds c. It was
meant to recover the eval set's df where the eval set dominates the variance. It does not: the trials' part of the
SE carries the trial x example interaction (max(MS_T, MS_TE)/(T N)), which MS_T estimates on T - 1 df, and the
chi-square limit multiplies it by 79 / 12 / 4 at T = 3 / 5 / 10 at level 0.025, so its p never beat the t test's
and the union is the t test at half the level: lower power in all 27 cells of the power table.
"""

from __future__ import annotations

import math
from dataclasses import dataclass

import numpy as np
from scipy import stats

from src.stats import hypothesis

BISECTIONS = 60  # halvings of log(level) in (LOWEST_LEVEL, 1]: the bound test's p to a relative 1e-15
LOWEST_LEVEL = 1e-300


@dataclass(frozen=True)
class BoundedEstimate(hypothesis.Estimate):
    """hypothesis.Estimate with the eval set's df `fixed_df` (N - 1; NaN: no eval-set part, the t test on `df`
    alone), every p and interval from the combined rule above, vectorised over a batch as Estimate is. The bound
    test's rejection region shrinks monotonically as its level c falls (the variance bound grows and the quantile
    with it), so its p, the smallest c at which it rejects, is found by bisection on log(c)."""

    fixed_df: float = math.nan

    @property
    def _bounded(self) -> np.ndarray:
        """Where the variance-bound test joins the t test (an eval-set part on finite df, a trial part)."""
        return (
            np.isfinite(self.fixed_df)
            & (np.asarray(self.fixed_se, dtype=float) > 0)
            & np.isfinite(self.trial_sd)
            & (np.asarray(self.trial_df, dtype=float) > 0)
        )

    def _bound_se(self, level) -> np.ndarray:
        """The SE with the trial variance at its chi-square upper confidence limit at level/2."""
        with np.errstate(invalid="ignore", divide="ignore"):
            upper = np.square(self.trial_sd) * self.trial_df / stats.chi2.ppf(level / 2, self.trial_df)
        return np.sqrt(upper / self.n + np.square(self.fixed_se))

    def _bound_p(self, tail) -> np.ndarray:
        """The variance-bound test's p: the smallest level c whose test rejects, tail(SE at c, fixed_df) < c/2,
        by vectorised bisection on log(c); 1 where even c = 1 does not reject."""
        fields = (self.estimate, self.se, self.n, self.trial_sd, self.trial_df, self.fixed_se, self.fixed_df)
        shape = np.broadcast(*fields).shape

        def rejects(log_level: np.ndarray) -> np.ndarray:
            level = np.exp(log_level)
            with np.errstate(invalid="ignore", divide="ignore"):
                return np.asarray(tail(self._bound_se(level), self.fixed_df) < level / 2)

        low, high = np.full(shape, math.log(LOWEST_LEVEL)), np.zeros(shape)  # rejects(high) where any level does
        for _ in range(BISECTIONS):
            middle = (low + high) / 2
            inside = rejects(middle)
            low, high = np.where(inside, low, middle), np.where(inside, middle, high)
        return np.where(rejects(np.zeros(shape)), np.exp(high), 1.0)

    def _combined_p(self, tail, degenerate) -> np.ndarray:
        """The rule's p from tail(se, df), the t statistic's p at that standard error and df: the t test's p on
        `df`, or where the bound test joins it twice the smaller of the two p's (at most 1). Where se is 0 the p
        is 0 if `degenerate` holds, else 1; NaN without a test (fewer than 2 trials, or no finite SE)."""
        se = np.asarray(self.se, dtype=float)
        bounded = self._bounded
        with np.errstate(invalid="ignore", divide="ignore"):
            p = tail(se, self.df)
            if np.any(bounded):
                p = np.where(bounded, np.minimum(1.0, 2 * np.minimum(p, self._bound_p(tail))), p)
            p = np.where(se > 0, p, np.where(degenerate, 0.0, 1.0))
        return np.where((self.n >= 2) & np.isfinite(se), p, math.nan)

    def interval(self, level: float = 0.95) -> tuple[float, float]:
        """The shifts the rule's two-sided test at 1 - level does not reject: the t interval at
        1 - (1 - level)/2, intersected where the bound test joins with the bound interval at the same split (its
        chi-square limit and t quantile each at (1 - level)/8); the t interval at `level` where it does not. So
        the interval at 1 - 2a clears 0 exactly where p_greater() < a."""
        se = np.asarray(self.se, dtype=float)
        bounded = self._bounded
        side = (1 - level) / 2
        with np.errstate(invalid="ignore"):
            half = np.where(bounded, stats.t.ppf(1 - side / 2, self.df), stats.t.ppf(1 - side, self.df)) * se
            if np.any(bounded):
                bound = stats.t.ppf(1 - side / 4, self.fixed_df) * self._bound_se(side / 2)
                half = np.where(bounded, np.minimum(half, bound), half)
            half = np.where(se > 0, half, 0.0)
        half = np.where((self.n >= 2) & np.isfinite(se), half, math.nan)
        return self.estimate - half, self.estimate + half

    def p_zero(self) -> float:
        """Two-sided: twice the smaller one-sided p (at most 1)."""
        return np.minimum(1.0, 2 * np.minimum(self.p_greater(), self.p_less()))  # type: ignore[return-value]

    def p_greater(self, bound: float = 0.0) -> float:
        distance = np.asarray(self.estimate) - bound
        return self._combined_p(lambda se, df: stats.t.sf(distance / se, df), distance > 0)  # type: ignore[return-value]

    def p_equivalent(self, margin: float) -> float:
        """TOST: the larger of the one-sided p's at -margin and +margin."""
        return np.maximum(self.p_greater(-margin), self.p_less(margin))  # type: ignore[return-value]

    def p_beyond(self, margin: float) -> float:
        far = np.abs(self.estimate)
        return self._combined_p(  # type: ignore[return-value]
            lambda se, df: stats.t.sf((far - margin) / se, df) + stats.t.cdf((-far - margin) / se, df), far > margin
        )
