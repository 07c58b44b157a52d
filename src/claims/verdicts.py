"""From units to verdicts: the rule (RULE, printed in the report), the Holm family of each paper and the
`dvc exp run -S …` command that adds what a claim needs (the trials planner: planner.py)."""

from __future__ import annotations

import math
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, field, replace
from typing import TypeVar

import numpy as np

from src.claims.claim import PAPERS, Claim, Need, Shared
from src.claims.evidence import DEGRADE_GAP, NEAR_COLLAPSE_SHARE, PLENTIFUL_SIZE, Evidence
from src.claims.planner import Plan, flow, plan_trials, planned_families
from src.claims.registry import CLAIMS
from src.claims.training import TrainingCheck, training_checks, training_of
from src.claims.units import (
    CollapseOutcome,
    Refusal,
    Unit,
    collapse_outcomes,
    refuse_trials_as_independent,
)
from src.config.schema import StudyConfig
from src.schemes.registry import MODIFIERS as STUDY_MODIFIERS
from src.stats import hypothesis, validity
from src.stats.collapse import HURDLE_PARTS
from src.tasks.registry import TASKS

NOT_RUN = "not run"
NO_VERDICT = "no verdict"
PER_CLAIM = "error rate α for this claim alone"  # intersection-union verdicts
FAMILYWISE = "familywise error rate α across its paper's Holm family"  # Holm verdicts
RULE = (
    "Each unit of a claim has two one-sided tests: *for* the claim (H0: it fails there) and *against* it (H0: it "
    "holds there). A universal claim ('at every task and size') is **supported** when every unit's test *for* is "
    "significant at α with no adjustment across its units (an intersection-union test; the claim's p is the "
    "largest, raw); for a claim that needs the full-vs-scratch gap, the gap's own test at each unit is part of "
    "that intersection, so a unit without a shown gap cannot support it. It is **contradicted** when any unit's "
    "test *against* is significant after Holm across its paper's family (the claim's p is the smallest Holm p "
    "against); "
    "no unit is ever left out, whether or not its gap is shown. An existential claim ('some intermediate task', "
    "'certain heads') is **supported** when some unit's test *for* is significant after Holm across its paper's "
    "family "
    "(the claim's p is the smallest Holm p for), and **contradicted** when every unit's test *against* is "
    "significant at α (intersection-union; the claim's p is the largest, raw). **Holm families**: one per paper "
    "(its claims are those whose source is that paper's seed), since a replication report of three papers is read "
    "as three replications, each referee reading one paper's claims; one family across the report would make each "
    "paper's verdicts pay for the other papers' claims. A paper's family holds exactly one one-sided test per unit "
    "of its claims with a p: *against* for universal claims, *for* for existential ones; every other p printed is "
    "raw, and says so. **Error rates**: the verdicts decided by Holm (a universal claim contradicted, an "
    f"existential one supported) each hold a {FAMILYWISE}: under the nulls of their units, the chance that any of that "
    "paper's Holm-decided verdicts is wrong is at most α (docs/calibration.md simulates the whole report under "
    "global nulls, collapses included). The verdicts decided by intersection-union (a universal claim supported, "
    f"an existential one contradicted) hold an {PER_CLAIM}: each is wrong with probability at most α, and with m "
    "of them up to m·α may be wrong. The chance that at least one of a paper's verdicts is wrong is therefore at "
    "most α (its Holm family) plus α per intersection-union verdict its design can reach, capped at 1 (the union "
    "bound the first screen states per paper). **Words**: a claim supported reads **supported here**, one "
    "contradicted **not supported here**, each beside its scope (the model, and the tasks, sizes and trials its "
    "units read): a verdict on this run's design, not on the paper's setting. "
    "Each unit's interval is the one its test *for* reads at α (raw): a one-sided "
    "(1 − α) bound in the claim's direction, the (1 − 2α) two-sided interval for an equivalence (TOST); exact, "
    "F and variance-ratio tests print none. A unit gives **no verdict**, with no interval and no p, where "
    + "; or where ".join(kind.value for kind in Refusal)
    + ". A claim is **inconclusive** when neither verdict holds, **no verdict** when refused units (its own or "
    "the gaps it needs) are all that stands between it and a verdict, and **not run** without units. Runs are "
    "never dropped for their outcome: collapsed runs count; only a non-finite loss removes a run, and it is counted. "
    f"A run that (nearly) collapsed (one class for at least {NEAR_COLLAPSE_SHARE:.0%} of the eval set) is also an "
    "outcome of its own: a contrast reports its conditions' collapse rates (exact intervals, compared paired by "
    "trial). A run that degraded below that flag (its majority share at least "
    f"{DEGRADE_GAP} above the lower of its unit's median and its own condition's lower quartile, over the runs that "
    "did not (nearly) collapse) counts with the collapsed runs: in its condition's collapse rate and in the "
    "hurdle's collapse part, never among the trained runs. The trained-runs tests (the hurdle's trained part and "
    "the trained-runs contrasts below) therefore estimate the typical trained run, a run that neither collapsed "
    "nor degraded, not the mean over all runs. "
    "**Reformulation**: a claim that a contrast of conditions on independent trials is positive (A − B > 0, "
    "a second difference: weights summing to 0) is tested as a two-part (hurdle) outcome, every run counting in "
    "exactly one part: the runs' collapses (the exact permutation of each trial's collapses over its conditions, "
    "McNemar's exact test for two) and, on the trials where no condition's run collapsed, the trained runs' "
    "contrast (the crossed trials × examples test). Its null is 'collapses fall on the conditions alike and the "
    "trained runs' contrast is 0', not 'the mean over all runs is 0'; the contrast is positive where either part "
    "says so: its p is twice the smaller part's (Bonferroni, each part at α / 2) where the collapses' exact test "
    "can reach α (for two conditions, at least 5 discordant trials at α = 0.05), the trained part's alone where it "
    "cannot (Tarone's rule: a test that cannot reach the level costs none of it). Its estimate and interval are "
    "the trained runs' contrast, at the level its part is tested at. At 3 trials the collapses of two conditions "
    "cannot reach α (their smallest one-sided p is 1/8), so a difference in collapse rates alone decides nothing "
    "there; parts that disagree give no verdict. **Reformulation**: the other contrasts on independent trials "
    "(margins, chance levels) test their trained runs (the trials where no condition's run collapsed; no test "
    "below 2 of them), each (nearly) collapsed run counting in its condition's collapse rate: the paper's claim "
    "is of the mean over all runs, which a few trials cannot test with collapses possible. A crossed "
    "seed_design's contrast is tested where all its runs trained, and gives no verdict where one collapsed. "
    "Each contrast's notes give its conditions' collapse "
    "rates and its robustness readings, never a verdict: its p's under the trial-only t, and over the other "
    "selection of its runs (the trained runs beside a hurdle, all runs beside a trained-runs test: the 'collapse "
    "reading'); a decided verdict says whether it survives each, Holm taken again. A bootstrap difference of two "
    "curve statistics is calibrated at α = 0.05 only (a percentile-bootstrap p cannot be measured at the Holm "
    "levels), so it enters no Holm family: it can support a universal claim (at α) but not contradict one, and its "
    "p against is printed raw."
)


