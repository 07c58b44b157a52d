"""Blocks of adjacent layers reinitialised or alone preserved (the blocks study's window): whether
the best-probing block is necessary or sufficient, which blocks help most, and whether that
differs by task.

Each claim is one entry of this family's CLAIMS_<seed> (the papers: src/claims/claim.py), its
builders beside it; src/claims/registry.py orders the families' entries."""

from __future__ import annotations

import math
from collections import Counter
from dataclasses import replace

import numpy as np
import pandas as pd
import statsmodels.formula.api as smf
from statsmodels.stats.anova import anova_lm

from src.claims.claim import BLOCKS, PROBED, SEED_001, Claim, Shared, with_eval_part
from src.claims.evidence import ConditionRuns, Evidence, Run, common_trials, grouped, scores_of
from src.claims.units import Refusal, Refused, Unit, contrast_unit, design_refusal, estimate_unit, refuse, shape_p
from src.stats import hypothesis
from src.tasks.metrics import example_metric


def highest_probing_window(ev: Evidence, shared: Shared, task: str, window: int) -> int | None:
    """The start of the `window`-layer block with the highest mean probe score (layers 1..L)."""
    if task not in shared.probes:
        return None
    probe = shared.probes[task].mean[1:]
    means = [probe[s : s + window].mean() for s in range(len(probe) - window + 1)]
    return int(np.argmax(means)) + 1


def block_units(
    ev: Evidence, shared: Shared, claim: str, scheme: str, against: str, shape: str, margin: float, test: str
) -> list[Unit]:
    """The highest-probing block (reinitialised or alone preserved: `scheme`) against the full
    model or scratch (`against`), a paired contrast of `shape` and `margin` (contrast_unit's)."""
    units = []
    for (task, size), conditions in grouped(ev.conditions(scheme), lambda c: (c.task, c.size)):
        window = conditions[0].condition.window
        start = highest_probing_window(ev, shared, task, window) if window is not None else None
        chosen = [c for c in conditions if c.condition.layer == start]
        if start is None or not chosen:
            continue
        refs = conditions[0].refs
        reference = refs.full if against == "full" else refs.scratch
        unit = contrast_unit(
            ev,
            claim,
            task,
            size,
            {chosen[0].slug: 1, reference: -1},
            test,
            name=f"{task} n={size} layers {start}-{start + window - 1}",
            shape=shape,
            margin=margin,
            gap=True,
        ).noted(
            f"block chosen by the highest mean probe score ({shared.probes[task].seeds} probe seed(s); "
            "the choice is not resampled)"
        )
        units.append(unit)
    return units


def high_probing_not_necessary(ev: Evidence, shared: Shared) -> list[Unit]:
    m = ev.settings.block_margin
    return block_units(
        ev,
        shared,
        "high_probing_layers_not_necessary",
        "block_reinit",
        "full",
        "above",
        m,
        f"reinit(highest-probing block) − full > −{m} (non-inferiority)",
    )


def high_probing_not_sufficient(ev: Evidence, shared: Shared) -> list[Unit]:
    m = ev.settings.block_margin
    return block_units(
        ev,
        shared,
        "high_probing_layers_not_sufficient",
        "block_preserve",
        "full",
        "below",
        -m,
        f"preserve(highest-probing block) − full < −{m} (falls short of the full model by more than the margin)",
    )


def high_probing_not_sufficient_vs_scratch(ev: Evidence, shared: Shared) -> list[Unit]:
    m = ev.settings.block_margin
    return block_units(
        ev,
        shared,
        "high_probing_layers_not_sufficient_by_section_4",
        "block_preserve",
        "scratch",
        "below",
        m,
        f"preserve(highest-probing block) − scratch < {m} (non-superiority)",
    )


