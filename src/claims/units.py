"""One test of one claim on one unit (Unit), and the builders every claim shares: paired
contrasts of conditions, bootstrap statistics, per-trial slopes, Welch, exact and F tests.

Each unit carries two one-sided p-values: `p_for` (H0: the claim fails at this unit) and
`p_against` (H0: the claim holds at this unit), so src/claims/verdicts.py can combine
them by the claim's logic. A unit with `refused` set has no p-values and says why.

Every statistic (one-sided, equivalence and minimum-effect p's, bootstrap p's, the F test,
Spearman's exact p) is defined once, in src/stats/hypothesis.py; this module only picks which
one tests which claim. What a unit is built from: src/claims/evidence.py (runs and predictions)
and src/claims/curves.py (curves over k and probe curves).
"""

from __future__ import annotations

import math
from collections.abc import Iterable
from dataclasses import dataclass, field, replace
from enum import Enum
from typing import NamedTuple

import numpy as np

from src.claims.evidence import (
    DEGRADE_GAP,
    Evidence,
    common_trials,
    readable_design,
    runs_flagged,
    scores_of,
    studies_of,
)
from src.stats import hypothesis, validity
from src.stats.collapse import (
    HURDLE_PARTS,
    CollapseComparison,
    CollapseRate,
    Hurdle,
    collapse_rate,
    compare_collapse,
    hurdle,
)
from src.stats.hypothesis import Bootstrap, Estimate
from src.tasks.metrics import example_metric


class Refusal(Enum):
    """Why a unit gives no verdict, as a kind; each value is what the report's rule says of it (verdicts.RULE names
    them in this order)."""

    DESIGN = (
        "its test does not hold its measured calibration (size and coverage by simulation, docs/calibration.md) at "
        "its number of trials or its crossed seed_design (src/stats/validity.py)"
    )
    UNDEFINED_DRAWS = "more of its bootstrap draws are undefined than report.max_undefined_share"
    ONE_PROBE_SEED = "its probe curve comes from one probe seed, so the probe's own noise is unmeasured"
    CROSSED_TRIALS = "its test takes the trials as independent where they come from a crossed seed_design"
    TOO_FEW = "the test does not exist at its n (fewer than 2 runs on a side, fewer than 3 points)"
    ONE_RUN_PER_CELL = "an analysis of variance with one run per cell has no residual variance"
    CHANCE_UNKNOWN = "the chance level needs the eval labels, which are missing"
    OUT_OF_SCOPE = (
        "it lies outside the paper's scope: the paper states the claim for other tasks or data regimes "
        "(plentiful data: 5,000 examples and up)"
    )
    CROSSED_COLLAPSE = (
        "a run of its crossed seed_design (nearly) collapsed: the test of its trained runs needs every subset × "
        "draw cell trained, and the exact test of collapses takes the trials as independent"
    )
    COLLAPSED_CURVE = (
        "a curve it compares holds a (nearly) collapsed or degraded run: a percentile bootstrap of a curve statistic "
        "over a few trials is not calibrated on such a mixture, and its collapses are no outcome it can test"
    )
    HURDLE_DISAGREES = (
        "its two parts point opposite ways, each significant at α / 2 (the collapses favour the contrast, its "
        "trained runs' contrast goes against it, or the reverse)"
    )


@dataclass(frozen=True)
class Refused:
    """A unit's refusal: its kind, and its reason in the unit's own terms (printed in the report)."""

    kind: Refusal
    reason: str


class Spread(NamedTuple):
    """A Welch unit's result: the pooled SD of its two samples, which the planner reads
    (hypothesis.trials_for_two_samples)."""

    sd: float


