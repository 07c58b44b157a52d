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

from src.claims.claim import BLOCKS, PROBED, SEED_001, Claim, Shared
from src.claims.evidence import Evidence, grouped
from src.claims.units import Refusal, Refused, Unit, contrast_unit


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


def useful_layers_differ_by_task(ev: Evidence, shared: Shared) -> list[Unit]:
    """Two-way ANOVA (statsmodels) of block-reinit scores on task × block: the interaction's F
    test. It can show that the profiles differ, never that they are alike (no p against)."""
    units = []
    for (size,), conditions in grouped(ev.conditions("block_reinit"), lambda c: (c.size,)):
        runs = [(c.task, c.condition.layer, run.study, run.value) for c in conditions for run in c.finished()]
        tasks, cells = sorted({task for task, *_ in runs}), Counter((task, layer) for task, layer, *_ in runs)
        if len(tasks) < 2 or len({layer for _, layer in cells}) < 2:
            continue
        fit = smf.ols(
            "value ~ C(task) * C(layer)", data=pd.DataFrame(runs, columns=["task", "layer", "study", "value"])
        ).fit()
        table = anova_lm(fit, typ=2)
        p = float(table.loc["C(task):C(layer)", "PR(>F)"]) if "C(task):C(layer)" in table.index else math.nan
        unit = Unit(
            "useful_layers_differ_by_task",
            f"n={size}: {', '.join(tasks)}",
            "task × block interaction in block-reinit scores (two-way ANOVA F)",
            float(table.loc["C(task):C(layer)", "F"]) if np.isfinite(p) else math.nan,
            (math.nan, math.nan),
            min(cells.values()),
            p_for=p,
            studies=tuple(sorted({study for *_, study, _ in runs})),
            reads=tuple((task, size) for task in tasks),
            notes=("estimate is the F statistic; the test cannot show that the profiles are alike",),
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


def sst2_middle_qnli_early(ev: Evidence, shared: Shared) -> list[Unit]:
    def pair(task, starts, L):
        first, middle = starts[0], middle_start(starts)
        if task == "sst2":
            return first, middle, "reinit(first block) − reinit(middle block) > 0 on SST-2"
        return middle, first, "reinit(middle block) − reinit(first block) > 0 on QNLI"

    return block_pair_units(ev, "sst2_needs_middle_qnli_needs_early_layers", "block_reinit", pair, ("sst2", "qnli"))


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
        "The profile of block-reinit scores over blocks differs between tasks: the task × block interaction.",
        "two-way ANOVA F test of the interaction (statsmodels)",
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
        "Block reinitialisation: on SST-2 the middle block (layers 5-7 of 12) reinitialised scores below the first "
        "block reinitialised; on QNLI the first block reinitialised scores below the middle one.",
        "paired contrast per task: reinit(first) − reinit(middle) > 0 on SST-2, the reverse on QNLI",
        (replace(BLOCKS, tasks=("sst2", "qnli")),),
        sst2_middle_qnli_early,
    ),
)
