"""Blocks of adjacent layers reinitialised or alone preserved (the blocks study's window): whether
the best-probing block is necessary or sufficient, which blocks help most, and whether that
differs by task.

Each claim is one entry of this family's CLAIMS_<seed> (the papers: src/claims/claim.py), its
builders beside it; src/claims/registry.py orders the families' entries."""

from __future__ import annotations

import math
from dataclasses import replace
from typing import NamedTuple

import numpy as np

from src.claims.claim import BLOCKS, PROBED, SEED_001, Claim, Shared, with_eval_part
from src.claims.evidence import ConditionRuns, Evidence, common_trials, grouped, scores_of
from src.claims.units import Refusal, Unit, contrast_unit, design_refusal, estimate_unit, refuse, shape_p
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


class BlockShares(NamedTuple):
    """One task's block-reinit runs at one size as shares of each trial's full-vs-scratch gap, (score − scratch) /
    (full − scratch), so that a metric's scale (MCC against accuracy) drops out: the blocks' starts, each trial's
    shares [T, blocks] (the trials where every block and both references finished with a gap) and their mean over
    the trials under each of the task's shared eval draws [B, blocks] (None without the runs' predictions)."""

    starts: list[int]
    shares: np.ndarray
    draws: np.ndarray | None


def block_shares(ev: Evidence, shared: Shared, conditions: list[ConditionRuns]) -> BlockShares:
    by_start = {c.condition.layer: c for c in conditions if c.condition.layer is not None}
    starts = sorted(by_start)
    task, size, refs = conditions[0].task, conditions[0].size, conditions[0].refs
    slugs = [by_start[start].slug for start in starts] + [refs.full, refs.scratch]
    trials = common_trials(ev, task, size, slugs)[0]
    scored = [scores_of(ev, task, size, slug, trials) for slug in slugs]

    def shares_of(scores: np.ndarray) -> np.ndarray:  # [..., blocks + 2] -> [..., blocks]
        with np.errstate(invalid="ignore", divide="ignore"):
            return (scores[..., :-2] - scores[..., -1:]) / (scores[..., -2:-1] - scores[..., -1:])

    shares = shares_of(np.stack([scores for _, scores in scored], axis=-1))
    metric, counts = example_metric(ev.metric(task)), shared.eval_draws.get(task)
    if metric is None or counts is None or any(p is None for p, _ in scored):
        return BlockShares(starts, shares[np.isfinite(shares).all(axis=-1)], None)
    labels = np.asarray(ev.labels[task])
    drawn = shares_of(np.stack([metric.weighted(p, labels, counts) for p, _ in scored if p is not None], axis=-1))
    return BlockShares(starts, shares[np.isfinite(shares).all(axis=-1)], np.nanmean(drawn, axis=1))


def share_difference(a: BlockShares, b: BlockShares, weights: dict[int, float]) -> hypothesis.Estimate:
    """sum_start weight * share of task a − the same of task b, by Welch over the two tasks' trials (independent)
    with each task's eval-set part of the variance (claim.with_eval_part: their eval sets are drawn apart)."""

    def contrast(values: np.ndarray, starts: list[int]) -> np.ndarray:
        return np.sum([w * values[..., starts.index(start)] for start, w in weights.items()], axis=0)

    eval_draws = (
        contrast(a.draws, a.starts) - contrast(b.draws, b.starts)
        if a.draws is not None and b.draws is not None
        else None
    )
    return with_eval_part(hypothesis.two_sample(contrast(a.shares, a.starts), contrast(b.shares, b.starts)), eval_draws)


def useful_layers_differ_by_task(ev: Evidence, shared: Shared) -> list[Unit]:
    """Per size, every pair of tasks and every block but the first: the block's share minus the first block's, one
    task against the other (share_difference, two-sided); the profiles differ where any does, Bonferroni over
    them. It can show that the profiles differ, never that they are alike (no p against)."""
    units = []
    for (size,), conditions in grouped(ev.conditions("block_reinit"), lambda c: (c.size,)):
        by_task = {
            task: block_shares(ev, shared, list(group)) for (task,), group in grouped(conditions, lambda c: (c.task,))
        }
        common = sorted(set.intersection(*(set(b.starts) for b in by_task.values()))) if by_task else []
        if len(by_task) < 2 or len(common) < 2:
            continue
        tests = {
            (x, y, start): share_difference(by_task[x], by_task[y], {start: 1, common[0]: -1})
            for i, x in enumerate(sorted(by_task))
            for y in sorted(by_task)[i + 1 :]
            for start in common[1:]
        }
        ps = {key: float(estimate.p_zero()) for key, estimate in tests.items()}
        (x, y, start), p = min(ps.items(), key=lambda item: item[1] if np.isfinite(item[1]) else math.inf)
        n = min(len(b.shares) for b in by_task.values())
        unit = Unit(
            "useful_layers_differ_by_task",
            f"n={size}: {', '.join(sorted(by_task))}",
            "some task pair's [share(block) − share(first block)] differs (Welch, two-sided, Bonferroni over "
            f"{len(tests)})",
            tests[(x, y, start)].estimate,
            (math.nan, math.nan),
            n,
            p_for=min(1.0, len(tests) * p) if np.isfinite(p) else math.nan,
            studies=tuple(sorted({run.study for c in conditions for run in c.runs if run.study})),
            reads=tuple((task, size) for task in sorted(by_task)),
            notes=(
                f"estimate: {x} − {y} at the block from layer {start} against the first (shares of each trial's "
                "full-vs-scratch gap)",
                "with each task's eval-set part of the variance"
                if all(b.draws is not None for b in by_task.values())
                else "trials only (no stored predictions): the eval sets' noise is not in the variance",
                "the test cannot show that the profiles are alike",
            ),
            interval_note="the smallest of several tests, Bonferroni: no interval",
        )
        units.append(design_refusal(unit, "welch", n))
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
    a, b = block_shares(ev, shared, sst2), block_shares(ev, shared, qnli)
    if a.starts != b.starts:
        return []
    estimate = share_difference(a, b, {a.starts[0]: 1, middle_start(a.starts): -1})
    eval_draws = a.draws is not None and b.draws is not None
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
            if eval_draws
            else "trials only (no stored predictions): each task's eval-set noise is not in the variance",
        ),
    )
    n = min(len(a.shares), len(b.shares))
    return [refuse(unit, Refusal.TOO_FEW, "fewer than 2 runs on a side") if n < 2 else design_refusal(unit, "welch", n)]


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
        "((score − scratch) / (full − scratch)), differs between tasks: for some pair of tasks, some block's share "
        "minus the first block's differs. The shares keep a metric's scale (CoLA's MCC against accuracy) from "
        "making profiles differ.",
        "Welch over the two tasks' trials with each task's eval-set part, two-sided, per task pair and block; "
        "Bonferroni over them",
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