@dataclass(frozen=True, eq=False)  # compared and hashed by identity: a unit is one test
class Unit:
    """One test of one claim on one unit (a task and size, a layer, a pair of conditions), as its builder returns
    it: a builder constructs it with its values, or takes a changed copy (dataclasses.replace; refuse)."""

    claim: str
    name: str  # e.g. "rt_sentiment n=256"
    test: str  # what is tested, e.g. "full − scratch > 0 (paired t)"
    estimate: float
    interval: tuple[float, float]  # 95%; NaN where none is printed (`interval_note` says why)
    n: int | tuple[int, int]  # trials (or (n_a, n_b), or points)
    p_for: float = math.nan
    p_against: float = math.nan
    result: Estimate | Bootstrap | Spread | None = None  # the statistic behind it (for the planner)
    margin: float | None = None
    shape: str = "greater"  # greater | within | below | above (contrasts): how the planner reads it
    gaps: tuple[tuple[str, int], ...] = ()  # (task, size) whose full-vs-scratch gap the unit needs
    studies: tuple[str, ...] = ()  # studies that report the unit's runs (for the planner's command)
    notes: tuple[str, ...] = ()
    refused: Refused | None = None  # why no verdict comes from this unit
    interval_note: str = ""
    raw: bool = False  # its p comes from an exact test or a table the bootstrap does not cover
    key: tuple = ()  # full_beats_scratch: its (task, size), the gap other units look up
    reads: tuple[
        tuple[str, int], ...
    ] = ()  # every (task, size) whose runs it reads (the training-length check: src/claims/training.py)
    test_type: str = ""  # its validity.TEST_TYPES entry ("" for exact tests: no calibration needed)
    reads_seed_design: bool = False  # its variance reads a crossed seed_design (paired contrasts and curve draws do)
    collapse: dict[str, CollapseRate] = field(
        default_factory=dict
    )  # slug -> CollapseRate over its common trials (contrasts)
    collapse_comparison: CollapseComparison | None = None  # two conditions' rates compared (two-term contrasts)
    robustness: Robustness | None = None  # its p's under the trial-only t and with collapsed runs excluded (contrasts)
    hurdle: Hurdle | None = None  # a contrast tested as a hurdle (hurdle_reading): its two parts, its p's from them

    def noted(self, *notes: str) -> Unit:
        """A copy with `notes` after its own."""
        return replace(self, notes=(*self.notes, *notes))


def refuse(unit: Unit, kind: Refusal, reason: str) -> Unit:
    """A copy of `unit` with no verdict: refused as `kind`, `reason` its refusal's words and its interval's note;
    no interval, no p."""
    nan = math.nan
    return replace(
        unit, refused=Refused(kind, reason), interval_note=reason, interval=(nan, nan), p_for=nan, p_against=nan
    )


def design_refusal(unit: Unit, test_type: str, n_trials: int, design: tuple[int, int] | None = None) -> Unit:
    """A copy of `unit` tested as `test_type`, refused (no interval, no p) where validity.decidable says that test
    does not hold its calibration at `n_trials` trials ("the design cannot decide at T = n: <reason>")."""
    ok, reason = validity.decidable(test_type, n_trials, design=design)
    unit = replace(unit, test_type=test_type)
    return unit if ok else refuse(unit, Refusal.DESIGN, reason)


# --- unit builders --------------------------------------------------------------------------------------------


def collapse_flags(ev: Evidence, task: str, size: int, slugs: list[str]) -> tuple[dict[str, np.ndarray], int]:
    """Per trial that every one of `slugs` finished (common_trials), whether each one's run counts in its
    condition's collapse outcome: (nearly) collapsed, or degraded against the unit's typical run
    (evidence.runs_flagged); and how many runs degraded without (nearly) collapsing."""
    trials = common_trials(ev, task, size, slugs)[0]
    runs = [[ev.condition_runs(task, size, slug).first[t] for t in trials] for slug in slugs]
    flags = runs_flagged(
        [[r.collapsed for r in row] for row in runs], [[r.majority_share for r in row] for row in runs]
    )
    degraded = int(flags.sum()) - sum(r.nearly_collapsed for row in runs for r in row)
    return dict(zip(slugs, flags.reshape(len(slugs), len(trials)))), degraded


DEGRADED_NOTE = (
    "{} degraded run(s) (one class for at least {:.2f} more of the eval set than the unit's median run or its "
    "condition's lower quartile, below the near-collapse flag) counted in the collapse rates"
)


