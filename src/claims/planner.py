"""The trials planner: for an undecided claim, the probability that N trials decide it (assurance over the
effect's uncertainty, on the same eval set: src/stats/power.py) at the smallest N whose probability reaches
FEW and report.power, the runs that N adds and the `dvc exp run -S …` command that runs them; or why no
number of trials decides it. Never a single N from a point estimate."""

from __future__ import annotations

import math
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass
from typing import Protocol

import numpy as np

from src.claims.claim import SEED_001, SEED_003, SEED_004, Claim
from src.claims.evidence import Evidence
from src.claims.units import Refusal, Spread, Unit, shape_p
from src.stats import power, validity
from src.stats.hypothesis import Bootstrap, Estimate

PAPERS = (SEED_001, SEED_003, SEED_004)
FEW = 0.5  # the smaller probability a plan states, beside report.power
MAX_TRIALS = 10_000  # the most trials a plan proposes
LIMIT_TRIALS = 10**9  # "however many trials": the eval set's limit
MORE_TRIALS_LIFT = (Refusal.DESIGN, Refusal.TOO_FEW)  # refusals that more trials lift; no other refused unit is planned


class Judgement(Protocol):
    """A judged unit as the planner reads it (verdicts.Judged): the unit and its status."""

    @property
    def unit(self) -> Unit: ...

    @property
    def status(self) -> str: ...


@dataclass(frozen=True)
class Plan:
    """What more trials would do for an undecided claim (plan_trials): (N, the probabilities that N trials
    support and contradict it) at the smallest N whose chance of either reaches FEW and report.power
    (`at_least`: lower bounds, some units not simulated), what is said of a target not reached, the trials
    the command runs, the runs it adds and the command (None where more trials cannot decide it, or their
    runs are not a study's), the planner's reasons per unit, and the Holm family it plans at."""

    chances: tuple[tuple[int, float, float], ...]  # (N, P(supported), P(contradicted))
    at_least: bool
    beyond: str  # where a target is not reached: the eval set's limit, or the cap
    trials: int | None
    runs: int | None
    command: str | None
    reasons: tuple[str, ...]
    family: int


def paper_of(claim: Claim) -> str:
    """The paper a claim is from (its source starts with it): its Holm family's key."""
    return next((paper for paper in PAPERS if claim.source.startswith(paper)), claim.source)


def planned_families(
    claims: Sequence[Claim], by_claim: Mapping[str, Sequence[Unit]], in_family: Callable[[Unit], bool]
) -> dict[str, int]:
    """Per paper, the Holm family of the planned design: its units whose test is in the family with a p
    (`in_family`, the p against for a universal claim, for an existential one), and those the design cannot
    decide today that more trials would make testable (validity.decidable_from)."""
    families = dict.fromkeys(PAPERS, 0)
    for claim in claims:
        paper = paper_of(claim)
        for unit in by_claim[claim.id]:
            tested = in_family(unit) and np.isfinite(unit.p_against if claim.every else unit.p_for)
            testable = unit.refused is not None and unit.refused.kind is Refusal.DESIGN
            families[paper] = families.get(paper, 0) + int(
                bool(tested or (testable and validity.decidable_from(unit.test_type)))
            )
    return families


# --- one unit at N trials -----------------------------------------------------------------------------------------


@dataclass(frozen=True)
class Simulated:
    """A unit whose test the planner draws at N trials: the Estimate it is tested from (a Welch unit's as
    hypothesis.two_sample builds it), its levels for and against (0: its test cannot decide against), the
    fewest trials its design decides from, and the df of its trial variance at N (a crossed seed_design's
    smaller factor's levels - 1)."""

    unit: Unit
    observed: Estimate
    levels: tuple[float, float]
    floor: int
    df: Callable[[int], float | None]

    def decisions(self, trials: int, seed: int) -> tuple[np.ndarray, np.ndarray]:
        """Per draw, whether its test for and its test against decide at `trials` trials (power.assured)."""
        batch = power.assured(self.observed, trials, np.random.default_rng(seed), df=self.df(trials))
        if batch is None or trials < self.floor:
            none = np.zeros(power.DRAWS, dtype=bool)
            return none, none
        p_for, p_against = shape_p(batch, self.unit.shape, self.unit.margin)
        return np.asarray(p_for) < self.levels[0], np.asarray(p_against) < self.levels[1]


