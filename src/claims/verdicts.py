"""From units to verdicts: the rule (RULE, printed in the report), the report's Holm family,
the trials planner and the `dvc exp run -S …` command that adds what a claim needs."""

from __future__ import annotations

import math
from dataclasses import replace

import numpy as np

from src.claims.claim import Claim, Need, Shared
from src.claims.evidence import Evidence
from src.claims.registry import CLAIMS
from src.claims.units import NEAR_COLLAPSE_SHARE, ONE_PROBE_SEED, Unit, refuse_trials_as_independent
from src.config.schema import StudyConfig
from src.stats import hypothesis, validity
from src.tasks.registry import TASKS

NOT_RUN = "not run"
NO_VERDICT = "no verdict"
DESIGN_REFUSAL = "the design cannot decide"  # how validity.decidable's refusals begin
RULE = (
    "Each unit of a claim has two one-sided tests: *for* the claim (H0: it fails there) and *against* it (H0: it "
    "holds there). A universal claim ('at every task and size') is **supported** by an intersection-union test: "
    "every unit's test *for* at α, no adjustment across its units (the claim's p is the largest); for a claim that "
    "needs the full-vs-scratch gap, the gap's own test at each unit is part of that intersection, so a unit without "
    "a shown gap cannot support it (this, not discarding units, prevents vacuous support). It is **contradicted** "
    "when any unit's test *against* is significant after Holm across the report; no unit is ever left out, "
    "whether or not its gap is shown. An existential claim ('some intermediate task', 'specific heads') is "
    "supported when any unit's test *for* is significant after Holm across the report, and contradicted when every "
    "unit's test *against* is (intersection-union). The report's Holm family holds exactly one one-sided test per "
    "unit: *against* for universal claims, *for* for existential ones; every other p printed is raw, and says so. "
    "A unit gives **no verdict**, and prints no interval, where its test is not valid: a percentile bootstrap "
    "below the declared minimum trials or above the declared share of undefined draws, a probe curve from one "
    "probe seed (its noise unmeasured). A claim is **inconclusive** when neither holds, **no verdict** when a "
    "refused unit is all that stands between it and a verdict, and **not run** without units. Runs are never "
    "dropped for their outcome: collapsed runs count; only a non-finite loss removes a run, and it is counted. A run "
    f"that (nearly) collapsed (one class for at least {NEAR_COLLAPSE_SHARE:.0%} of the eval set) is also an outcome "
    "of its own: a contrast reports its conditions' collapse rates (exact intervals, compared paired by trial). "
    "Its robustness readings, never a verdict, give its p's under the trial-only t and with the trials of "
    "(nearly) collapsed runs excluded."
)


def unit_status(unit: Unit, every: bool, alpha: float) -> str:
    if unit.refused:
        return NO_VERDICT
    p_for = unit.p_for if every else unit.adjusted
    p_against = unit.adjusted if every else unit.p_against
    if p_against < alpha:
        return "against"
    return "for" if p_for < alpha else "unresolved"


def judge_claims(ev: Evidence) -> tuple[list[dict], list[Unit]]:
    """Every claim's verdict (with its units, the claim's p and the planner) and every unit."""
    shared, alpha = Shared(ev), ev.settings.alpha
    by_claim = {
        claim.id: [refuse_trials_as_independent(u, ev) for u in claim.build(ev, shared)] if not ev.runs.empty else []
        for claim in CLAIMS
    }
    family = [
        (unit, unit.p_against if claim.every else unit.p_for)
        for claim in CLAIMS
        for unit in by_claim[claim.id]
        if not unit.refused
    ]
    for (unit, _), adjusted in zip(family, hypothesis.holm([p for _, p in family])):
        unit.adjusted = adjusted
    # the family of the planned design: today's tests and every unit more trials would make testable
    planned_family = sum(np.isfinite(p) for _, p in family) + sum(
        1
        for units in by_claim.values()
        for u in units
        if u.refused.startswith(DESIGN_REFUSAL) and validity.decidable_from(u.test_type)
    )
    for claim in CLAIMS:
        for unit in by_claim[claim.id]:
            unit.status = unit_status(unit, claim.every, alpha)
    gaps = {u.key: u for u in by_claim["full_beats_scratch"]}
    verdicts = [verdict(claim, by_claim[claim.id], gaps, ev, planned_family) for claim in CLAIMS]
    return verdicts, [u for units in by_claim.values() for u in units]


