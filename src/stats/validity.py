"""Which designs can decide: the validity rule the report applies before a test may give a
verdict, as the calibration simulation (tools/calibrate, docs/calibration.md) measured it.

tests/unit/stats/test_calibration.py re-measures every cell this rule says yes to."""

from __future__ import annotations

MEASURED_TRIALS = (3, 5, 10)  # the trial counts the simulation measured each test type at


ESTIMATE_TESTS = ("difference", "one-sided", "equivalence", "beyond")


TEST_TYPES = (*ESTIMATE_TESTS, "bootstrap-difference", "bootstrap", "welch", "spearman-margin")

# Test types that need more trials than the fewest measured (for "spearman-margin", trials are the pairs of
# the correlation), and what fewer do to them, as measured (spearman_margin_table, docs/calibration.md)
MIN_TRIALS = {
    "spearman-margin": (
        4,
        "the test of a Spearman rho against a margin by its simulated null is measured from 4 pairs (3 give rho "
        "four values)",
    ),
}


# The levels of each factor (subsets, draws) a test that reads a crossed seed_design needs, and what
# fewer do to it, as measured (decidable's docstring, docs/calibration.md)
CROSSED_LEVELS = {
    **dict.fromkeys(ESTIMATE_TESTS, (3, "a factor with 2 levels leaves its variance 1 df")),
    "bootstrap-difference": (
        4,
        "the pigeonhole bootstrap under-covers with 3 levels of the factor that dominates the spread and many "
        "of the other (k90 difference at 3 x 8: size 0.077, coverage 0.916)",
    ),
}


# Test types whose size is measured at alpha = 0.05 only: a percentile-bootstrap p is at least 1 / (B + 1), and the
# replicates measured cannot resolve a rate near the report's Holm levels (docs/calibration.md). A test of such a
# type decides nothing at a Holm level: it enters no Holm family.
ALPHA_ONLY = ("bootstrap-difference",)


def crossed_levels(test_types) -> int:
    """The levels of each factor a crossed seed_design needs for tests of every type in
    `test_types` to decide (the planner grows a design to it)."""
    return max(
        (CROSSED_LEVELS[t][0] for t in test_types if t in CROSSED_LEVELS), default=CROSSED_LEVELS["difference"][0]
    )