def unit_status(unit: Unit, every: bool, alpha: float, ps: tuple[float, float, float]) -> str:
    """for | against | unresolved | no verdict, from the unit's (p_for, p_against, Holm-adjusted p) `ps`."""
    if unit.refused:
        return NO_VERDICT
    p_for, p_against, adjusted = ps
    if (adjusted if every else p_against) < alpha:
        return "against"
    return "for" if (p_for if every else adjusted) < alpha else "unresolved"


def hurdle_parts(unit: Unit) -> int:
    """What a unit's test of its estimate shares α with: a hurdle's trained part is tested at α / 2 where its
    collapse rates can reach α too, at α where they cannot; every other test at α."""
    return HURDLE_PARTS if unit.hurdle is not None and bool(unit.hurdle.rate_counts) else 1


def decision_interval(unit: Unit, alpha: float) -> tuple[float, float]:
    """The interval the unit's test *for* reads at `alpha`: a one-sided (1 − alpha) bound in the
    claim's direction ([low, +∞) for "> 0" and "> −margin", (−∞, high] for "< margin"), the
    (1 − 2 alpha) two-sided interval for an equivalence (TOST), so that its test is significant
    exactly where the interval clears 0 or the margin. Units of other tests keep theirs."""
    result = unit.result
    if unit.refused or not isinstance(result, (hypothesis.Estimate, hypothesis.Bootstrap)):
        return unit.interval
    alpha = alpha / hurdle_parts(unit)
    low, high = result.interval(1 - 2 * alpha)
    shape = unit.shape if isinstance(result, hypothesis.Estimate) else "greater" if unit.margin is None else "within"
    return {"greater": (low, math.inf), "above": (low, math.inf), "below": (-math.inf, high)}.get(shape, (low, high))