def paired_estimate(
    ev: Evidence,
    task: str,
    size: int,
    weights: dict[str, float],
    excluded: np.ndarray | None = None,
    trials_only: bool = False,
) -> tuple[Estimate, list[str], tuple[int, int] | None]:
    """sum_slug weight * mean score, paired by trial, with the crossed trials x eval examples
    variance (trials only where a run's predictions are missing, or with `trials_only`; subsets x
    draws x examples for a crossed seed_design), its notes and the seed design it read. Every finished
    run counts, (nearly) collapsed ones included; `excluded` (one boolean per common trial: the trials where a
    condition's run (nearly) collapsed, for the hurdle's trained part and the robustness reading) leaves those
    trials out."""
    slugs = list(weights)
    trials, notes = common_trials(ev, task, size, slugs)
    if excluded is not None:
        trials = [t for t, drop in zip(trials, excluded, strict=True) if not drop]
    design = readable_design(ev, task, size, slugs, trials)
    if isinstance(design, str):
        return Estimate(math.nan, math.nan, 0), [*notes, design], None
    if not trials:
        return Estimate(math.nan, math.nan, 0), notes, design
    metric, labels = ev.metric(task), np.asarray(ev.labels.get(task, np.zeros(1)))
    scored = [(w, *scores_of(ev, task, size, slug, trials)) for slug, w in weights.items()]
    terms = [(w, predictions, s) for w, predictions, s in scored if predictions is not None]
    if trials_only or len(terms) < len(scored):
        metric, terms = "trials only", [(w, np.zeros((len(trials), labels.size)), s) for w, _, s in scored]
        notes = notes + ["trials only" + ("" if trials_only else " (no per-example predictions)")]
    if design is not None:
        notes = [*notes, f"crossed seed_design: {design[0]} subsets x {design[1]} draws"]
    return hypothesis.paired_contrast(terms, labels, example_metric(metric), design), notes, design


def collapse_outcome(flags: dict[str, np.ndarray]) -> tuple[dict[str, CollapseRate], CollapseComparison | None]:
    """Each condition's (near-)collapse rate (`flags`: collapse_flags) with its exact interval, and for two
    conditions the exact comparison of their rates paired by trial (their runs share the trial's subset and
    seeds; src/stats/collapse.py)."""
    values = list(flags.values())
    comparison = compare_collapse(*values) if len(values) == 2 and len(values[0]) else None
    return {slug: collapse_rate(f) for slug, f in flags.items()}, comparison


# How the report labels a collapse outcome (render's notes column, a decided verdict's row): a run that degraded
# below the flag (evidence.runs_flagged, DEGRADE_GAP) counts with the (nearly) collapsed runs.
COLLAPSE_LABEL = "(near-)collapse rates, runs degraded below the flag counted with them (exact 95%)"


class CollapseOutcome(NamedTuple):
    """One condition's collapse outcome in one unit: `rate` counts its runs on the unit's trials that (nearly)
    collapsed or degraded (evidence.runs_flagged), with the exact 95% interval; a co-primary outcome beside the
    verdict, which is about the trained runs."""

    unit: str
    slug: str
    rate: CollapseRate


def collapse_outcomes(units: Iterable[Unit]) -> tuple[CollapseOutcome, ...]:
    """Every condition's collapse outcome in `units` (contrasts carry them: Unit.collapse), in unit order."""
    return tuple(CollapseOutcome(u.name, slug, rate) for u in units for slug, rate in u.collapse.items())


@dataclass(frozen=True)
class Robustness:
    """A contrast unit's (p_for, p_against) under two sensitivity readings of its runs, never a verdict: the
    paired t over the trials' scores alone (no eval-examples variance) of the runs its test reads, and the other
    selection of its runs (`other_reading`): "collapsed excluded" (the trials where no condition's run (nearly)
    collapsed) beside a hurdle, "all runs" (the mean over every run, collapsed ones included) beside a test of
    the trained runs."""

    trial_only: tuple[float, float]
    other: tuple[float, float]
    other_reading: str

    def text(self) -> str:
        def pair(ps: tuple[float, float]) -> str:
            return "p for {}, against {}".format(*(f"{p:.3g}" if np.isfinite(p) else "n/a (no test)" for p in ps))

        return (
            f"robustness (raw, never the verdict): trial-only t {pair(self.trial_only)}; {self.other_reading} "
            + pair(self.other)
        )