def decidable(test_type: str, n_trials: int, design: tuple[int, int] | None = None) -> tuple[bool, str]:
    """Whether a test of `test_type` holds its calibration with `n_trials` trials, as measured
    (tests/unit/stats/test_calibration.py re-measures the cells this says yes to), and if not why.
    Nothing here reads the sample beyond its design: no rule is opened by an estimate from the runs
    it rules on.

    - Estimate-based tests (ESTIMATE_TESTS; hypothesis.Estimate: the t test on the trials' T - 1 df) hold
      from 3 trials, at 0.05 and at the report's smallest Holm level, without collapses and with
      near-collapses alike in both conditions (T = 3, 5: one-sided size <= 0.048 at 0.05, <= 0.0006 at
      0.05/53, 20,000 replicates; docs/calibration.md). They
      keep every run, and where one condition's runs collapse more often than the other's they do
      not hold at any T measured (one-sided size 0.49 / 0.33 / 0.11 at 0.05 at T = 3 / 5 / 10 with
      a collapse rate of 0.2, up to 0.14 at the Holm level; docs/calibration.md): the sample may miss
      every collapse. No rule here refuses them for it, since the design alone cannot tell and no rule
      may read the sample's own collapses; "A beats B" of two conditions is tested as a hurdle instead
      (collapse rates | trained runs' contrast, src/stats/collapse.py), which holds its size at both levels
      from 3 trials (docs/calibration.md), and each contrast reports its conditions' collapse rates.
    - "bootstrap-difference": the percentile bootstrap of a difference of two like curve
      statistics (k90, rho against the probe, the steepest step, at two sizes) tested at 0,
      where the null makes the two exchangeable, with both curves (and the probe) scored on one
      eval set and drawn with the same eval draws, as the report does: holds size and coverage
      from 3 trials (size <= 0.043, coverage >= 0.950 over the four nulls at T = 3, 5, 10 with
      400 replicates; docs/calibration.md), the collapse null included (the smaller size's
      k = 0 and 1 collapse in 20% of trials: size <= 0.007), so no collapse rule applies to them.
      When each size had its own eval set and its own draws, the difference of rho
      under-covered below 10 trials (0.905 at T = 3).
    - "bootstrap": a percentile-bootstrap curve statistic against a fixed value or margin
      (rho of a curve against the probe curve, k90 against a threshold, the probe-vs-finetuning
      maxima and k90s): its interval under-covers under some null at every T measured (rho vs
      probe 0.86-0.91 example-dominated; max(curve) - max(probe) 0.81 and k90(probe) - k90(curve)
      0.90 trial-dominated at T = 10; k90 0.83-0.87 at T = 3-5), so no T here decides it.
    - "welch": Welch's test holds from 3 trials per group.
    - "spearman-margin": a Spearman rho against a margin, its p the share of a simulated null at the boundary
      (population rho = the margin, Gaussian copula; correlation.spearman_above) at or beyond the observed rho:
      exact under that copula at any number of pairs up to the simulation's resolution, measured from 4 pairs
      (MIN_TRIALS; docs/calibration.md). Fisher's z with Bonett & Wright's variance, which it replaced, exceeded
      its size below 15 pairs (1.2x nominal at the Holm level at Table 1's 10).
    - An estimate test on a crossed seed_design (`design` = (subsets, draws)) decides with at least
      3 of each (CROSSED_LEVELS): its df are min(subsets, draws) - 1, so with 2 levels of a factor it
      holds its size on 1 df but its intervals are 5-6x the oracle (crossed_table).
    - A "bootstrap-difference" on a crossed seed_design, its draws resampling subsets and draws
      (hypothesis.curve_draws' `design`), holds from 4 of each (crossed_curve_table,
      docs/calibration.md): the k90 difference, the binding statistic, has size <= 0.040 and
      coverage >= 0.960 at 4 x 4 (every null), 4 x 8 subset- and 8 x 4 draws-dominated (the
      dominant factor at 4 levels, the other at 8; 800 replicates). With 3 levels of the
      dominant factor it holds at 3 x 3 to 3 x 5 but degrades as the other factor grows (the
      bootstrap shrinks the dominant factor's variance by (S-1)/S, which the interaction's
      overcount no longer makes up): 3 x 8 subset-dominated size 0.077, coverage 0.916 with 800
      replicates. With 2 levels, which the pigeonhole bootstrap can only draw 3 ways, its size
      is 0.11-0.18."""
    if test_type not in TEST_TYPES:
        raise ValueError(f"unknown test type {test_type!r}; known: {', '.join(TEST_TYPES)}")
    if n_trials < min(MEASURED_TRIALS):
        return (
            False,
            f"the design cannot decide at T = {n_trials}: calibration is measured from {min(MEASURED_TRIALS)} trials",
        )
    floor, fewer = MIN_TRIALS.get(test_type, (0, ""))
    if n_trials < floor:
        return False, f"the design cannot decide at T = {n_trials}: {fewer} (needs >= {floor}; docs/calibration.md)"
    if test_type == "bootstrap":
        return False, (
            f"the design cannot decide at T = {n_trials}: a percentile-bootstrap interval of a curve statistic "
            f"under-covers at every T measured ({', '.join(map(str, MEASURED_TRIALS))}; docs/calibration.md)"
        )
    levels, fewer = CROSSED_LEVELS.get(test_type, (0, ""))
    if design is not None and min(design) < levels:
        return False, (
            f"the design cannot decide with a crossed seed_design of {design[0]} subsets x {design[1]} draws: "
            f"{fewer} (needs >= {levels} of each; docs/calibration.md)"
        )
    return True, ""


def decidable_from(test_type: str) -> int | None:
    """The fewest trials at which decidable() says yes, None when no number of trials makes the
    design decide (a "bootstrap" curve statistic)."""
    floor = max(min(MEASURED_TRIALS), MIN_TRIALS.get(test_type, (0,))[0])
    return floor if decidable(test_type, max(floor, max(MEASURED_TRIALS)))[0] else None