@dataclass(frozen=True, eq=False)  # compared and hashed by identity, as its unit
class Judged:
    """A unit as the report judges it: the builder's unit with its interval replaced by the one its test *for*
    reads at α (decision_interval), its Holm-adjusted p (NaN outside its paper's family) and its status."""

    unit: Unit
    adjusted: float
    status: str


@dataclass(frozen=True)
class Scope:
    """What a verdict is a verdict about, besides the report's model: the (task, size) pairs its units read
    (Unit.reads, else the unit's own key) and the trials of its units' tests (Unit.n; an exact test's points are
    not trials)."""

    reads: tuple[tuple[str, int], ...]
    trials: tuple[int, ...]

    def text(self) -> str:
        """E.g. "sst2 n=500, 5000; qnli n=500; 3–6 trials"."""
        sizes: dict[str, list[int]] = {}
        for task, size in self.reads:
            sizes.setdefault(task, []).append(size)
        where = "; ".join(f"{task} n={', '.join(map(str, sorted(set(s))))}" for task, s in sizes.items())
        low, high = (min(self.trials), max(self.trials)) if self.trials else (0, 0)
        trials = f"{low} trials" if low == high else f"{low}–{high} trials"
        return "; ".join(part for part in (where, trials if self.trials else "") if part)


def scope_of(units: Sequence[Judged]) -> Scope:
    """The Scope of a claim's judged units (refused ones too: a verdict reads the design it ran on)."""
    reads = dict.fromkeys(pair for u in units for pair in (u.unit.reads or (u.unit.key,)) if len(pair) == 2)
    trials = {n for u in units if not u.unit.raw for n in (u.unit.n if isinstance(u.unit.n, tuple) else (u.unit.n,))}
    return Scope(tuple(sorted(reads)), tuple(sorted(trials)))


@dataclass(frozen=True)
class Verdict:
    """One claim's verdict: its text (supported | contradicted | inconclusive | no verdict | not run), the p that
    decides it and what that p is, its judged units, the planner (undecided claims), the command that adds its
    runs (not run), the training-length checks of every (task, size) it reads, its scope (the tasks, sizes and
    trials its units read) and what it becomes under each robustness reading (decided claims with a contrast
    unit)."""

    claim: Claim
    text: str
    p: float
    p_label: str  # which p it is, and the error rate the verdict it decides holds
    units: tuple[Judged, ...]
    plan: Plan | None
    needs: str | None
    training: tuple[TrainingCheck, ...]
    scope: Scope
    robust: Mapping[str, str] = field(default_factory=dict)

    @property
    def id(self) -> str:
        return self.claim.id

    @property
    def collapse_rates(self) -> tuple[CollapseOutcome, ...]:
        """Its units' conditions' collapse rates (a co-primary outcome, printed beside the verdict)."""
        return collapse_outcomes(j.unit for j in self.units)


def judge_claims(ev: Evidence, plan: bool = True) -> tuple[list[Verdict], list[Unit]]:
    """Every claim's verdict (with its judged units, the claim's p and, with `plan`, the planner's Plan for an
    undecided one) and every unit. plan=False leaves every Plan None and the verdicts as they are: for callers that
    read the verdicts alone (tools/calibrate's replicates), since the planner's simulations cost as much again."""
    shared, alpha = Shared(ev), ev.settings.alpha
    by_claim = {
        claim.id: [refuse_trials_as_independent(u, ev) for u in claim.build(ev, shared)] if not ev.runs.empty else []
        for claim in CLAIMS
    }
    family = [
        (claim.paper, unit, unit.p_against if claim.every else unit.p_for)
        for claim in CLAIMS
        for unit in by_claim[claim.id]
        if in_holm_family(unit)
    ]
    adjusted = holm_by_paper(family)
    planned = planned_families(CLAIMS, by_claim, in_holm_family) if plan else None
    judged = {
        claim.id: [judge(unit, claim.every, alpha, adjusted.get(unit, math.nan)) for unit in by_claim[claim.id]]
        for claim in CLAIMS
    }
    gaps = {j.unit.key: j for j in judged["full_beats_scratch"]}
    readings = robust_statuses(judged, alpha)
    checks = training_checks(ev)
    verdicts = [verdict(claim, judged[claim.id], gaps, ev, planned, readings, checks) for claim in CLAIMS]
    return verdicts, [u for units in by_claim.values() for u in units]


