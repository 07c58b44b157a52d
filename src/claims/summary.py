"""The report's first screen and its per-paper part, as data both renderings share (src/claims/render.py):
what ran (the model beside the papers' BERT-base, the version and commit, the runs read), the tally of
verdicts, the headline numbers (full, scratch, their gap, with intervals); one generated paragraph per
paper (what is supported here, what is not supported here, what is inconclusive or has no verdict and
why, each with its effect beside the paper's own number; what did not run and the command that adds
it); and one row per claim for the details (the claim in the paper's words, its verdict with its scope,
the effect of the unit that decides it with its interval, and the figure that shows it). A decided
verdict reads "supported here" or "not supported here" (SHOWN): it holds for the model, tasks, sizes
and trials beside it, not for the paper's setting. Text is Markdown's inline subset (`code`, **bold**,
[link](#anchor)): render.py writes it as is into report.md and converts it for report.html."""

from __future__ import annotations

import math
from collections import Counter
from collections.abc import Iterable
from dataclasses import dataclass, field, fields

import numpy as np

from src.claims.claim import PAPERS, interval_text, number
from src.claims.evidence import ConditionRuns, Evidence
from src.claims.planner import plan_text
from src.claims.training import CONFOUNDED, UNDERTRAINED
from src.claims.units import COLLAPSE_LABEL
from src.claims.verdicts import (
    CONDITION_MODIFIERS,
    NO_VERDICT,
    NOT_RUN,
    Judged,
    Verdict,
    decided_by,
    error_bounds,
    flow,
)
from src.config.schema import StudyConfig
from src.stats.intervals import mean_ci

VERDICTS = ("supported", "contradicted", "inconclusive", NO_VERDICT, NOT_RUN)
# What a reader sees of a decided verdict (Verdict.text keeps supported | contradicted): a verdict on this run's
# model, tasks, sizes and trials, printed beside it, not a replication of the paper's setting.
SHOWN = {"supported": "supported here", "contradicted": "not supported here"}
# The figures drawn for claims beyond each study's own (src/figures/studies.py draws every study's under its
# name): weight change, read from the progressive runs, has its own.
FIGURE_OF_FAMILY = {"weight_change": "weight_change"}
# The model the three papers finetune, which the first screen sets beside the one that ran.
PAPERS_LAYERS = 12  # the claims name BERT-base's layers; on another depth they read the same fractions of it
PAPERS_MODEL = f"BERT-base, {PAPERS_LAYERS} layers, hidden 768, 12 heads, pretrained by masked language modelling (MLM)"
NOT_STATED = "not stated"  # a model's purpose or a paper's number that its source does not give


@dataclass(frozen=True)
class Headline:
    """The papers' premise at the focus task and size (params.yaml task, size; metrics/headline.json holds the
    means): the full model's and scratch's mean score over their finished trials, and the full model's gain, paired
    by trial; each (mean, 95% t half-width, trials)."""

    task: str
    size: int
    metric: str
    full: tuple[float, float, int]
    scratch: tuple[float, float, int]
    gap: tuple[float, float, int]

    def lines(self) -> list[str]:
        def text(estimate: tuple[float, float, int], signed: bool = False) -> str:
            mean, half, n = estimate
            shown = (lambda x: f"{x:+.3f}") if signed else (lambda x: f"{x:.3f}")
            interval = f" [{shown(mean - half)}, {shown(mean + half)}]" if np.isfinite(half) else ""
            return f"**{shown(mean)}**{interval} ({n} trials)"

        return [
            f"**Full model** (no layer reinitialised): {text(self.full)}",
            f"**Scratch** (every layer reinitialised): {text(self.scratch)}",
            f"**Gap**, full − scratch, paired by trial: {text(self.gap, signed=True)}",
            f"{self.metric} on {self.task} at {self.size} training examples; mean [95% t interval].",
        ]