def shape_p(estimate: Estimate, shape: str, margin: float | None) -> tuple[float, float]:
    """(p_for, p_against) of `estimate` by the claim's shape: greater (> 0) | within (|·| < margin) |
    below (< margin: no gain) | above (> −margin: no loss) | beyond (|·| > margin: apart, either way)."""
    if shape == "greater":
        return estimate.p_greater(), estimate.p_less()
    if margin is None:
        raise ValueError(f"a '{shape}' test needs a margin")
    return {
        "within": lambda: (estimate.p_equivalent(margin), estimate.p_beyond(margin)),
        "below": lambda: (estimate.p_less(margin), estimate.p_greater(margin)),
        "above": lambda: (estimate.p_greater(-margin), estimate.p_less(-margin)),
        "beyond": lambda: (estimate.p_beyond(margin), estimate.p_equivalent(margin)),
    }[shape]()


def robustness(
    ev: Evidence,
    task: str,
    size: int,
    weights: dict[str, float],
    other: Estimate,
    other_reading: str,
    excluded: np.ndarray | None = None,
    shape: str = "greater",
    margin: float | None = None,
    shift: float = 0.0,
) -> Robustness:
    """contrast_unit's p's under the trial-only t of the trials its test reads (`excluded`: as paired_estimate's)
    and under `other`, the other selection of its runs (Robustness)."""

    def ps(estimate: Estimate) -> tuple[float, float]:
        return shape_p(replace(estimate, estimate=estimate.estimate - shift), shape, margin)

    trial_only = paired_estimate(ev, task, size, weights, excluded=excluded, trials_only=True)[0]
    return Robustness(ps(trial_only), ps(other), other_reading)


def estimate_unit(claim: str, name: str, test: str, estimate: Estimate, p_for: float, p_against: float, **kw) -> Unit:
    return Unit(
        claim, name, test, estimate.estimate, estimate.interval(0.95), estimate.n, p_for, p_against, estimate, **kw
    )


def contrast_unit(  # noqa: PLR0913
    ev: Evidence,
    claim: str,
    task: str,
    size: int,
    weights: dict[str, float],
    test: str,
    name: str | None = None,
    shape: str = "greater",
    margin: float | None = None,
    gap: bool = False,
    shift: float = 0.0,
) -> Unit:
    """A paired contrast sum_slug weight * score (minus `shift`, e.g. a chance level) at (task, size), with the
    conditions' collapse outcome and its Robustness. shape: as shape_p. Every run counts in one of two outcomes:
    whether it (nearly) collapsed or degraded (evidence.runs_flagged: a run whose majority share stands out from the
    unit's typical run, below any fixed threshold), and, where no condition's run did, the trained runs' score. The
    estimand is therefore the trained runs' contrast with each condition's collapse rate beside, not the mean over
    all runs: where a condition's runs degrade and its other runs compensate, the mean over all runs can be equal
    while the trained runs differ, and a sample of a few trials often holds no degraded run at all
    (docs/calibration.md measures both). A contrast "> 0" of
    conditions on independent trials whose weights sum to 0 ("A − B > 0", a second difference) is a hurdle of the
    two (hurdle_reading); every other contrast on independent trials (a margin, a chance level) tests its trained
    runs (trained_reading), its conditions' collapse rates reported beside; a crossed seed_design's contrast is
    tested where every one of its runs trained (its trained runs are then all its runs) and gives no verdict where
    one (nearly) collapsed."""
    mixture, notes, design = paired_estimate(ev, task, size, weights)
    flags, degraded = collapse_flags(ev, task, size, list(weights))
    notes += [DEGRADED_NOTE.format(degraded, DEGRADE_GAP)] if degraded else []
    rates, comparison = collapse_outcome(flags)
    excluded = np.any(list(flags.values()), axis=0)
    trained = paired_estimate(ev, task, size, weights, excluded=excluded)[0]
    zero_sum = len(weights) >= 2 and abs(sum(weights.values())) < 1e-9
    as_hurdle = shape == "greater" and not shift and zero_sum and design is None
    on_trained = design is None and not as_hurdle
    tested = trained if on_trained else mixture
    other, other_reading, other_excluded = (
        (mixture, "all runs", excluded) if on_trained else (trained, "collapsed excluded", None)
    )
    unit = estimate_test_unit(
        claim,
        name or f"{task} n={size}",
        test,
        replace(tested, estimate=tested.estimate - shift),
        shape,
        margin,
        design,
        trials=mixture.n,
        gaps=((task, size),) if gap else (),
        studies=studies_of(ev, task, size, weights),
        notes=tuple(notes),
        key=(task, size),
        reads=((task, size),),
        reads_seed_design=True,
        collapse=rates,
        collapse_comparison=comparison,
        robustness=robustness(ev, task, size, weights, other, other_reading, other_excluded, shape, margin, shift),
    )
    if unit.refused:
        return unit
    if as_hurdle:
        return hurdle_reading(unit, flags, weights, trained, ev.settings.alpha)
    if on_trained:
        return trained_reading(unit, flags, trained.n)
    if excluded.any():  # a crossed seed_design
        return refuse(
            unit,
            Refusal.CROSSED_COLLAPSE,
            f"{CROSSED_COLLAPSE} ({int(excluded.sum())} of {excluded.size} trials): its test of the trained runs "
            "needs every subset x draw cell trained, and the exact test of collapses takes trials as independent",
        )
    return unit