def verdict(claim: Claim, units: list[Unit], gaps: dict, ev: Evidence, planned_family: int) -> dict:
    needed_gaps = [gaps.get(g) for u in units for g in u.gaps] if claim.needs_gap else []
    statuses = [u.status for u in units]
    if not units:
        text, p = NOT_RUN, math.nan
    elif claim.every:
        gap_shown = all(g is not None and g.status == "for" for g in needed_gaps)
        every_p = [u.p_for for u in units] + [g.p_for if g is not None else math.nan for g in needed_gaps]
        p = hypothesis.intersection_union(every_p)  # undefined where any part is
        if "against" in statuses:
            text = "contradicted"
        elif all(s == "for" for s in statuses) and gap_shown:
            text = "supported"
        elif NO_VERDICT in statuses and all(s in ("for", NO_VERDICT) for s in statuses):
            text = NO_VERDICT
        else:
            text = "inconclusive"
    else:
        p = min((u.adjusted for u in units if np.isfinite(u.adjusted)), default=math.nan)
        shown = [u for u in units if u.status == "for"]
        if any(all(gaps.get(g) is not None and gaps[g].status == "for" for g in u.gaps) for u in shown):
            text = "supported"
        elif all(s == "against" for s in statuses):
            text = "contradicted"
        elif NO_VERDICT in statuses and all(s in ("against", NO_VERDICT) for s in statuses):
            text = NO_VERDICT
        else:
            text = "inconclusive"
    undecided = text in ("inconclusive", NO_VERDICT)
    return {
        "claim": claim,
        "id": claim.id,
        "verdict": text,
        "p": p,  # universal: the intersection-union p (raw, the largest); existential: the smallest Holm p
        "units": units,
        "plan": plan_trials(claim, units, needed_gaps, ev, planned_family) if undecided else None,
        "needs": command_for(claim, ev) if text == NOT_RUN else None,
    }


# --- the planner ------------------------------------------------------------------------------------------------


def plan_for(unit: Unit, alpha: float, power: float, family: int) -> hypothesis.TrialsPlan:
    """Trials the unit's one-sided test at alpha / `family` needs at `power` if its observed effect is the
    true one: a range (low, point, high) from the trial SD's interval and the eval set's fixed SE
    (hypothesis.plan_difference / plan_equivalence), or None with the reason; never below the trials
    from which validity.decidable says its design decides."""
    plan = _plan_for(unit, alpha, power, family)
    floor = validity.decidable_from(unit.test_type) if unit.test_type else None
    if unit.test_type and floor is None:
        return hypothesis.TrialsPlan(None, None, None, unit.refused or "no number of trials calibrates its test")
    if floor is not None and plan.point is None and plan.reason.startswith("no variance estimate"):
        return hypothesis.TrialsPlan(None, floor, None, f"{plan.reason}: its design decides from {floor} trials")
    if floor is None or plan.point is None:
        return plan
    raised = [None if n is None else max(n, floor) for n in (plan.low, plan.point, plan.high)]
    reason = plan.reason or (f"its design decides from {floor} trials" if floor > (plan.point or 0) else "")
    return hypothesis.TrialsPlan(*raised, reason)


def _plan_for(unit: Unit, alpha: float, power: float, family: int) -> hypothesis.TrialsPlan:
    result = unit.result
    if isinstance(result, hypothesis.Estimate):
        if unit.shape == "within":
            return hypothesis.plan_equivalence(result, unit.margin, alpha, family, power)
        distance = {
            "greater": result.estimate,
            "below": (unit.margin or 0) - result.estimate,
            "above": result.estimate + (unit.margin or 0),
        }[unit.shape]
        if not distance > 0:
            return hypothesis.TrialsPlan(
                None, None, None, "no number of trials decides it if the observed effect is the true one"
            )
        # a one-sided test at alpha / family is the two-sided one at 2 alpha / family
        return hypothesis.plan_difference(replace(result, estimate=distance), 2 * alpha, family, power)
    if isinstance(result, hypothesis.Bootstrap):
        floor = validity.decidable_from(unit.test_type) if unit.test_type else None
        return hypothesis.TrialsPlan(None, floor, None, "a bootstrap statistic: power is not computed")
    if isinstance(result, dict) and np.isfinite(unit.estimate) and unit.estimate > 0:
        n = hypothesis.trials_for_two_samples(unit.estimate, result["sd"], 2 * alpha / family, power)
        return hypothesis.TrialsPlan(
            None, n, None, "point value only (Welch)" if n else "no number of trials decides it"
        )
    if unit.raw:
        n = next(n for n in range(3, 12) if 1 / math.factorial(n) < alpha / family)
        return hypothesis.TrialsPlan(None, n, None, f"an exact test reaches p < {alpha / family:.3g} from {n} points")
    return hypothesis.TrialsPlan(None, None, None, "no planner for this test")