def headline(evidence: Evidence, task: str, size: int) -> Headline | None:
    """The full model (k = L) and scratch (k = 0) of the plain progressive curve at (task, size), from their
    finished runs; None where either did not run there."""
    curve = evidence.curve(task, size)
    if evidence.num_layers not in curve or 0 not in curve:
        return None
    full, scratch = ({r.trial: r.value for r in curve[k].first.values() if r.ok} for k in (evidence.num_layers, 0))
    both = sorted(set(full) & set(scratch))
    return Headline(
        task,
        size,
        evidence.metric(task),
        mean_ci(list(full.values())),
        mean_ci(list(scratch.values())),
        mean_ci([full[t] - scratch[t] for t in both]),
    )


@dataclass(frozen=True)
class WhatRan:
    """What produced the report: the base model (as prepare_model recorded it), the studies as params.yaml
    declared them, the runs the report read, and the code's commit where the stage could tell."""

    model: str
    model_name: str  # the model as a verdict's scope names it: its name, type and depth
    studies: dict[str, StudyConfig]
    finished_runs: int
    failed_runs: int
    commit: str | None = None
    version: str = ""  # the project's version (src.__version__)
    headline: Headline | None = None  # None: the focus task and size have no full and scratch runs
    # Evidence.fallback_counts: (fallback, "run" | "probed task") -> how many took it
    fallbacks: dict[tuple[str, str], int] = field(default_factory=dict)
    failed: tuple[str, ...] = ()  # the failed runs named (failed_run_names), where the stage names them


# How many failed runs the first screen names; the others are counted
FAILED_NAMED = 5


def failed_run_names(conditions: Iterable[ConditionRuns]) -> tuple[str, ...]:
    """Each run that failed to train (a non-finite loss), once, as "task n=size slug trial t"."""
    return tuple(
        dict.fromkeys(
            f"{c.task} n={c.size} {c.slug} trial {run.trial}" for c in conditions for run in c.runs if not run.ok
        )
    )


def shown(text: str) -> str:
    """A verdict as the report prints it (SHOWN; undecided verdicts as they are)."""
    return SHOWN.get(text, text)


def verdict_tally(texts: Iterable[str]) -> dict[str, int]:
    """How many claims got each verdict (`texts`: their Verdict.text), every verdict named (0 too) so `dvc metrics
    diff` lines up; a verdict outside VERDICTS is counted under its own name, never dropped."""
    counts = Counter(texts)
    return {name: counts[name] for name in [*VERDICTS, *(name for name in counts if name not in VERDICTS)]}


def anchor(claim_id: str) -> str:
    return f"claim-{claim_id}"


def claim_link(claim_id: str) -> str:
    return f"[{claim_id}](#{anchor(claim_id)})"


def study_design(study: StudyConfig) -> str:
    """One study's design in a line: its scheme and arguments, tasks, sizes and trials (a mapping as YAML flow)."""
    arguments = [
        f"{f.name} {flow(getattr(study, f.name))}"
        for f in fields(study)
        if f.name not in ("name", "scheme", "tasks", "sizes", "trials")
        and getattr(study, f.name) not in (None, (), [], False)
    ]
    sizes = flow(study.sizes if isinstance(study.sizes, dict) else list(study.sizes))
    trials = flow(study.trials)
    return (
        f"**{study.name}**: {study.scheme}"
        + (f" ({', '.join(arguments)})" if arguments else "")
        + f"; tasks {', '.join(study.tasks)}; sizes {sizes}; trials {trials}"
    )


def what_ran_lines(ran: WhatRan) -> list[str]:
    """The model beside the papers' BERT-base, the code, the runs read and the fallbacks taken: the first
    screen's opening lines."""
    version = f"version {ran.version}" if ran.version else ""
    commit = f"commit `{ran.commit}`" if ran.commit else ""
    code = " at ".join(part for part in (version, commit) if part)
    more = len(ran.failed) - FAILED_NAMED
    named = ", ".join(ran.failed[:FAILED_NAMED]) + (f" and {more} more" if more > 0 else "")
    failed = (
        f", {ran.failed_runs} failed (non-finite loss, left out{': ' if named else ''}{named})"
        if ran.failed_runs
        else ""
    )
    return [
        f"**Model**: {ran.model}.",
        f"**The papers' model**: {PAPERS_MODEL}.",
        *([f"**Code**: {code}."] if code else []),
        f"**Runs read**: {ran.finished_runs} finished{failed}.",
        *([fallbacks_line(ran.fallbacks)] if ran.fallbacks else []),
    ]


