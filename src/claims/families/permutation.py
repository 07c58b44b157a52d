"""Permuted pretrained layers: against the full model and scratch, and whether a permutation acts
alike on different tasks (Table 1).

Each claim is one entry of this family's CLAIMS_<seed> (the papers: src/claims/claim.py), its
builders beside it; src/claims/registry.py orders the families' entries."""

from __future__ import annotations

import math
from dataclasses import replace

import numpy as np

from src.claims.claim import SEED_001, Claim, Need, Shared, p_text
from src.claims.evidence import Evidence, grouped
from src.claims.units import Refusal, Unit, contrast_unit, design_refusal, refuse
from src.stats import correlation, hypothesis, validity

PERMUTATION = Need("permutation", "permutation")


def permutation_lowers_accuracy(ev: Evidence, shared: Shared) -> list[Unit]:
    units = []
    for (task, size), conditions in grouped(ev.conditions("permutation"), lambda c: (c.task, c.size)):
        units.append(
            contrast_unit(
                ev,
                "permutation_lowers_accuracy",
                task,
                size,
                {conditions[0].refs.full: 1, conditions[0].slug: -1},
                "full − permuted > 0",
            )
        )
    return units


def permuted_closer_to_scratch(ev: Evidence, shared: Shared) -> list[Unit]:
    units = []
    for (task, size), conditions in grouped(ev.conditions("permutation"), lambda c: (c.task, c.size)):
        refs = conditions[0].refs
        units.append(
            contrast_unit(
                ev,
                "permuted_closer_to_scratch",
                task,
                size,
                {refs.full: 0.5, refs.scratch: 0.5, conditions[0].slug: -1},
                "(full + scratch)/2 − permuted > 0 (below the midpoint)",
                gap=True,
            )
        )
    return units


RELATIVELY_HIGH = 0.5  # Table 1's "relatively high" correlations (0.72-0.83 there): Spearman rho above this


def permutation_affects_tasks_alike(ev: Evidence, shared: Shared) -> list[Unit]:
    units = []
    for (size,), conditions in grouped(ev.conditions("permutation"), lambda c: (c.size,)):
        finished = [(c.task, run) for c in conditions for run in c.finished()]
        scores: dict[str, dict[int, list[float]]] = {}
        for task, run in finished:
            scores.setdefault(task, {}).setdefault(run.trial, []).append(run.value)
        by_task = {
            task: {trial: float(np.mean(v)) for trial, v in by_trial.items()} for task, by_trial in scores.items()
        }
        tasks = sorted(by_task)
        for i, a in enumerate(tasks):
            for b in tasks[i + 1 :]:
                trials = sorted(by_task[a].keys() & by_task[b].keys())  # the same permutations
                x, y = np.array([by_task[a][t] for t in trials]), np.array([by_task[b][t] for t in trials])
                rho, n = hypothesis.spearman(x, y), len(trials)
                unit = Unit(
                    "permutation_affects_tasks_alike",
                    f"{a} ~ {b} n={size}",
                    f"Spearman ρ over the same permutations > {RELATIVELY_HIGH} (its simulated null at the margin)",
                    rho,
                    (math.nan, math.nan),
                    n,
                    margin=RELATIVELY_HIGH,
                    studies=tuple(sorted({run.study for _, run in finished})),
                    reads=((a, size), (b, size)),
                    notes=(
                        "exact permutation p of ρ > 0 (raw, one-sided) = "
                        + p_text(hypothesis.exact_spearman_p(x, y, "greater") if n >= 3 else math.nan),
                    ),
                    interval_note="no interval printed",
                )
                if not np.isfinite(rho):
                    unit = refuse(unit, Refusal.TOO_FEW, "ρ undefined: fewer than 2 distinct scores on a side")
                else:
                    unit = design_refusal(unit, "spearman-margin", n)
                    if not unit.refused:
                        p_for, p_against = correlation.spearman_above(rho, n, RELATIVELY_HIGH)
                        unit = replace(unit, p_for=p_for, p_against=p_against)
                units.append(unit)
    return units


CLAIMS_001 = (
    Claim(
        "permutation_lowers_accuracy",
        f"{SEED_001} §5, contribution 4, Fig. 3",
        "Reordering the pretrained layers significantly decreases downstream accuracy.",
        "The full model against the permuted runs, per task and size (the paper's main permutation claim).",
        "paired contrast full − permuted > 0",
        (PERMUTATION,),
        permutation_lowers_accuracy,
    ),
    Claim(
        "permuted_closer_to_scratch",
        f"{SEED_001} §5 (secondary analysis)",
        "Scrambling the layers reduces finetuning to not much above a randomly initialised network.",
        "'Not much above': below the midpoint of full and scratch (a labelled secondary analysis of the "
        "paper's qualitative wording; the main claim is permutation_lowers_accuracy).",
        "paired contrast (full + scratch)/2 − permuted > 0; needs the gap",
        (PERMUTATION,),
        permuted_closer_to_scratch,
        needs_gap=True,
        secondary=True,
    ),
    Claim(
        "permutation_affects_tasks_alike",
        f"{SEED_001} §5, Table 1",
        "A given permutation has similar effects across tasks: the paired correlations are relatively high.",
        f"'Relatively high': Spearman ρ between two tasks' scores over the same permutations (trial n uses "
        f"permutation n on every task) above {RELATIVELY_HIGH}, a minimum effect stated here (Table 1: 0.72-0.83). "
        "The exact permutation p of ρ > 0 is in the unit's notes.",
        f"test of ρ > {RELATIVELY_HIGH} by its simulated null at ρ = {RELATIVELY_HIGH} (Gaussian copula), "
        f"from {validity.MIN_TRIALS['spearman-margin'][0]} pairs",
        (replace(PERMUTATION, min_tasks=2),),
        permutation_affects_tasks_alike,
        paper_value="Spearman ρ 0.72 (SST-2, QNLI), 0.74 (SST-2, CoLA), 0.83 (QNLI, CoLA), N = 10 (Table 1)",
    ),
)