CROSSED_COLLAPSE = "(nearly) collapsed runs in a crossed seed_design"


def in_collapse_rates(notes: Iterable[str]) -> tuple[str, ...]:
    """common_trials' notes for a unit whose (nearly) collapsed runs count in their conditions' collapse rates
    rather than in a mean of scores (a hurdle, a trained runs' test)."""
    return tuple(note.replace(" kept", " counted in the collapse rates") for note in notes)


FEW_TRAINED = "fewer than 2 trials where no run collapsed: the trained runs' contrast has no test"


TRAINED_NOTE = (
    "trained runs: the trials where no condition's run (nearly) collapsed or degraded (a reformulation: the paper's "
    "claim is of the mean over all runs; the collapse rates are the other outcome)"
)


def trained_reading(unit: Unit, flags: dict[str, np.ndarray], trained: int) -> Unit:
    """`unit`, which tests its trained runs (contrast_unit: a margin or a chance level on independent trials), with
    what it read: a reformulation of the claim to the runs that trained, every (nearly) collapsed run counting in
    its condition's collapse rate instead. The paper's estimand, the mean over all runs, is a mixture that a few
    trials estimate badly where one condition collapses more often (docs/calibration.md): no test of it holds its
    size there, and supporting a claim of no difference over all runs would need the collapse rates shown alike,
    which takes tens of trials. The trained runs' test is valid given which trials it reads (a collapse says
    nothing of a trained run's score); with fewer than 2 of them it has no test (p = 1 both ways). `trained`: the
    trials its test read."""
    slugs = list(flags)
    n = len(flags[slugs[0]])
    what = "in both" if len(slugs) == 2 else f"in all {len(slugs)}" if len(slugs) > 2 else ""
    notes = (*in_collapse_rates(unit.notes), TRAINED_NOTE, f"{trained} of {n} trials trained {what}".rstrip())
    unit = replace(unit, n=n, notes=notes)
    if trained >= 2:
        return unit
    return replace(unit, interval=(math.nan, math.nan), p_for=1.0, p_against=1.0, interval_note=FEW_TRAINED)


HURDLE_NOTE = "hurdle: collapses (exact permutation within trials) and trained runs' contrast, Bonferroni"