def design_lines(ran: WhatRan) -> list[str]:
    """Each study as params.yaml declared it, one line each."""
    return [study_design(study) for study in ran.studies.values()]


def fallbacks_line(counts: dict[tuple[str, str], int]) -> str:
    """The fallbacks taken where params.yaml's setting could not be applied as asked, each with how many took it."""
    taken = "; ".join(f"{fallback} in {count} {unit}{'s' * (count != 1)}" for (fallback, unit), count in counts.items())
    return f"**Fallbacks** (each said in a `note:` line when taken; docs/bad_input.md): {taken}."


def confounded(v: Verdict) -> bool:
    """Whether a claim that ran reads a (task, size) the training-length check found undertrained (training.py)."""
    return v.text != NOT_RUN and any(check.status == UNDERTRAINED for check in v.training)


def training_lines(verdicts: list[Verdict]) -> list[str]:
    """The training-length check of every (task, size) a claim reads, one line each, then the claims it confounds."""
    checks = {(c.task, c.size): c for v in verdicts for c in v.training}
    lines = [checks[key].evidence() for key in sorted(checks)]
    hit = [v.id for v in verdicts if confounded(v)]
    if hit:
        lines.append(f"**{CONFOUNDED.capitalize()}** ({len(hit)} claims): " + ", ".join(map(claim_link, hit)))
    return lines


SIMULATE = "python -m tools.calibrate --tables whole-report --report-reps 200"  # the whole report under a null


def error_text(verdicts: list[Verdict], alpha: float) -> str:
    """The first screen's statement of how often a verdict of this report's design is wrong under a global null:
    per paper, the union bound verdicts.error_bounds computes from the design, and the command that measures it."""
    parts = []
    for bound in error_bounds(verdicts, alpha):
        reached = f"α for each of its {len(bound.iut)} intersection-union verdicts this design can reach"
        of = " + ".join(([f"α = {alpha} for its Holm family"] if bound.holm else []) + ([reached] if bound.iut else []))
        parts.append(f"{PAPERS[bound.paper]} at most **{bound.bound:.2f}**" + (f" ({of})" if of else ""))
    if not parts:
        return ""
    return (
        "**Wrong verdicts under a global null** (no effect of any condition, layer or probe layer on this design): "
        "the chance that at least one verdict of a paper is wrong is, for "
        + "; ".join(parts)
        + f". A union bound from the design, not a measurement; `{SIMULATE}` in this workspace measures it by "
        "simulating this design (`docs/calibration.md` has the default's)."
    )


def tally_text(tally: dict[str, int]) -> str:
    return ", ".join(f"**{count}** {shown(name)}" for name, count in tally.items())


# --- why a claim is undecided, per study ------------------------------------------------------------------------


def undecided_reason(v: Verdict) -> str:
    """Why an undecided claim has no decided verdict: its units' refusals (no verdict), or the chance that N trials
    decide it and the command that runs them (planner.plan_text), else the planner's reason (inconclusive)."""
    if v.text == NO_VERDICT:
        refusals = list(dict.fromkeys(u.unit.refused.reason for u in v.units if u.unit.refused))
        return "; ".join(refusals) or "the full-vs-scratch gap it needs gives no verdict"
    plan = v.plan
    if plan is not None and plan_text(plan):
        return plan_text(plan)
    reasons = list(dict.fromkeys(reason.partition(": ")[2] or reason for reason in (plan.reasons if plan else ())))
    return reasons[0] if reasons else "neither test is significant"


def needs_text(needs: str) -> str:
    """What a claim that did not run needs: the command that adds its runs (as code), or why none would."""
    return f"needs `{needs}`" if needs.startswith("dvc ") else needs