K = TypeVar("K")


def holm_by_paper(family: Sequence[tuple[str, K, float]]) -> dict[K, float]:
    """Holm-adjusted p of each (paper, key, p) of `family`, Holm taken within each paper's tests (PAPERS): a
    replication report of three papers holds one family per paper, as a referee reads each paper's replication.
    NaN p's stay NaN and do not count toward their family's size."""
    adjusted: dict[K, float] = {}
    for paper in dict.fromkeys(of for of, _, _ in family):
        members = [(key, p) for of, key, p in family if of == paper]
        adjusted |= dict(zip((key for key, _ in members), hypothesis.holm([p for _, p in members])))
    return adjusted


def holm_families(verdicts: Sequence[Verdict]) -> dict[str, int]:
    """The size of each paper's Holm family (PAPERS order): the units of its claims with a Holm-adjusted p."""
    return {
        paper: sum(1 for v in verdicts if v.claim.paper == paper for u in v.units if math.isfinite(u.adjusted))
        for paper in PAPERS
    }


# The refusals that read the design alone (trials, seeds, seed_design, labels), never the runs' outcomes: a unit
# refused so gives no verdict in any replicate of the design. The others (undefined draws, a crossed seed_design's
# collapse, a hurdle's disagreeing parts, too few trained runs) depend on the outcomes.
DESIGN_REFUSALS = frozenset(
    {Refusal.DESIGN, Refusal.ONE_PROBE_SEED, Refusal.CROSSED_TRIALS, Refusal.ONE_RUN_PER_CELL, Refusal.CHANCE_UNKNOWN}
)


def design_refused(unit: Unit | None) -> bool:
    """Whether the design alone keeps `unit` (None: a gap the design lacks) from any verdict (DESIGN_REFUSALS)."""
    return unit is None or (unit.refused is not None and unit.refused.kind in DESIGN_REFUSALS)


@dataclass(frozen=True)
class ErrorBound:
    """The union bound on the chance that at least one of a paper's verdicts is wrong under a global null of the
    run's design (no effect of any condition, layer or probe layer): α for its Holm family where a unit of its
    claims can enter it (holm), plus α per claim whose intersection-union verdict the design can reach (iut)."""

    paper: str
    holm: bool
    iut: tuple[str, ...]
    alpha: float

    @property
    def bound(self) -> float:
        return min(1.0, self.alpha * (int(self.holm) + len(self.iut)))


def error_bounds(verdicts: Sequence[Verdict], alpha: float) -> list[ErrorBound]:
    """Per paper with a claim that ran (PAPERS order), its ErrorBound. A unit can enter the Holm family unless the
    design refuses it or its test is calibrated at α only; a universal claim's intersection-union verdict
    (supported) is reachable where the design refuses none of its units and none of the gaps it needs, an
    existential one's (contradicted) where it refuses none of its units."""
    gaps = {u.unit.key: u.unit for v in verdicts if v.id == "full_beats_scratch" for u in v.units}
    bounds = []
    for paper in PAPERS:
        mine = [v for v in verdicts if v.claim.paper == paper and v.units]
        if not mine:
            continue
        units = [u.unit for v in mine for u in v.units]
        holm = any(not design_refused(u) and u.test_type not in validity.ALPHA_ONLY for u in units)
        iut = tuple(
            v.id
            for v in mine
            if not any(
                design_refused(part)
                for u in v.units
                for part in (u.unit, *(needed_gaps(v.claim, u.unit, gaps) if v.claim.every else ()))
            )
        )
        bounds.append(ErrorBound(paper, holm, iut, alpha))
    return bounds