def gap_normalised(ev: Evidence, c: ConditionRuns) -> list[tuple[Run, float]]:
    """(run, (score − scratch) / (full − scratch)) of each finished run of `c` whose trial has its full and scratch
    runs with a gap: its score as a share of that trial's full-vs-scratch gap, so that a metric's scale (MCC against
    accuracy) drops out."""
    full = ev.condition_runs(c.task, c.size, c.refs.full).value
    scratch = ev.condition_runs(c.task, c.size, c.refs.scratch).value
    return [
        (run, (run.value - scratch[run.trial]) / (full[run.trial] - scratch[run.trial]))
        for run in c.finished()
        if run.trial in full and run.trial in scratch and full[run.trial] != scratch[run.trial]
    ]


def useful_layers_differ_by_task(ev: Evidence, shared: Shared) -> list[Unit]:
    """Two-way ANOVA (statsmodels) of gap-normalised block-reinit scores (gap_normalised) on task × block, with
    each task's trials as blocks (a trial's full and scratch runs normalise all its blocks): the interaction's F
    test. It can show that the profiles differ, never that they are alike (no p against)."""
    units = []
    for (size,), conditions in grouped(ev.conditions("block_reinit"), lambda c: (c.size,)):
        runs = [
            (c.task, c.condition.layer, run.trial, run.study, share)
            for c in conditions
            for run, share in gap_normalised(ev, c)
        ]
        tasks, cells = sorted({task for task, *_ in runs}), Counter((task, layer) for task, layer, *_ in runs)
        if len(tasks) < 2 or len({layer for _, layer in cells}) < 2:
            continue
        frame = pd.DataFrame(runs, columns=["task", "layer", "trial", "study", "value"])
        fit = smf.ols("value ~ C(task) * C(layer) + C(task):C(trial)", data=frame).fit()
        table = anova_lm(fit, typ=2)
        term = "C(task):C(layer)"
        p = float(table.loc[term, "PR(>F)"]) if term in table.index else math.nan
        unit = Unit(
            "useful_layers_differ_by_task",
            f"n={size}: {', '.join(tasks)}",
            "task × block interaction in gap-normalised block-reinit scores (two-way ANOVA F, trials as blocks)",
            float(table.loc[term, "F"]) if np.isfinite(p) else math.nan,
            (math.nan, math.nan),
            min(cells.values()),
            p_for=p,
            studies=tuple(sorted({study for *_, study, _ in runs})),
            reads=tuple((task, size) for task in tasks),
            notes=(
                "estimate is the F statistic; scores as shares of their trial's full-vs-scratch gap; the test cannot "
                "show that the profiles are alike",
                "assumes normal errors and a gap large against its trial noise (the share is then near linear)",
            ),
            refused=None
            if np.isfinite(p)
            else Refused(Refusal.ONE_RUN_PER_CELL, "one run per cell: no residual variance"),
            interval_note="an F statistic: no interval",
        )
        units.append(unit)
    return units


def block_pair_units(ev: Evidence, claim: str, scheme: str, pairs, tasks: tuple = (), gap: bool = False) -> list[Unit]:
    """Two blocks of one scheme (reinitialised or alone preserved) against each other per task and
    size: `pairs(task, starts, L)` gives (block a's start, block b's start, test) for a − b > 0, or None."""
    units = []
    for (task, size), conditions in grouped(ev.conditions(scheme), lambda c: (c.task, c.size)):
        by_start = {c.condition.layer: c.slug for c in conditions}
        pair = pairs(task, sorted(by_start), ev.num_layers) if not tasks or task in tasks else None
        if pair is None or pair[0] == pair[1] or not {pair[0], pair[1]} <= set(by_start):
            continue
        a, b, test = pair
        units.append(contrast_unit(ev, claim, task, size, {by_start[a]: 1, by_start[b]: -1}, test, gap=gap))
    return units


def early_layers_help_most(ev: Evidence, shared: Shared) -> list[Unit]:
    test = "preserve(first block) − preserve(last block) > 0"
    return block_pair_units(
        ev, "early_layers_help_most", "block_preserve", lambda task, starts, L: (starts[0], starts[-1], test), gap=True
    )