def grouped(entries: list[tuple[str, str]]) -> list[str]:
    """(claim id, reason) pairs as one line per distinct reason, naming its claims (linked to their rows)."""
    by_reason: dict[str, list[str]] = {}
    for claim_id, reason in entries:
        by_reason.setdefault(reason, []).append(claim_link(claim_id))
    return [f"{', '.join(ids)}: {reason}" for reason, ids in by_reason.items()]


@dataclass(frozen=True)
class StudySummary:
    """One paper's verdicts in a line (`heading`); a line per claim that ran (`lines`): what is supported here,
    what is not supported here, what is inconclusive or has no verdict and why, each with its effect
    (effect_text) beside the paper's own number; then a line per command that adds the runs of claims that did not
    run (`not_run`, which the report folds away)."""

    heading: str
    lines: list[str]
    not_run: list[str]


def scope_text(v: Verdict, model: str) -> str:
    """What a verdict holds for: the model, then the tasks, sizes and trials its units read (Verdict.scope)."""
    return "; ".join(part for part in (model, v.scope.text()) if part)


def study_summary(seed: str, verdicts: list[Verdict], model: str) -> StudySummary:
    mine = [v for v in verdicts if v.claim.paper == seed]
    tally = verdict_tally(v.text for v in mine)
    heading = f"**{PAPERS[seed]}**, {len(mine)} claims: " + ", ".join(
        f"{count} {shown(name)}" for name, count in tally.items()
    )
    decided = [
        f"**{shown(v.text).capitalize()}**: {claim_link(v.id)} ({scope_text(v, model)}). Effect: {effect_text(v)}"
        for text in SHOWN
        for v in mine
        if v.text == text
    ]
    undecided = [
        f"**{v.text.capitalize()}**: {claim_link(v.id)}: {undecided_reason(v)}. Effect: {effect_text(v)}"
        for text in ("inconclusive", NO_VERDICT)
        for v in mine
        if v.text == text
    ]
    hit = [v for v in mine if confounded(v)]
    confounding = [f"**{CONFOUNDED.capitalize()}**: " + ", ".join(claim_link(v.id) for v in hit)] if hit else []
    commands = grouped([(v.id, needs_text(v.needs)) for v in mine if v.needs is not None])
    not_run = [f"**Not run**: {line}" for line in commands]
    return StudySummary(heading, [*decided, *undecided, *confounding], not_run)


def study_summaries(verdicts: list[Verdict], model: str) -> list[StudySummary]:
    return [study_summary(seed, verdicts, model) for seed in PAPERS if any(v.claim.paper == seed for v in verdicts)]


# --- one row per claim -------------------------------------------------------------------------------------------


def deciding_unit(v: Verdict) -> Judged | None:
    """The unit whose p is (or would be) the claim's: the smallest Holm p of the side that decided it where Holm
    decides, else the largest p of the intersection-union (the unit that stands between the claim and that verdict);
    None where no unit has a p (not run, or every unit refused)."""
    units = [u for u in v.units if not u.unit.refused]
    if not units:
        return None

    def p(value: float) -> float:
        return value if np.isfinite(value) else math.inf

    claim, text = v.claim, v.text
    if decided_by(text, claim.every) == "holm":
        side = "against" if text == "contradicted" else "for"
        return min([u for u in units if u.status == side] or units, key=lambda u: p(u.adjusted))
    return max(units, key=lambda u: p(u.unit.p_for if claim.every else u.unit.p_against))


@dataclass(frozen=True)
class ClaimRow:
    id: str
    seed: str  # 001, 003, 004
    claim: str  # the hypothesis as the paper states it, with its source
    verdict: str
    effect: str
    figure: str | None  # the figure that shows it, where it was drawn


def supplying_study(v: Verdict, studies: dict[str, StudyConfig]) -> str | None:
    """The study that supplied the claim's runs: of the studies reporting its units' runs (the deciding unit's
    first), the first of its first need's scheme with the same modifiers set; a plain baseline's study, which
    reports the same units, does not have them. None where no unit's runs came from such a study."""
    need = v.claim.needs[0]
    deciding = deciding_unit(v)
    units = ([deciding] if deciding else []) + list(v.units)
    for name in dict.fromkeys(study for judged in units for study in judged.unit.studies):
        study = studies.get(name)
        if study is not None and study.scheme == need.scheme:
            present = {m for m in CONDITION_MODIFIERS if getattr(study, m) not in (None, False, (), [])}
            if present == set(need.modifiers):
                return name
    return None