def in_holm_family(unit: Unit) -> bool:
    """Whether the unit's one test enters its paper's Holm family: it has a p, and its test is calibrated at the
    Holm levels (validity.ALPHA_ONLY: not)."""
    return not unit.refused and unit.test_type not in validity.ALPHA_ONLY


def judge(unit: Unit, every: bool, alpha: float, adjusted: float) -> Judged:
    """`unit` judged at `alpha` with its Holm-adjusted p (NaN outside the family), by its claim's logic (`every`)."""
    status = unit_status(unit, every, alpha, (unit.p_for, unit.p_against, adjusted))
    return Judged(replace(unit, interval=decision_interval(unit, alpha)), adjusted, status)


G = TypeVar("G")


def needed_gaps(claim: Claim, unit: Unit, gaps: Mapping[tuple, G]) -> list[G | None]:
    """The full-vs-scratch units (as `gaps` holds them, by key) `unit` needs shown (None where the progressive
    study has none)."""
    return [gaps.get(g) for g in unit.gaps] if claim.needs_gap else []


def decided_by(text: str, every: bool) -> str:
    """How a verdict is decided: "holm" (a universal claim contradicted, an existential one
    supported) or "iut" (intersection-union: the others, and the p an undecided claim prints)."""
    return "holm" if (text == "contradicted") == every else "iut"


ROBUSTNESS_READINGS = {
    "trial-only t": lambda r: r.trial_only,
    "collapse reading": lambda r: r.other,  # all runs beside a trained-runs test, collapsed excluded beside a hurdle
}


def robust_statuses(judged: dict[str, list[Judged]], alpha: float) -> dict[str, dict[Judged, str]]:
    """Per robustness reading (ROBUSTNESS_READINGS), every unit's status with each contrast unit's p's replaced by
    that reading's (Robustness) and Holm taken again within the same per-paper families: what each verdict would
    be under it."""
    claim_of = {u: claim for claim in CLAIMS for u in judged[claim.id]}
    readings = {}
    for reading, of in ROBUSTNESS_READINGS.items():

        def ps(u: Unit) -> tuple[float, float]:
            return of(u.robustness) if u.robustness is not None else (u.p_for, u.p_against)

        adjusted = holm_by_paper(
            [
                (claim.paper, u, ps(u.unit)[1] if claim.every else ps(u.unit)[0])
                for u, claim in claim_of.items()
                if in_holm_family(u.unit)
            ]
        )
        readings[reading] = {
            u: unit_status(u.unit, claim.every, alpha, (*ps(u.unit), adjusted.get(u, math.nan)))
            for u, claim in claim_of.items()
        }
    return readings


def verdict_text(
    claim: Claim, units: Sequence[Judged], gaps: Mapping[tuple, Judged], status: Callable[[Judged], str]
) -> str:
    """The claim's verdict from its units' statuses (`status`: unit -> its status) and the gaps it needs."""
    gap_units = [g for u in units for g in needed_gaps(claim, u.unit, gaps)]
    statuses = [status(u) for u in units]
    blockers = statuses + [status(g) if g is not None else "missing" for g in gap_units]
    if not units:
        return NOT_RUN
    if claim.every:
        if "against" in statuses:
            return "contradicted"
        if all(s == "for" for s in blockers):
            return "supported"
        if NO_VERDICT in blockers and all(s in ("for", NO_VERDICT) for s in blockers):
            return NO_VERDICT
        return "inconclusive"
    shown = [u for u in units if status(u) == "for"]
    if any(all(g is not None and status(g) == "for" for g in needed_gaps(claim, u.unit, gaps)) for u in shown):
        return "supported"
    if all(s == "against" for s in statuses):
        return "contradicted"
    if NO_VERDICT in statuses and all(s in ("against", NO_VERDICT) for s in statuses):
        return NO_VERDICT
    return "inconclusive"