def plan_text(plan: hypothesis.TrialsPlan) -> str:
    if plan.low is not None and plan.high is not None and plan.low != plan.high:
        return f"{plan.low}–{plan.high} (point {plan.point})"
    return f"{plan.high or plan.point}" if plan.high else f"≥ {plan.point} (no upper end)" if plan.point else ""


def plan_trials(claim: Claim, units: list[Unit], gaps: list, ev: Evidence, planned_family: int) -> dict:
    """Trials that would decide every undecided unit (and the gaps it needs): at α for a universal
    claim (intersection-union needs no adjustment), at α / family for an existential one
    (Bonferroni, the strictest Holm step), with the family of the planned design (every unit that
    more trials would make testable). Per unit a range (low–high, point): the trial SD's 95%
    interval on its df, the eval set's part of the variance not shrinking with trials. The
    claim's number is the largest point over its blocking units; never fewer than one more trial
    than a blocking unit has."""
    s = ev.settings
    family = 1 if claim.every else planned_family
    blocking = [u for u in units if u.status != "for"] + [g for g in gaps if g is not None and g.status != "for"]
    needs, studies, sizes, reasons, ranges = [], set(), set(), [], []
    for unit in dict.fromkeys(blocking):
        if unit.refused == ONE_PROBE_SEED:
            reasons.append(f"{unit.name}: needs several probe seeds, not more trials")
            continue
        plan = plan_for(unit, s.alpha, s.power, family)
        if plan.reason:
            reasons.append(f"{unit.name}: {plan.reason}")
        if plan.point is None:
            continue
        have = max(unit.n) if isinstance(unit.n, tuple) else int(unit.n)
        needs.append(max(plan.point, have + 1))
        ranges.append(f"{unit.name}: {plan_text(plan)}")
        studies |= set(unit.studies)
        unit_sizes = {size for _, size in filter(None, (unit.key, *unit.gaps))}
        sizes = None if sizes is None or not unit_sizes else sizes | unit_sizes  # None: a unit of unknown size
    if not needs or not studies:
        return {"trials": None, "command": None, "reasons": reasons, "ranges": ranges}
    n = max(needs)
    levels = validity.crossed_levels({u.test_type for u in blocking})  # where a study has a crossed seed_design
    command = "dvc exp run " + " ".join(trials_override(study, n, sizes, ev, levels) for study in sorted(studies))
    return {"trials": n, "command": command, "reasons": reasons, "ranges": ranges}


def trials_override(study: str, n: int, sizes: set[int] | None, ev: Evidence, levels: int) -> str:
    """`-S` raising a study to `n` trials. A study with trials per size (a mapping) gets its whole
    mapping back, with the sizes the blocking units read (`sizes`; every size where a unit's is
    unknown: None) raised to n and the others kept: one count would replace the mapping. A study
    with a crossed seed_design grows its subsets and draws in turn (trials must be their product),
    each to at least `levels` (what the blocking units' tests need: validity.crossed_levels)."""
    config = ev.studies.get(study)
    if config is not None and config.seed_design is not None:
        subsets, draws = (max(level, levels) for level in config.seed_design)
        while subsets * draws < n:
            subsets, draws = (subsets + 1, draws) if subsets <= draws else (subsets, draws + 1)
        design = f"{{subsets: {subsets}, seeds: {draws}}}"
        return f"-S 'studies.{study}.seed_design={design}' -S studies.{study}.trials={subsets * draws}"
    trials = config.trials if config is not None else n
    if not isinstance(trials, dict):
        return f"-S studies.{study}.trials={n}"
    raised = {size: max(count, n) if sizes is None or size in sizes else count for size, count in trials.items()}
    return f"-S 'studies.{study}.trials={flow(raised)}'"


# --- what a claim that did not run needs -----------------------------------------------------------------------------


MODIFIERS = ("reinit_lr_multiplier", "keep_layernorm", "epochs", "intermediate_tasks")


