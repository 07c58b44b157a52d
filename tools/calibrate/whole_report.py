"""The whole report judged by its own code in replicates of a finished run's design under a global null
(whole_report_table), each decided verdict compared with the claim's truth there (claim_truths), and its table
(whole_report_markdown)."""

from __future__ import annotations

import concurrent.futures
import functools
import time
from dataclasses import dataclass

import numpy as np
from scipy import stats

from src.claims.claim import PAPERS
from src.claims.evidence import Evidence
from src.claims.registry import CLAIMS
from src.claims.units import Unit
from src.claims.verdicts import decided_by, judge_claims, needed_gaps
from src.stats import hypothesis
from tools.calibrate.nulls import Null
from tools.calibrate.row import ALPHA, LEVEL
from tools.calibrate.run_null import REPORT_NULL, REPORT_NULLS, WEIGHT_RUN, expected_evidence, null_replicate

DECIDED = ("supported", "contradicted")
ROUNDING_ZERO = 9  # decimals an estimand on the expected evidence is rounded to: a slope of equal values is 1e-17


def unit_holds(unit: Unit, value: float) -> bool | None:
    """Whether the hypothesis `unit` tests for its claim holds where its estimand is `value`, by its shape
    (src/claims/units.py shape_p: greater > 0, within |·| < margin, below < margin, above > −margin, beyond |·| >
    margin; a bootstrap statistic: > 0, or within its margin where it has one, as verdicts.decision_interval reads
    it). None where
    `value` is undefined (e.g. k90 of a curve without gain), or where the unit is not an estimate, bootstrap or Welch
    test (an exact or F test, a variance ratio, a correlation against a margin): their truth is not read here."""
    if isinstance(unit.result, hypothesis.Bootstrap):
        shape = "greater" if unit.margin is None else "within"
    elif isinstance(unit.result, hypothesis.Estimate) or unit.test_type == "welch":
        shape = unit.shape
    else:
        return None
    if not np.isfinite(value):
        return None
    value, margin = round(float(value), ROUNDING_ZERO), unit.margin
    if shape == "greater":
        return value > 0
    assert margin is not None, f"a {shape!r} test is of a margin"
    return {
        "within": abs(value) < margin,
        "below": value < margin,
        "above": value > -margin,
        "beyond": abs(value) > margin,
    }[shape]


def _every(values) -> bool | None:
    """Three-valued AND: False where any is, True where all are, else unknown (None)."""
    return False if any(v is False for v in values) else True if all(v is True for v in values) else None


def _some(values) -> bool | None:
    """Three-valued OR: True where any is, False where all are, else unknown (None)."""
    return True if any(v is True for v in values) else False if values and all(v is False for v in values) else None


def claim_truths(expected: Evidence) -> dict[str, bool | None]:
    """Each claim's truth under the null whose expectation `expected` is (expected_evidence): each unit holds by
    unit_holds of its estimate there, with the full-vs-scratch gaps a claim that needs them needs (the rule's
    verdicts.needed_gaps); a universal claim holds where all its units do, an existential one where some unit does;
    None (unknown) where a deciding part is, and for a claim without units."""
    verdicts, _ = judge_claims(expected, plan=False)
    gaps = {u.unit.key: u.unit for v in verdicts if v.id == "full_beats_scratch" for u in v.units}
    truths = {}
    for v in verdicts:
        claim, parts = v.claim, []
        for unit in (u.unit for u in v.units):
            needed = needed_gaps(claim, unit, gaps)
            parts.append(_every([unit_holds(unit, unit.estimate), *(g and unit_holds(g, g.estimate) for g in needed)]))
        truths[claim.id] = (_every(parts) if claim.every else _some(parts)) if parts else None
    return truths


def replicate_verdicts(ev: Evidence, null_name: str, levels: dict, seed: int, replicate: int) -> tuple[dict, float]:
    """({claim: verdict}, seconds) of replicate `replicate` (its generator seeded by (seed, replicate), so that a
    replicate is the same whatever the number of processes)."""
    start = time.perf_counter()
    evidence = null_replicate(ev, REPORT_NULLS[null_name], levels, np.random.default_rng([seed, replicate]))
    verdicts, _ = judge_claims(evidence, plan=False)  # the verdicts alone: the planner would double the time
    return {v.id: v.text for v in verdicts}, time.perf_counter() - start