def observed_of(unit: Unit) -> Estimate | None:
    """The Estimate a unit's test reads, with a trial variance to draw from; None where it has none."""
    result = unit.result
    if isinstance(result, Spread) and isinstance(unit.n, tuple) and np.isfinite(result.sd):
        n = min(unit.n)  # Welch on min(n_a, n_b) - 1 df; its pooled SD on about 2 (n - 1)
        return Estimate(
            unit.estimate, result.sd * math.sqrt(2 / n), n, n - 1.0, result.sd * math.sqrt(2), 2 * (n - 1.0)
        )
    if isinstance(result, Estimate) and np.isfinite(result.trial_sd) and np.isfinite(result.trial_df):
        return result
    return None


def trials_of(unit: Unit) -> int:
    """The trials (or points) a unit's test has: the larger sample's for two samples."""
    return max(unit.n) if isinstance(unit.n, tuple) else int(unit.n)


def floor_of(unit: Unit, level: float) -> int | None:
    """The fewest trials from which the unit's design decides (validity.decidable_from), an exact test's points
    from which its smallest p falls below `level`, 2 for a test validity does not rule on; None where no
    number does."""
    if unit.test_type:
        return validity.decidable_from(unit.test_type)
    return next((n for n in range(3, 13) if 1 / math.factorial(n) < level), None) if unit.raw else 2


def crossed_df(unit: Unit, ev: Evidence) -> Callable[[int], float | None]:
    """The df of a unit's trial variance at N trials: a crossed seed_design's, as trials_override grows it
    (min(subsets, draws) - 1); None (independent trials: N - 1) otherwise."""
    designs = [ev.studies[s].seed_design for s in unit.studies if s in ev.studies]
    design = next((d for d in designs if d is not None), None)
    if design is None or not unit.reads_seed_design:
        return lambda n: None
    levels = validity.crossed_levels({unit.test_type})
    return lambda n: float(min(grown_design(design, n, levels)) - 1)


# --- the claim at N trials ----------------------------------------------------------------------------------------


Outcome = Simulated | tuple[int | None, str]  # simulated, or (the trials from which it is testable: None never, why)
Draws = Mapping[Unit, tuple[np.ndarray, np.ndarray]]
Verdicts = Callable[[Draws], tuple[np.ndarray, np.ndarray]]  # per draw: supported, contradicted (exclusive)


def outcome_of(judged: Judgement, levels: tuple[float, float], ev: Evidence) -> Outcome:
    """How the planner reads one unit: drawn at N trials (Simulated), or not, with the trials from which its
    design decides (None: no number of trials does) and why."""
    unit = judged.unit
    if unit.refused is not None and unit.refused.kind not in MORE_TRIALS_LIFT:
        return None, unit.refused.reason
    floor = floor_of(unit, levels[0])
    if floor is None:
        return None, unit.refused.reason if unit.refused else "no number of trials calibrates its test"
    if unit.refused is not None:  # refused at its trials (or its crossed seed_design): more than it has
        floor = max(floor, trials_of(unit) + 1)
    observed = observed_of(unit)
    if observed is not None:
        return Simulated(unit, observed, levels, floor, crossed_df(unit, ev))
    if isinstance(unit.result, Bootstrap):
        return floor, "a bootstrap statistic: its chance of deciding is not simulated"
    if unit.raw:
        return floor, "an exact test: its chance of deciding is not simulated"
    return (
        floor,
        "no variance estimate (fewer than 2 trials)" if unit.result is not None else "no planner for this test",
    )


Chance = Callable[[int], tuple[float, float]]  # N -> (P(supported), P(contradicted)) with N trials


def chance_of(parts: Sequence[Simulated], verdicts: Verdicts) -> Chance:
    """The probabilities that N trials support and contradict the claim (`verdicts`: per draw, from its
    simulated parts' draws, one seed each: distinct units are drawn independently), memoised by N."""
    memo: dict[int, tuple[float, float]] = {}

    def chance(trials: int) -> tuple[float, float]:
        if trials not in memo:
            draws = {part.unit: part.decisions(trials, seed) for seed, part in enumerate(parts)}
            supported, contradicted = verdicts(draws)
            memo[trials] = float(np.mean(supported)), float(np.mean(contradicted))
        return memo[trials]

    return chance