def verdict(
    claim: Claim,
    units: list[Judged],
    gaps: dict[tuple, Judged],
    ev: Evidence,
    planned: Mapping[str, int] | None,
    readings: dict[str, dict[Judged, str]],
    checks: dict[tuple[str, int], TrainingCheck],
) -> Verdict:
    """The claim's Verdict from its judged units, the gaps it needs, the robustness readings' statuses
    (robust_statuses) and the training-length checks; the planner's Plan where it is undecided, unless `planned`
    (the planned Holm family sizes) is None."""
    scoped = [u for u in units if not outside_scope(u)]  # the others decide nothing; none: not run in the scope
    gap_units = [g for u in scoped for g in needed_gaps(claim, u.unit, gaps)]
    text = verdict_text(claim, scoped, gaps, lambda u: u.status)
    p, label = claim_p(claim, text, scoped, gap_units)
    undecided = text in ("inconclusive", NO_VERDICT)
    decided = text in ("supported", "contradicted") and any(u.unit.robustness for u in scoped)
    return Verdict(
        claim,
        text,
        p,
        label,
        tuple(units),
        plan_trials(claim, scoped, lambda u: needed_gaps(claim, u, gaps), ev, planned, hurdle_parts)
        if undecided and planned is not None
        else None,
        command_for(claim, ev) if text == NOT_RUN else None,
        tuple(training_of([u.unit for u in scoped], checks)),
        scope_of(scoped),
        {reading: verdict_text(claim, scoped, gaps, statuses.__getitem__) for reading, statuses in readings.items()}
        if decided
        else {},
    )


def outside_scope(judged: Judged) -> bool:
    """Whether a unit lies outside its paper's scope (Refusal.OUT_OF_SCOPE): it decides nothing, and a claim with
    no other unit is not run where the paper states it (its command adds runs there)."""
    return judged.unit.refused is not None and judged.unit.refused.kind is Refusal.OUT_OF_SCOPE


def claim_p(claim: Claim, text: str, units: list[Judged], gap_units: list[Judged | None]) -> tuple[float, str]:
    """The p that decides (or would decide) the claim's verdict, and what it is: the smallest Holm p
    of the side that decided it, or the intersection-union p (raw, the largest) of every unit's
    test (universal: for, with the gaps it needs; existential: against)."""
    if text == NOT_RUN:
        return math.nan, ""
    side = "against" if text == "contradicted" else "for"
    if decided_by(text, claim.every) == "holm":
        deciding = [u.adjusted for u in units if u.status == side] or [u.adjusted for u in units]
        return min((p for p in deciding if np.isfinite(p)), default=math.nan), f"Holm, smallest, {side}; {FAMILYWISE}"
    if claim.every:
        every_p = [u.unit.p_for for u in units] + [g.unit.p_for if g is not None else math.nan for g in gap_units]
    else:
        every_p = [u.unit.p_against for u in units]
    # undefined where any part is
    return hypothesis.intersection_union(every_p), f"intersection-union, raw max, {side}; {PER_CLAIM}"


# --- what a claim that did not run needs -----------------------------------------------------------------------------


CONDITION_MODIFIERS = tuple(key for key, modifier in STUDY_MODIFIERS.items() if modifier.figure is not None)
"""The registry's modifiers that make a condition of their own, which a claim's Need names and a study must match:
those with a figure of their own. seed_design crosses a study's trials and intermediate_size sizes its
intermediate steps; neither changes what a run is compared as."""
PAPER_SMALL = (500, 5)  # 001 App. D: the 500-example runs train five epochs (where train.small_size is 0)


def resolve(value, ev: Evidence, tasks: list[str]):
    """Need placeholders: all_ks, all_layers, all_heads, L, L-1, train.epochs, data.tasks."""
    L = ev.num_layers
    table = {
        "all_ks": list(range(L + 1)),
        "all_layers": list(range(1, L + 1)),
        "all_heads": list(range(ev.num_heads)),
        "L": L,
        "L-1": L - 1,
        "train.epochs": ev.train.epochs if ev.train else 3,
        "data.tasks": tasks,
    }
    if isinstance(value, list):
        return [resolve(v, ev, tasks) for v in value]
    return table.get(value, value) if isinstance(value, str) else value


def matching_study(studies: dict[str, StudyConfig], need: Need, ev: Evidence, tasks: list[str]) -> StudyConfig | None:
    wanted = {m: resolve(need.modifiers.get(m), ev, tasks) for m in CONDITION_MODIFIERS}
    for study in studies.values():
        have = {m: getattr(study, m) for m in CONDITION_MODIFIERS}
        have = {m: list(v) if isinstance(v, tuple) else v for m, v in have.items()}
        if study.scheme == need.scheme and {m: v or None for m, v in have.items()} == {
            m: v or None for m, v in wanted.items()
        }:
            return study
    return None