def hurdle_reading(
    unit: Unit, flags: dict[str, np.ndarray], weights: dict[str, float], trained: Estimate, alpha: float
) -> Unit:
    """`unit` (a contrast of conditions on independent trials, weights summing to 0, "> 0": "A beats B", a second
    difference) tested as a two-part (hurdle) outcome, so that every run counts in exactly one part: whether it
    (nearly) collapsed (collapsed_runs), the collapses tested by the exact permutation of each trial's collapses
    over its conditions (McNemar's exact test for two), and, on the trials where no condition's run collapsed, the
    trained runs' contrast (its crossed trials x examples test). H0: collapses fall on the conditions alike AND the
    trained runs' contrast is 0; its p's are the parts' Bonferroni where the rate part can reach α, the trained
    part's alone where it cannot (src/stats/collapse.py Hurdle), a reformulation of the claim's contrast of means
    measured in docs/calibration.md. The estimate, interval and planner read the trained runs' contrast (its
    interval at the level its part is tested at). Where the parts point opposite ways, each significant at α / 2,
    the unit gives no verdict and says so. Which trials count in the trained part follows from the runs'
    outcomes, but every run counts in one part: the rate part's test is exact, and the trained part's is valid
    given which trials it reads (under H0 a collapse says nothing of the trained runs' scores)."""
    slugs = list(weights)
    result = hurdle([flags[slug] for slug in slugs], list(weights.values()), shape_p(trained, "greater", None), alpha)
    what = "in both" if len(slugs) == 2 else f"in all {len(slugs)}"
    notes = (
        *in_collapse_rates(unit.notes),
        HURDLE_NOTE,
        f"{trained.n} of {len(flags[slugs[0]])} trials trained {what} (the estimate's)",
        *(
            []
            if result.rate_counts
            else ["too few collapses for their exact test to reach α: the trained part decides"]
        ),
    )
    unit = replace(
        unit,
        estimate=trained.estimate,
        interval=trained.interval(0.95),
        result=trained,
        hurdle=result,
        p_for=float(result.p_greater),
        p_against=float(result.p_less),
        notes=notes,
        interval_note=unit.interval_note if trained.n >= 2 else FEW_TRAINED,
    )
    if result.disagree(alpha):
        positive = " and ".join(slug for slug in slugs if weights[slug] > 0)
        negative = " and ".join(slug for slug in slugs if weights[slug] < 0)
        favour = float(result.rate[0]) < float(result.rate[1])
        return refuse(
            unit,
            Refusal.HURDLE_DISAGREES,
            f"its hurdle's parts disagree: {positive} collapse {'less' if favour else 'more'} often than {negative} "
            f"(weighted by the contrast) and the trained runs' contrast is "
            f"{'positive' if trained.estimate > 0 else 'negative'}, each significant at α / {HURDLE_PARTS}",
        )
    return unit


def refuse_trials_as_independent(unit: Unit, ev: Evidence) -> Unit:
    """Refuse a unit whose test takes its runs' trials as independent (slopes, Welch, curve
    bootstraps that did not read the design, exact tests over trials) when they come from a crossed
    seed_design: there the trials share subsets and draws. Paired contrasts and the differences
    of curve statistics whose draws read the design say so (`reads_seed_design`)."""
    crossed = [s for s in unit.studies if s in ev.studies and ev.studies[s].seed_design is not None]
    if crossed and not unit.reads_seed_design and not unit.refused:
        return refuse(
            unit,
            Refusal.CROSSED_TRIALS,
            f"runs of a crossed seed_design ({', '.join(crossed)}): this test takes the trials as independent, "
            "which they are not; only paired contrasts and differences of curve statistics read the design",
        )
    return unit


def estimate_test_unit(
    claim: str,
    name: str,
    test: str,
    estimate: Estimate,
    shape: str = "greater",
    margin: float | None = None,
    design: tuple[int, int] | None = None,
    trials: int | None = None,
    **kw,
) -> Unit:
    """The unit testing `estimate` by its shape (shape_p), refused where the design (`trials`, by default the
    estimate's n, and its crossed seed `design`) cannot decide."""
    p_for, p_against = shape_p(estimate, shape, margin)
    unit = estimate_unit(claim, name, test, estimate, p_for, p_against, margin=margin, shape=shape, **kw)
    test_type = "equivalence" if shape == "within" else "one-sided"
    return design_refusal(unit, test_type, estimate.n if trials is None else trials, design)


def bootstrap_unit(
    ev: Evidence,
    claim: str,
    name: str,
    test: str,
    estimate: float,
    draws: np.ndarray,
    n: int,
    kind: str,
    design: tuple[int, int] | None = None,
    **kw,
) -> Unit:
    """A percentile-bootstrap statistic, claim "> 0" (or |·| < margin with `margin`). `kind` is its
    calibration test type: "bootstrap-difference" for a difference of two like curve statistics
    tested at 0, "bootstrap" for a curve statistic against a fixed value or margin; `design` the
    crossed seed_design its draws read (curves_design). Refused (printed without an interval or
    p) where validity.decidable says the design cannot decide at n trials, and above
    report.max_undefined_share."""
    s, margin = ev.settings, kw.pop("margin", None)
    boot = Bootstrap(float(estimate), np.asarray(draws, dtype=float), n)
    share = boot.undefined_share
    notes = (*kw.pop("notes", ()), f"undefined draws {share:.1%}")
    unit = Unit(claim, name, test, boot.estimate, boot.interval(0.95), n, result=boot, margin=margin, notes=notes, **kw)
    unit = design_refusal(unit, kind, n, design=design)
    if unit.refused:
        return unit
    if share > s.max_undefined_share:
        return refuse(
            unit,
            Refusal.UNDEFINED_DRAWS,
            f"{share:.1%} of bootstrap draws undefined (allowed ≤ {s.max_undefined_share:.0%})",
        )
    if margin is None:
        return replace(unit, p_for=boot.p_greater(), p_against=boot.p_less())
    return replace(unit, p_for=boot.p_equivalent(margin), p_against=boot.p_beyond(margin))