def decides(chance: Chance, trials: int) -> float:
    """The probability that N trials decide the claim, either way."""
    return sum(chance(trials))


def smallest(chance: Chance, start: int, target: float) -> int:
    """The smallest N in [start, MAX_TRIALS] whose chance reaches `target` (it does at MAX_TRIALS), by
    bisection (the chance grows with N, up to Monte Carlo noise; every draw is seeded, so it is the same N
    each time)."""
    if decides(chance, start) >= target:
        return start
    low, high = start, MAX_TRIALS
    while high - low > 1:
        middle = (low + high) // 2
        low, high = (low, middle) if decides(chance, middle) >= target else (middle, high)
    return high


def stated(chance: Chance, start: int, targets: Sequence[float]) -> tuple[list[tuple[int, float, float]], str]:
    """(N, P(supported), P(contradicted)) at the smallest N whose chance of a decision reaches each target, and
    what is said where a target is not reached: the eval set's limit (the chance however many trials) or the
    cap."""
    chances: list[tuple[int, float, float]] = []
    for target in sorted(set(targets)):
        if decides(chance, MAX_TRIALS) < target:
            limit = decides(chance, LIMIT_TRIALS)
            if limit < target:
                return chances, (
                    f"no number of trials decides it with probability {target:.2f} on this eval set: at most "
                    f"{limit:.2f} however many trials (the eval set's own SE, which more trials do not shrink)"
                )
            return chances, f"more than {MAX_TRIALS:,} trials to decide it with probability {target:.2f}"
        n = smallest(chance, start, target)
        if not chances or n > chances[-1][0]:
            chances.append((n, *chance(n)))
    return chances, ""


def plan_trials(  # noqa: PLR0913
    claim: Claim,
    units: Sequence[Judgement],
    gaps_of: Callable[[Unit], Sequence[Judgement | None]],
    ev: Evidence,
    families: Mapping[str, int],
    parts_of: Callable[[Unit], int],
) -> Plan:
    """What more trials would do for an undecided claim. Each unit's test is drawn at N trials on the same eval
    set (Simulated), for at α and against at α / family for a universal claim, for at α / family and against
    at α for an existential one (Bonferroni: the strictest Holm step of the planned family of the claim's
    paper), α shared with a hurdle's other part (`parts_of`). A universal claim is decided when any unit's
    test against decides or every unit's and needed gap's (`gaps_of`) test for does; an existential one when
    some unit's test for decides with its gaps' or every unit's test against does. Distinct units are drawn
    independently (they share runs: an approximation, stated in docs/claims.md). Units that are "for" and not
    simulated are taken to stay so; a blocking unit that no number of trials decides leaves no plan; one whose
    chance is not simulated leaves the trials from which its design decides, without a probability."""
    s, family = ev.settings, max(families.get(paper_of(claim), 1), 1)

    def levels(unit: Unit) -> tuple[float, float]:
        alpha = s.alpha / parts_of(unit)
        against = 0.0 if unit.test_type in validity.ALPHA_ONLY else alpha
        return (alpha, against / family) if claim.every else (alpha / family, against)

    gap_lists = {j.unit: list(gaps_of(j.unit)) for j in units}
    judged = list(dict.fromkeys([*units, *(g for gaps in gap_lists.values() for g in gaps if g is not None)]))
    outcomes = {j.unit: outcome_of(j, levels(j.unit), ev) for j in judged}
    blocking = [j.unit for j in judged if j.status != "for"]
    reasons = tuple(f"{u.name}: {o[1]}" for u, o in outcomes.items() if u in blocking and isinstance(o, tuple))
    have = max(trials_of(u) for u in outcomes)
    sims = {u: o for u, o in outcomes.items() if isinstance(o, Simulated)}
    if claim.every:
        unplanned = [outcomes[u] for u in blocking if u not in sims]
        if any(g is None for gaps in gap_lists.values() for g in gaps):
            return Plan(
                (), False, "", None, None, None, (*reasons, "a full-vs-scratch gap it needs has no runs"), family
            )
        if unplanned:
            return floor_plan([o for o in unplanned if isinstance(o, tuple)], have, blocking, ev, reasons, family)
        mains = [sims[j.unit] for j in units if j.unit in sims]
        parts = list(sims.values())
        return chance_plan(parts, universal(mains, parts), have, ev, reasons, family, at_least=False)
    routes: list[tuple[Simulated, list[Simulated]]] = []
    for j in units:
        gaps = gap_lists[j.unit]
        if j.unit in sims and all(g is not None and (g.unit in sims or g.status == "for") for g in gaps):
            routes.append((sims[j.unit], [sims[g.unit] for g in gaps if g is not None and g.unit in sims]))
    if not routes:
        floors = [o for o in outcomes.values() if isinstance(o, tuple) and o[0] is not None]
        return floor_plan(
            sorted(floors, key=lambda o: o[0] or 0)[:1], have, [j.unit for j in units], ev, reasons, family
        )
    mains = [sims[j.unit] for j in units if j.unit in sims]
    complete = len(mains) == len(units)
    parts = list(dict.fromkeys([*mains, *(g for _, gaps in routes for g in gaps)]))
    return chance_plan(parts, existential(mains, routes, complete), have, ev, reasons, family, at_least=not complete)