@dataclass(frozen=True)
class WholeReport:
    """The verdicts of every replicate of a run's design under the global null, with each claim's truth there."""

    design: str
    null: str
    seed: int
    truths: dict  # claim id: True / False / None (unknown)
    every: dict  # claim id: universal (True) or existential
    papers: dict  # claim id: its paper (Claim.paper), whose Holm family it is in
    verdicts: list  # per replicate, {claim id: verdict}
    seconds: list  # per replicate, its wall time (in its process)
    wall: float  # the whole table's wall time

    @property
    def reps(self) -> int:
        return len(self.verdicts)

    def wrong(self, claim: str, verdict: str) -> bool:
        """Supported where the claim is false, contradicted where it is true (never an undecided verdict)."""
        truth = self.truths.get(claim)
        return (verdict == "supported" and truth is False) or (verdict == "contradicted" and truth is True)

    def holm(self, claim: str, verdict: str) -> bool:
        """Whether `verdict` of `claim` is decided by Holm (verdicts.decided_by)."""
        return decided_by(verdict, self.every[claim]) == "holm"

    def any_wrong(self, keep=lambda claim, verdict: True) -> int:
        """Replicates with at least one wrong verdict among those `keep(claim, verdict)` selects."""
        return sum(any(self.wrong(c, v) and keep(c, v) for c, v in verdicts.items()) for verdicts in self.verdicts)

    def unknown(self) -> int:
        """Replicates with a decided verdict of a claim whose truth under the null is unknown (counted as right)."""
        return sum(
            any(v in DECIDED and self.truths.get(c) is None for c, v in verdicts.items()) for verdicts in self.verdicts
        )

    def papers_run(self) -> dict[str, list[str]]:
        """Each paper (PAPERS order) with claims that ran in some replicate: those claims."""
        ran = {
            paper: [c for c, of in self.papers.items() if of == paper and any(v[c] != "not run" for v in self.verdicts)]
            for paper in PAPERS
        }
        return {paper: claims for paper, claims in ran.items() if claims}

    def could_be_wrong_by_iut(self, paper: str | None = None) -> list[str]:
        """Claims (of `paper`; of every paper where None) whose intersection-union verdict would be wrong here:
        universal ones false, existential ones true."""
        return [
            c
            for c, truth in self.truths.items()
            if truth is (not self.every[c]) and (paper is None or self.papers[c] == paper)
        ]


def design_text(ev: Evidence) -> str:
    """The design a replicate keeps: finished runs per task and size (conditions x trials), probes, weight change."""
    ok = ev.runs[ev.runs["status"] == "ok"]
    parts = [
        f"{task} n={size}: {rows['slug'].nunique()} conditions, trials {sorted(set(rows['trial'].astype(int)))} "
        f"({len(rows)} runs, {int(rows['plain'].sum()) if 'plain' in rows else len(rows)} plain)"
        for (task, size), rows in ok.groupby(["task", "size"])
    ]
    for task, rows in ev.probe.groupby("task") if not ev.probe.empty else ():
        seeds = rows["seed"].nunique() if "seed" in rows else 1
        parts.append(f"probes of {task}: {seeds} seeds x {rows['layer'].nunique()} layers")
    if not ev.weight_change.empty:
        runs = ev.weight_change.groupby([c for c in WEIGHT_RUN if c in ev.weight_change], dropna=False).ngroups
        parts.append(f"weight change of {runs} runs")
    parts.append(f"eval sets: {', '.join(f'{t} N={len(y)}' for t, y in sorted(ev.labels.items()))}")
    return "; ".join(parts)