def flatten(value) -> list:
    """The items of nested lists (a chain of intermediate tasks is a list inside the list)."""
    return [x for v in value for x in flatten(v)] if isinstance(value, (list, tuple)) else [value]


def needed_sizes(have: list[int], need: Need, small: int, added: bool) -> list[int]:
    """The sizes `have` with what `need` asks for added: a second size ("two"), one at least 10 times
    the smallest ("tenfold"), one at most train.small_size ("small"), one above it ("large"), one of at least
    PLENTIFUL_SIZE ("plentiful"), one of at least PLENTIFUL_SIZE and one below it at most a tenth of the largest
    ("plentiful_and_scarce"); in a study that is `added`, "small", "large" and "plentiful" replace `have` (its
    runs at the other sizes would train for nothing)."""
    sizes = list(have)
    if need.sizes == "plentiful_and_scarce":
        sizes += [PLENTIFUL_SIZE] if max(sizes) < PLENTIFUL_SIZE else []
        scarce = min(sizes) * 10 <= max(sizes) and min(sizes) < PLENTIFUL_SIZE
        sizes += [] if scarce else [min(max(sizes), PLENTIFUL_SIZE) // 10]
    if need.sizes == "two" and len(sizes) < 2:
        sizes.append(2 * max(sizes))
    if need.sizes == "tenfold" and max(sizes) < 10 * min(sizes):
        sizes.append(10 * min(sizes))
    if need.sizes == "small" and not any(s <= small for s in sizes):
        sizes = [small] if added else sizes + [small]
    if need.sizes == "large" and not any(s > small for s in sizes):
        sizes = [2 * small] if added else sizes + [2 * small]
    if need.sizes == "plentiful" and not any(s >= PLENTIFUL_SIZE for s in sizes):
        sizes = [PLENTIFUL_SIZE] if added else sizes + [PLENTIFUL_SIZE]
    return sorted(sizes)


def sizes_at(study: StudyConfig, task: str) -> list[int]:
    """The sizes `study` runs `task` at; of a per-task mapping that lacks `task`, its first list."""
    if isinstance(study.sizes, dict) and task not in study.sizes:
        return list(next(iter(study.sizes.values()), ()))
    return list(study.sizes_of(task))


def added_sizes(reference: StudyConfig | None, tasks: list[str], need: Need, small: int) -> list[int]:
    """The sizes a study the command adds runs at, from the reference study's sizes of its first task (of `tasks`,
    else any; [128] without one): for a need of a size class ("small", "large"), the reference's size of that
    class nearest train.small_size, whose plain runs are there to pair with; else, or where the reference has
    none, its first size with what `need` adds (needed_sizes)."""
    if reference is None or not reference.sizes:
        have = [128]
    else:
        have = sizes_at(reference, next((t for t in tasks if t in reference.tasks), tasks[0] if tasks else ""))
    fits = [s for s in have if (s <= small) == (need.sizes == "small")] if need.sizes in ("small", "large") else []
    fits = [s for s in have if s >= PLENTIFUL_SIZE] if need.sizes == "plentiful" else fits
    if fits:
        return [max(fits) if need.sizes == "small" else min(fits)]
    return needed_sizes(have[:1], need, small, added=True)


def paired_trials(reference: StudyConfig, sizes: list[int]) -> int:
    """Trials of a study the command adds whose runs pair with the reference study's: 3, the fewest a verdict is
    calibrated from, or fewer where the reference runs fewer at `sizes` (a trial without its pair is for nothing)."""
    runs = (
        reference.trials if not isinstance(reference.trials, dict) else min(reference.trials.get(s, 3) for s in sizes)
    )
    return min(3, runs)


def sizes_overrides(key: str, study: StudyConfig, wanted: dict[str, list[int]]) -> dict[str, list]:
    """The changes (dotted key: sizes) that make study `key` run each task of `wanted` at its sizes: its one list
    (grown by every task's), or, of a per-task mapping, each task's list that changes, a task it lacks under a "+"
    key (DVC's -S cannot add a key to a mapping by assigning the whole mapping)."""
    if not isinstance(study.sizes, dict):
        sizes = sorted({*study.sizes, *(s for sizes in wanted.values() for s in sizes)})
        return {f"{key}.sizes": sizes} if sizes != sorted(study.sizes) else {}
    return {
        f"{'' if task in study.sizes else '+'}{key}.sizes.{task}": sizes
        for task, sizes in wanted.items()
        if sizes != list(study.sizes.get(task, ()))
    }


def overrides_for(claim: Claim, ev: Evidence) -> dict[str, object]:
    """The params changes (dotted key, "+" for a new study) that give `claim` its runs."""
    data_tasks = list(ev.data.tasks) if ev.data else []
    small = ev.train.small_size if ev.train else 0
    probed = list(ev.probe_scores())
    reference = next((s for s in ev.studies.values() if s.scheme == "progressive"), None)
    changes: dict[str, object] = {}
    every_task: list[str] = []
    if any(need.sizes == "small" for need in claim.needs) and small < 1:  # no size trains small_epochs
        small = PAPER_SMALL[0]
        changes["train.small_size"], changes["train.small_epochs"] = PAPER_SMALL
    for need in claim.needs:
        # a probe predicts one label per sequence: a claim with probes runs on tasks that are not span QA
        fits = [t for t in data_tasks if not (need.probe and t in TASKS and TASKS[t].kind.token_level)]
        # a study it adds runs where the progressive study does, whose runs are its references
        referenced = [t for t in (reference.tasks if reference else ()) if t in fits]
        base_tasks = list(need.tasks) or referenced[:1] or fits[:1] or data_tasks[:1]
        study = matching_study(ev.studies, need, ev, base_tasks)
        tasks = list(need.tasks) or [t for t in (study.tasks if study else base_tasks) if t in fits] or base_tasks
        tasks += [t for t in fits if t not in tasks][: max(0, need.min_tasks - len(tasks))]
        args = {k: resolve(v, ev, tasks) for k, v in need.args.items()}
        modifiers = {k: resolve(v, ev, tasks) for k, v in need.modifiers.items()}
        # runs of other epochs are compared with the reference's plain runs at the same sizes and trials (the
        # other modifiers' studies train their own baselines)
        paired = reference if "epochs" in need.modifiers else None
        if study:
            key = f"studies.{study.name}"
            if not set(tasks) <= set(study.tasks):
                changes[f"{key}.tasks"] = list(study.tasks) + [t for t in tasks if t not in study.tasks]
            sizes = {task: needed_sizes(sizes_at(study, task), need, small, added=False) for task in tasks}
            changes |= sizes_overrides(key, study, sizes)
            for name, value in args.items():
                have = getattr(study, name)
                if isinstance(value, list) and have is not None and not set(value) <= set(have):
                    changes[f"{key}.{name}"] = sorted(set(have) | set(value))
        else:
            name = need.study if need.study not in ev.studies else f"{need.study}_{claim.id}"
            added = added_sizes(reference, tasks, need, small)
            sizes = dict.fromkeys(tasks, added)
            changes[f"+studies.{name}"] = {
                "scheme": need.scheme,
                **args,
                **modifiers,
                "tasks": tasks,
                "sizes": added,
                "trials": paired_trials(paired, added) if paired is not None else 3,
            }
        if paired is not None and paired is not study:  # the reference then runs at those sizes too
            plain = {task: sorted({*sizes_at(paired, task), *sizes[task]}) for task in tasks}
            changes |= sizes_overrides(f"studies.{paired.name}", paired, plain)
        if need.probe and not set(tasks) <= set(probed):
            changes["probe.tasks"] = probed + [t for t in tasks if t not in probed]
        every_task += tasks + [t for t in flatten(modifiers.get("intermediate_tasks") or []) if t in TASKS]
    missing = [t for t in dict.fromkeys(every_task) if t not in data_tasks]
    if missing:
        changes["data.tasks"] = data_tasks + missing
    return changes


def command_for(claim: Claim, ev: Evidence) -> str:
    changes = overrides_for(claim, ev)
    if not changes:
        return "the runs exist but give no unit (see the claim's operationalisation)"
    parts = []
    for key, value in changes.items():
        text = f"{key}={flow(value)}"
        parts.append(f"-S '{text}'" if any(c in text for c in " []{}<>") else f"-S {text}")
    return "dvc exp run " + " ".join(parts)