def universal(units: Sequence[Simulated], parts: Sequence[Simulated]) -> Verdicts:
    """A universal claim, per draw: contradicted where any of its `units`' tests against decides, else
    supported where every part's (its units' and the gaps they need) test for does."""

    def verdicts(draws: Draws) -> tuple[np.ndarray, np.ndarray]:
        against = np.any([draws[u.unit][1] for u in units] or [np.zeros(power.DRAWS, dtype=bool)], axis=0)
        return np.all([draws[p.unit][0] for p in parts], axis=0) & ~against, against

    return verdicts


def existential(
    units: Sequence[Simulated], routes: Sequence[tuple[Simulated, list[Simulated]]], complete: bool
) -> Verdicts:
    """An existential claim, per draw: supported where some route's (a unit and the gaps it needs) tests for
    all decide, else contradicted where every unit's test against does (only where every unit of the claim
    is simulated: `complete`)."""

    def verdicts(draws: Draws) -> tuple[np.ndarray, np.ndarray]:
        shown = np.any(
            [np.all([draws[u.unit][0], *(draws[g.unit][0] for g in gaps)], axis=0) for u, gaps in routes], axis=0
        )
        return shown, np.all([draws[u.unit][1] for u in units], axis=0) & complete & ~shown

    return verdicts


def chance_plan(  # noqa: PLR0913
    parts: list[Simulated],
    verdicts: Verdicts,
    have: int,
    ev: Evidence,
    reasons: tuple[str, ...],
    family: int,
    at_least: bool,
) -> Plan:
    """The Plan from the claim's chance of a decision at N trials: its N at FEW and report.power, the command
    raising its parts' studies to the largest of them."""
    chance = chance_of(parts, verdicts)
    chances, beyond = stated(chance, have + 1, (FEW, ev.settings.power))
    if not chances:
        return Plan((), at_least, beyond, None, None, None, reasons, family)
    return Plan(
        tuple(chances), at_least, beyond, *command_for([p.unit for p in parts], chances[-1][0], ev), reasons, family
    )


def floor_plan(
    floors: Sequence[tuple[int | None, str]],
    have: int,
    units: Sequence[Unit],
    ev: Evidence,
    reasons: tuple[str, ...],
    family: int,
) -> Plan:
    """A Plan without a probability: the trials from which every blocking unit's design decides (where that
    is more than it has), or none where some unit no number of trials decides."""
    if not floors or any(floor is None for floor, _ in floors):
        return Plan((), False, "", None, None, None, reasons, family)
    n = max(floor for floor, _ in floors if floor is not None)
    if n <= have:
        return Plan((), False, "", None, None, None, reasons, family)
    return Plan((), False, "", *command_for(list(units), n, ev), reasons, family)


# --- the command and what it costs --------------------------------------------------------------------------------