def resolve(value, ev: Evidence, tasks: list[str]):
    """Need placeholders: all_ks, all_layers, L, L-1, train.epochs, data.tasks."""
    L = ev.num_layers
    table = {
        "all_ks": list(range(L + 1)),
        "all_layers": list(range(1, L + 1)),
        "L": L,
        "L-1": L - 1,
        "train.epochs": ev.train.epochs if ev.train else 3,
        "data.tasks": tasks,
    }
    if isinstance(value, list):
        return [resolve(v, ev, tasks) for v in value]
    return table.get(value, value) if isinstance(value, str) else value


def matching_study(studies: dict[str, StudyConfig], need: Need, ev: Evidence, tasks: list[str]) -> StudyConfig | None:
    wanted = {m: resolve(need.modifiers.get(m), ev, tasks) for m in MODIFIERS}
    for study in studies.values():
        have = {m: getattr(study, m) for m in MODIFIERS}
        have = {m: list(v) if isinstance(v, tuple) else v for m, v in have.items()}
        if study.scheme == need.scheme and {m: v or None for m, v in have.items()} == {
            m: v or None for m, v in wanted.items()
        }:
            return study
    return None


def flow(value) -> str:
    """A value as YAML flow (what `dvc exp run -S` parses)."""
    if isinstance(value, bool):
        return "true" if value else "false"
    if isinstance(value, (list, tuple)):
        return "[" + ", ".join(flow(v) for v in value) + "]"
    if isinstance(value, dict):
        return "{" + ", ".join(f"{k}: {flow(v)}" for k, v in value.items()) + "}"
    return str(value)


def overrides_for(claim: Claim, ev: Evidence) -> dict[str, object]:
    """The params changes (dotted key, "+" for a new study) that give `claim` its runs."""
    data_tasks = list(ev.data.tasks) if ev.data else []
    small = ev.train.small_size if ev.train else 0
    probed = sorted(set(ev.probe["task"])) if not ev.probe.empty else []
    reference = next((s for s in ev.studies.values() if s.scheme == "progressive"), None)
    changes, every_task = {}, []
    for need in claim.needs:
        base_tasks = list(need.tasks) or data_tasks[:1]
        study = matching_study(ev.studies, need, ev, base_tasks)
        tasks = list(need.tasks) or (list(study.tasks) if study else base_tasks)
        tasks += [t for t in data_tasks if t not in tasks][: max(0, need.min_tasks - len(tasks))]
        sizes = list(study.sizes) if study else list(reference.sizes[:1] if reference else [128])
        if need.sizes == "two" and len(sizes) < 2:
            sizes.append(2 * max(sizes))
        if need.sizes == "small" and not any(s <= small for s in sizes):
            sizes = sizes + [small] if study else [small]
        if need.sizes == "large" and not any(s > small for s in sizes):
            sizes.append(2 * small)
        args = {k: resolve(v, ev, tasks) for k, v in need.args.items()}
        modifiers = {k: resolve(v, ev, tasks) for k, v in need.modifiers.items()}
        if study:
            key = f"studies.{study.name}"
            if not set(tasks) <= set(study.tasks):
                changes[f"{key}.tasks"] = list(study.tasks) + [t for t in tasks if t not in study.tasks]
            if sorted(sizes) != sorted(study.sizes):
                changes[f"{key}.sizes"] = sorted(sizes)
            for name, value in args.items():
                have = getattr(study, name)
                if isinstance(value, list) and have is not None and not set(value) <= set(have):
                    changes[f"{key}.{name}"] = sorted(set(have) | set(value))
        else:
            name = need.study if need.study not in ev.studies else f"{need.study}_{claim.id}"
            changes[f"+studies.{name}"] = {
                "scheme": need.scheme,
                **args,
                **modifiers,
                "tasks": tasks,
                "sizes": sorted(sizes),
                "trials": 3,
            }
        if need.probe and not set(tasks) <= set(probed):
            changes["probe.tasks"] = probed + [t for t in tasks if t not in probed]
        every_task += tasks
    missing = [t for t in dict.fromkeys(every_task) if t not in data_tasks]
    if missing:
        changes["data.tasks"] = data_tasks + missing
    if any(TASKS[t].source == "glue" for t in missing if t in TASKS):
        changes["data.glue_dir"] = "<folder with the GLUE TSVs>"
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