def middle_start(starts: list[int]) -> int:
    """The start of the middle block among `starts` (layers 5-7 of BERT-base's 12 in windows of 3)."""
    return starts[(len(starts) - 1) // 2]


def first_minus_middle(
    ev: Evidence, shared: Shared, conditions: list[ConditionRuns]
) -> tuple[np.ndarray, np.ndarray | None]:
    """Per trial, reinit(first block) − reinit(middle block) as a share of the trial's full-vs-scratch gap: how
    much more removing the middle block costs than removing the first; and its mean over the trials under each of
    the task's shared eval draws (None without the runs' predictions)."""
    by_start = {c.condition.layer: c for c in conditions if c.condition.layer is not None}
    starts = sorted(by_start)
    first, middle = by_start[starts[0]], by_start[middle_start(starts)]
    task, size = first.task, first.size
    slugs = [first.slug, middle.slug, first.refs.full, first.refs.scratch]
    trials = common_trials(ev, task, size, slugs)[0]
    scored = [scores_of(ev, task, size, slug, trials) for slug in slugs]
    a, b, full, scratch = (scores for _, scores in scored)
    with np.errstate(invalid="ignore", divide="ignore"):
        shares = (a - b) / (full - scratch)
    metric, counts = example_metric(ev.metric(task)), shared.eval_draws.get(task)
    if metric is None or counts is None or any(p is None for p, _ in scored):
        return shares[np.isfinite(shares)], None
    labels = np.asarray(ev.labels[task])
    a, b, full, scratch = (metric.weighted(p, labels, counts) for p, _ in scored if p is not None)
    with np.errstate(invalid="ignore", divide="ignore"):
        return shares[np.isfinite(shares)], np.nanmean((a - b) / (full - scratch), axis=-1)


def sst2_middle_qnli_early(ev: Evidence, shared: Shared) -> list[Unit]:
    """SST-2's first-minus-middle share against QNLI's, each task at its largest size: Welch over trials (the
    tasks' runs are independent) with each task's eval-set part of the variance (claim.with_eval_part: the two
    tasks' eval sets are drawn independently)."""
    largest = {}
    for (task, size), conditions in grouped(ev.conditions("block_reinit"), lambda c: (c.task, c.size)):
        if task in ("sst2", "qnli") and len(conditions) > 1:
            largest[task] = (size, conditions)  # grouped orders sizes: the last is the largest
    if set(largest) != {"sst2", "qnli"}:
        return []
    (sst2_size, sst2), (qnli_size, qnli) = largest["sst2"], largest["qnli"]
    (a, a_draws), (b, b_draws) = first_minus_middle(ev, shared, sst2), first_minus_middle(ev, shared, qnli)
    eval_draws = a_draws - b_draws if a_draws is not None and b_draws is not None else None
    estimate = with_eval_part(hypothesis.two_sample(a, b), eval_draws)
    unit = estimate_unit(
        "sst2_needs_middle_qnli_needs_early_layers",
        f"sst2 n={sst2_size} vs qnli n={qnli_size}",
        "Welch over trials: [reinit(first) − reinit(middle)] as shares of the gap, SST-2 − QNLI > 0",
        estimate,
        *shape_p(estimate, "greater", None),
        studies=tuple(sorted({run.study for c in sst2 + qnli for run in c.runs if run.study})),
        reads=(("sst2", sst2_size), ("qnli", qnli_size)),
        notes=(
            "shares of each trial's full-vs-scratch gap, so the two tasks' gaps do not weigh in",
            "with each task's eval-set part of the variance (its draws, the trials held)"
            if eval_draws is not None
            else "trials only (no stored predictions): each task's eval-set noise is not in the variance",
        ),
    )
    if min(len(a), len(b)) < 2:
        return [refuse(unit, Refusal.TOO_FEW, "fewer than 2 runs on a side")]
    return [design_refusal(unit, "welch", min(len(a), len(b)))]


CLAIMS_001 = (
    Claim(
        "high_probing_layers_not_necessary",
        f"{SEED_001} §3-4, Fig. 1 caption",
        "Probing does not indicate which layers are necessary: removing the best-probing layers need not hurt.",
        "The block (of the blocks study's window) with the highest mean probe score, reinitialised, stays within "
        "report.block_margin of the full model (the paper's 'necessary' = performance decreases when removed).",
        "paired non-inferiority reinit(block) − full > −margin; needs the gap",
        (BLOCKS, PROBED),
        high_probing_not_necessary,
        needs_gap=True,
    ),
    Claim(
        "high_probing_layers_not_sufficient",
        f"{SEED_001} abstract, §3-4",
        "Layers with high probing accuracy on downstream GLUE tasks are not sufficient for high accuracy on those "
        "tasks.",
        "'Not sufficient for high accuracy': the block (of the blocks study's window) with the highest mean probe "
        "score, alone preserved, falls short of the full model by more than report.block_margin "
        "(§4's comparison with scratch is its own entry).",
        "paired contrast preserve(block) − full < −margin; needs the gap",
        (BLOCKS, PROBED),
        high_probing_not_sufficient,
        needs_gap=True,
    ),
    Claim(
        "high_probing_layers_not_sufficient_by_section_4",
        f"{SEED_001} §4 (secondary analysis)",
        "Sufficient means 'performance is higher than scratch when they are kept' (§4): the best-probing layers, "
        "kept alone, do not beat scratch by much.",
        "That block alone preserved stays below scratch + report.block_margin (§4's definition of 'sufficient'; "
        "a labelled secondary analysis beside the abstract's statement, high_probing_layers_not_sufficient).",
        "paired non-superiority preserve(block) − scratch < margin; needs the gap",
        (BLOCKS, PROBED),
        high_probing_not_sufficient_vs_scratch,
        needs_gap=True,
        secondary=True,
    ),
    Claim(
        "useful_layers_differ_by_task",
        f"{SEED_001} §4, contribution 3",
        "The layers most beneficial to finetuning differ by task.",
        "The profile over blocks of block-reinit scores, each as a share of its trial's full-vs-scratch gap "
        "((score − scratch) / (full − scratch)), differs between tasks: the task × block interaction. The shares "
        "keep a metric's scale (CoLA's MCC against accuracy) from making profiles differ.",
        "two-way ANOVA F test of the interaction on gap-normalised scores, trials as blocks (statsmodels)",
        (replace(BLOCKS, min_tasks=2),),
        useful_layers_differ_by_task,
    ),
    Claim(
        "early_layers_help_most",
        f"{SEED_001} §4",
        "The earlier layers appear to be generally more helpful for finetuning than the later ones.",
        "The first block preserved alone against the last block preserved alone, per task and size.",
        "paired contrast preserve(first) − preserve(last) > 0; needs the gap",
        (BLOCKS,),
        early_layers_help_most,
        needs_gap=True,
    ),
    Claim(
        "sst2_needs_middle_qnli_needs_early_layers",
        f"{SEED_001} §4, Fig. 2",
        "SST-2 appears to be particularly damaged by the removal of middle layers, while QNLI appears to be less "
        "able to reconstruct processing in the early layers.",
        "Between the tasks, as Fig. 2 compares them: how much more reinitialising the middle block (layers 5-7 of "
        "12) costs than reinitialising the first, reinit(first) − reinit(middle) as shares of each trial's "
        "full-vs-scratch gap, is larger on SST-2 than on QNLI (each task at its largest size).",
        "Welch over trials of SST-2's [reinit(first) − reinit(middle)] share − QNLI's > 0",
        (replace(BLOCKS, tasks=("sst2", "qnli"), min_tasks=2),),
        sst2_middle_qnli_early,
    ),
)