def command_for(units: Sequence[Unit], n: int, ev: Evidence) -> tuple[int, int | None, str | None]:
    """The trials that raising the units' studies to `n` trials runs (a crossed seed_design's grown subsets x
    draws: at least `n`), the runs it adds (every condition those studies run at the sizes raised) and the
    command; `n` and no runs or command where the units' runs are not a study's (probe seeds)."""
    studies = sorted({study for unit in units for study in unit.studies})
    if not studies:
        return n, None, None
    sizes: set[int] | None = set()
    for unit in units:
        unit_sizes = {size for _, size in filter(None, (unit.key, *unit.gaps))}
        sizes = None if sizes is None or not unit_sizes else sizes | unit_sizes  # None: a unit of unknown size
    levels = validity.crossed_levels({u.test_type for u in units})  # where a study has a crossed seed_design
    overrides = [trials_override(study, n, sizes, ev, levels) for study in studies]
    trials = {study: planned_trials(study, n, ev, levels) for study in studies}
    runs = 0
    for c in ev.conditions(plain=None):
        raised = [trials[study] for study in studies if study in c.studies]
        if raised and (sizes is None or c.size in sizes):
            runs += max(0, max(raised) - len(c.first))
    return max(trials.values()), runs, "dvc exp run " + " ".join(overrides)


def grown_design(design: tuple[int, int], n: int, levels: int) -> tuple[int, int]:
    """A crossed seed_design (subsets, draws) grown in turn, each to at least `levels`, until their product
    (its trials) reaches `n`."""
    subsets, draws = (max(level, levels) for level in design)
    while subsets * draws < n:
        subsets, draws = (subsets + 1, draws) if subsets <= draws else (subsets, draws + 1)
    return subsets, draws


def planned_trials(study: str, n: int, ev: Evidence, levels: int) -> int:
    """The trials a study runs once raised to `n`: a crossed seed_design's grown subsets x draws, else `n`."""
    config = ev.studies.get(study)
    if config is None or config.seed_design is None:
        return n
    return math.prod(grown_design(config.seed_design, n, levels))


def trials_override(study: str, n: int, sizes: set[int] | None, ev: Evidence, levels: int) -> str:
    """`-S` raising a study to `n` trials. A study with trials per size (a mapping) gets its whole
    mapping back, with the sizes the blocking units read (`sizes`; every size where a unit's is
    unknown: None) raised to n and the others kept: one count would replace the mapping. A study
    with a crossed seed_design grows its subsets and draws in turn (grown_design), each to at least
    `levels` (what the blocking units' tests need: validity.crossed_levels)."""
    config = ev.studies.get(study)
    if config is not None and config.seed_design is not None:
        subsets, draws = grown_design(config.seed_design, n, levels)
        design = f"{{subsets: {subsets}, seeds: {draws}}}"
        return f"-S 'studies.{study}.seed_design={design}' -S studies.{study}.trials={subsets * draws}"
    trials = config.trials if config is not None else n
    if not isinstance(trials, dict):
        return f"-S studies.{study}.trials={n}"
    raised = {size: max(count, n) if sizes is None or size in sizes else count for size, count in trials.items()}
    return f"-S 'studies.{study}.trials={flow(raised)}'"


def flow(value) -> str:
    """A value as YAML flow (what `dvc exp run -S` parses)."""
    if isinstance(value, bool):
        return "true" if value else "false"
    if isinstance(value, (list, tuple)):
        return "[" + ", ".join(flow(v) for v in value) + "]"
    if isinstance(value, dict):
        return "{" + ", ".join(f"{k}: {flow(v)}" for k, v in value.items()) + "}"
    return str(value)


def plan_text(plan: Plan) -> str:
    """The plan as the report states it: "N trials decide it with probability p" at each N, and the trials
    the command runs, the runs they add and the command; "" without either."""
    bound = "at least " if plan.at_least else ""
    said = "; ".join(
        f"{n:,} trials decide it with probability {bound}{supported + contradicted:.2f} ({supported:.2f} supported "
        f"here, {contradicted:.2f} not supported here)"
        for n, supported, contradicted in plan.chances
    )
    if said:
        said += ": assurance over the effect's uncertainty, on this eval set"
    if plan.beyond:
        said += ("; " if said else "") + plan.beyond
    if not said and plan.trials:
        said = f"{plan.trials} trials make it testable (its chance of deciding is not computed)"
    if plan.command:
        said += f"; {plan.trials} trials add {plan.runs} runs: `{plan.command}`"
    return said