def refuse_collapsed_curves(unit: Unit, curves) -> Unit:
    """`unit`, a bootstrap difference of curve statistics, refused where one of its `curves` (curves.Curve) holds a
    (nearly) collapsed or degraded run (Curve.flagged): a collapse moves the statistic of one trial's curve by
    far more than its trials' spread, and with 3 to 5 trials a sample often holds none, so the bootstrap
    supported k90_grows_as_data_shrinks in 0.29 of samples at T = 3 where the smaller size's full model collapsed
    at 0.2 (docs/calibration.md). A refusal only lowers the rate of verdicts; the flagged runs are counted in the
    reason."""
    flagged = [c.flagged_runs for c in curves]
    if unit.refused or not any(flagged):
        return unit
    counts = ", ".join(f"{n} of {c.flagged.size}" for n, c in zip(flagged, curves))
    return refuse(
        unit,
        Refusal.COLLAPSED_CURVE,
        f"(nearly) collapsed or degraded runs in the curves it compares ({counts} runs): a bootstrap of a curve "
        "statistic over a few trials is not calibrated on such a mixture",
    )


def welch_unit(claim: str, name: str, test: str, a: np.ndarray, b: np.ndarray, **kw) -> Unit:
    """Welch's two-sample test of mean(a) − mean(b) > 0 on min(n_a, n_b) − 1 df (hypothesis.two_sample), with
    its 95% CI."""
    a, b = np.asarray(a, dtype=float), np.asarray(b, dtype=float)
    estimate = float(np.mean(a) - np.mean(b)) if len(a) and len(b) else math.nan
    sd = math.sqrt((np.var(a, ddof=1) + np.var(b, ddof=1)) / 2) if len(a) > 1 and len(b) > 1 else math.nan
    unit = Unit(claim, name, test, estimate, (math.nan, math.nan), (len(a), len(b)), result=Spread(sd), **kw)
    if len(a) < 2 or len(b) < 2:
        return replace(unit, refused=Refused(Refusal.TOO_FEW, "fewer than 2 runs on a side"))
    unit = design_refusal(unit, "welch", min(len(a), len(b)))
    if unit.refused:
        return unit
    welch = hypothesis.two_sample(a, b)
    return replace(unit, interval=welch.interval(0.95), p_for=welch.p_greater(), p_against=welch.p_less())


def slope_unit(claim: str, name: str, test: str, x, per_trial: np.ndarray, **kw) -> Unit:
    """The OLS slope of each trial's curve (rows of `per_trial`, columns at `x`), and a one-sample
    t test over trials that the mean slope is > 0: a valid test at 2+ trials, where a
    percentile bootstrap of ρ is not, for a quantity measured without an eval set (weight change by
    layer). A slope of scores on an eval set is a paired contrast instead (later_reinit_costs_less), whose
    test counts the eval set's variance, which the trials share and this t leaves out."""
    x = np.asarray(x, dtype=float)
    slopes = np.array([np.polyfit(x, row, 1)[0] for row in np.asarray(per_trial, dtype=float)])
    n = len(slopes)
    se = float(np.std(slopes, ddof=1) / math.sqrt(n)) if n > 1 else math.nan
    sd = float(np.std(slopes, ddof=1)) if n > 1 else math.nan
    estimate = Estimate(float(np.mean(slopes)) if n else math.nan, se, n, n - 1, sd, n - 1)
    unit = estimate_unit(claim, name, test, estimate, estimate.p_greater(), estimate.p_less(), **kw)
    return design_refusal(unit, "one-sided", n)


ONE_PROBE_SEED = (
    "one probe seed: the probe curve's own noise (seed and eval) is unmeasured, so any interval would be too "
    "narrow by an unknown amount; no verdict until several probe seeds run"
)