def whole_report_table(
    ev: Evidence, levels: dict, reps: int, seed: int = 0, null_name: str = REPORT_NULL, jobs: int = 1
):
    """The whole report judged in `reps` replicates of `ev`'s design under the global null (null_replicate on
    `null_name`'s SDs around `levels`, common_levels(ev)), in `jobs` processes, with each claim's truth there
    (claim_truths)."""
    truths = claim_truths(expected_evidence(ev, levels))
    work = functools.partial(replicate_verdicts, ev, null_name, levels, seed)
    start = time.perf_counter()
    if jobs > 1:
        with concurrent.futures.ProcessPoolExecutor(jobs) as pool:
            results = list(pool.map(work, range(reps), chunksize=max(1, reps // (4 * jobs))))
    else:
        results = [work(r) for r in range(reps)]
    wall = time.perf_counter() - start
    every = {claim.id: claim.every for claim in CLAIMS}
    papers = {claim.id: claim.paper for claim in CLAIMS}
    level_text = ", ".join(f"{kind} of {task}: {level:.3f}" for (kind, task), level in sorted(levels.items()))
    return WholeReport(
        f"{design_text(ev)}; common expected accuracy: {level_text}",
        null_name,
        seed,
        truths,
        every,
        papers,
        [v for v, _ in results],
        [s for _, s in results],
        wall,
    )


def _exact(count: int, n: int) -> str:
    """count / n, its rate and its exact (Clopper-Pearson) 95% interval."""
    ci = stats.binomtest(count, n).proportion_ci(LEVEL, method="exact")
    return f"{count} / {n} | {count / n:.3f} | [{ci.low:.3f}, {ci.high:.3f}]"


def _null_text(null: Null) -> str:
    rates = f"; every run collapses with probability {null.collapse}" if null.collapse else ""
    rates += f"; nearly collapses with probability {null.near_b}" if null.near_b else ""
    return f"trial SD {null.trial_sd}, example SD {null.example_sd}{rates}"


def whole_report_markdown(result: WholeReport, alpha: float = ALPHA) -> str:
    """The table of the whole report's wrong verdicts under the global null, against what the rules promise: over
    the report, then per paper (its Holm family, its intersection-union verdicts, any of its verdicts)."""
    n, iut, papers = result.reps, result.could_be_wrong_by_iut(), result.papers_run()
    lines = [
        f"Design: {result.design}.",
        "",
        f"Null: every condition of a task at one expected accuracy, every probe layer at another, every layer moving "
        f"alike (weight change: each run's layer labels permuted); the latent SDs and collapse rates of "
        f"REPORT_NULLS[{result.null!r}] ({_null_text(REPORT_NULLS[result.null])}) with the trial effect shared by a "
        f"trial's conditions and the example difficulty by a task's runs. {n} replicates, seed "
        f"{result.seed}; {np.mean(result.seconds):.1f} s per replicate (one process), {result.wall:.0f} s in all.",
        "",
        "| wrong verdicts | replicates with at least one | rate | exact 95% interval | what the rules promise |",
        "|---|---|---|---|---|",
        f"| any | {_exact(result.any_wrong(), n)} | ≤ α per intersection-union claim that could be wrong "
        f"({len(iut)}) plus α per paper's Holm family ({len(papers)}): "
        f"≤ {min(1, (len(iut) + len(papers)) * alpha):.2f} by the union bound |",
        f'| a wrong "supported" | {_exact(result.any_wrong(lambda c, v: v == "supported"), n)} | – |',
        f'| a wrong "contradicted" | {_exact(result.any_wrong(lambda c, v: v == "contradicted"), n)} | – |',
        f"| decided by Holm (universal contradicted, existential supported) | "
        f"{_exact(result.any_wrong(result.holm), n)} | ≤ α = {alpha} per paper's family, "
        f"≤ {min(1, len(papers) * alpha):.2f} across the {len(papers)} |",
        f"| decided by intersection-union (universal supported, existential contradicted) | "
        f"{_exact(result.any_wrong(lambda c, v: not result.holm(c, v)), n)} | ≤ α = {alpha} for each claim alone, "
        f"≤ {min(1, len(iut) * alpha):.2f} for the {len(iut)} that could be wrong |",
        f"| (decided, truth under the null unknown: counted as right) | "
        f"{result.unknown()} / {n} | {result.unknown() / n:.3f} | – | – |",
        "",
        "| paper | wrong verdicts | replicates with at least one | rate | exact 95% interval | what the rules "
        "promise |",
        "|---|---|---|---|---|---|",
        *_paper_lines(result, alpha),
        "",
        "| claim | universal | true under the null | supported | contradicted | undecided | wrong | rate | "
        "exact 95% interval |",
        "|---|---|---|---|---|---|---|---|---|",
    ]
    for claim, truth in result.truths.items():
        got = [verdicts[claim] for verdicts in result.verdicts]
        if all(v == "not run" for v in got):
            continue
        wrong = sum(result.wrong(claim, v) for v in got)
        truth_text = {True: "yes", False: "no", None: "unknown"}[truth]
        lines.append(
            f"| {claim} | {'yes' if result.every[claim] else 'no'} | {truth_text} | {got.count('supported')} | "
            f"{got.count('contradicted')} | {n - got.count('supported') - got.count('contradicted')} | "
            f"{_exact(wrong, n)} |"
        )
    return "\n".join(lines)


def _paper_lines(result: WholeReport, alpha: float) -> list[str]:
    """Per paper that ran: the replicates with a wrong verdict of its claims decided by Holm (its family's promise:
    ≤ α), by intersection-union (≤ α per claim) and of any kind (the union bound)."""
    n, lines = result.reps, []
    for paper, ran in result.papers_run().items():
        iut = result.could_be_wrong_by_iut(paper)

        def mine(keep):
            return lambda c, v: result.papers[c] == paper and keep(c, v)

        lines += [
            f"| {paper} ({len(ran)} claims ran) | decided by Holm | {_exact(result.any_wrong(mine(result.holm)), n)} "
            f"| ≤ α = {alpha} familywise |",
            f"| {paper} | decided by intersection-union | "
            f"{_exact(result.any_wrong(mine(lambda c, v: not result.holm(c, v))), n)} | ≤ α for each claim alone, "
            f"≤ {min(1, len(iut) * alpha):.2f} for the {len(iut)} that could be wrong |",
            f"| {paper} | any | {_exact(result.any_wrong(mine(lambda c, v: True)), n)} | "
            f"≤ {min(1, (len(iut) + 1) * alpha):.2f} by the union bound |",
        ]
    return lines