def figure_of(v: Verdict, studies: dict[str, StudyConfig]) -> str:
    """The figure that shows a claim: its family's own, else that of the study that supplied its runs (each
    study's figure is drawn under the study's name), else that of the study the planner's command adds."""
    claim = v.claim
    family = claim.build.__module__.rsplit(".", 1)[-1]
    if family in FIGURE_OF_FAMILY or not claim.needs:
        return FIGURE_OF_FAMILY.get(family, family)
    return supplying_study(v, studies) or claim.needs[0].study


def effect_text(v: Verdict) -> str:
    """The deciding unit's estimate and interval, where it is and what it estimates, or why there is none; then
    the paper's own number where the seeds give one."""
    paper = f"; paper: {v.claim.paper_value or NOT_STATED}"
    if v.text == NOT_RUN:
        return "—" + paper
    deciding = deciding_unit(v)
    if deciding is None:
        return "— (no unit gives a verdict)" + paper
    unit = deciding.unit
    refused = sum(1 for u in v.units if u.unit.refused)
    of = f" (the deciding unit of {len(v.units)}" if len(v.units) > 1 else ""
    of += f"; {refused} give no verdict)" if refused else ")" if of else ""
    return f"{number(unit.estimate)} {interval_text(unit)} at {unit.name}{of}; {unit.test}{paper}"


def robustness_text(v: Verdict) -> str:
    """Whether a decided verdict survives its contrasts' robustness readings (verdicts.ROBUSTNESS_READINGS: each
    reading's p's in place of the test's, Holm again), or what it becomes under each it does not survive."""
    robust = v.robust
    if not robust:
        decided = v.text in ("supported", "contradicted")
        return "; no robustness reading (its test is not a contrast of conditions)" if decided else ""
    lost = [f"{reading}: {shown(text)}" for reading, text in robust.items() if text != v.text]
    return "; under the " + ", the ".join(lost) if lost else f"; survives the {' and the '.join(robust)}"


def collapse_text(v: Verdict) -> str:
    """A decided verdict's co-primary outcome: per unit, each condition's collapse-or-degradation rate (runs that
    (nearly) collapsed or degraded below the flag, evidence.runs_flagged, of its runs on the unit's trials) with its
    exact 95% interval (Verdict.collapse_rates); empty where its units hold no contrast of conditions."""
    by_unit: dict[str, list[str]] = {}
    for outcome in v.collapse_rates:
        rate = outcome.rate
        by_unit.setdefault(outcome.unit, []).append(
            f"{outcome.slug} {rate.collapsed}/{rate.runs} [{rate.interval[0]:.2f}, {rate.interval[1]:.2f}]"
        )
    if not by_unit:
        return ""
    return f"; {COLLAPSE_LABEL}: " + "; ".join(f"{unit}: {', '.join(rates)}" for unit, rates in by_unit.items())


def claim_rows(verdicts: list[Verdict], drawn: set[str], ran: WhatRan) -> list[ClaimRow]:
    """One row per claim; a decided verdict with its scope (scope_text) and its collapse-or-degradation rates
    (collapse_text) beside it."""
    rows = []
    for v in verdicts:
        claim, figure = v.claim, figure_of(v, ran.studies)
        scope = f" ({scope_text(v, ran.model_name)})" if v.text in SHOWN else ""
        rows.append(
            ClaimRow(
                v.id,
                claim.paper,
                f"{claim.hypothesis} ({claim.source.split(' ', 1)[1]})"
                + (" [secondary analysis]" if claim.secondary and "secondary" not in claim.source else ""),
                shown(v.text)
                + scope
                + (f" ({CONFOUNDED})" if confounded(v) else "")
                + robustness_text(v)
                + (collapse_text(v) if v.text in SHOWN else ""),
                effect_text(v),
                figure if figure in drawn else None,
            )
        )
    return rows
