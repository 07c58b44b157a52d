"""Permuted pretrained layers: against the full model and scratch, and whether a permutation acts
alike on different tasks (Table 1).

Each claim is one entry of this family's CLAIMS_<seed> (the papers: src/claims/claim.py), its
builders beside it; src/claims/registry.py orders the families' entries."""

from __future__ import annotations

from dataclasses import replace

from src.claims.claim import SEED_001, Claim, Need, Shared, plain_by, refs
from src.claims.evidence import Evidence
from src.claims.units import Unit, contrast_unit, exact_unit

PERMUTATION = Need("permutation", "permutation")


def permutation_lowers_accuracy(ev: Evidence, shared: Shared) -> list[Unit]:
    units = []
    for (task, size), rows in plain_by(ev, "permutation").groupby(["task", "size"]):
        full, _ = refs(rows)
        units.append(
            contrast_unit(
                ev,
                "permutation_lowers_accuracy",
                task,
                int(size),
                {full: 1, rows["slug"].iloc[0]: -1},
                "full − permuted > 0",
            )
        )
    return units


def permuted_closer_to_scratch(ev: Evidence, shared: Shared) -> list[Unit]:
    units = []
    for (task, size), rows in plain_by(ev, "permutation").groupby(["task", "size"]):
        full, scratch = refs(rows)
        units.append(
            contrast_unit(
                ev,
                "permuted_closer_to_scratch",
                task,
                int(size),
                {full: 0.5, scratch: 0.5, rows["slug"].iloc[0]: -1},
                "(full + scratch)/2 − permuted > 0 (below the midpoint)",
                gap=True,
            )
        )
    return units


def permutation_affects_tasks_alike(ev: Evidence, shared: Shared) -> list[Unit]:
    units = []
    permuted = plain_by(ev, "permutation")
    permuted = permuted[permuted["status"] == "ok"]
    for size, rows in permuted.groupby("size"):
        by_task = rows.pivot_table(index="trial", columns="task", values="value")
        tasks = list(by_task.columns)
        for i, a in enumerate(tasks):
            for b in tasks[i + 1 :]:
                pair = by_task[[a, b]].dropna()
                units.append(
                    exact_unit(
                        "permutation_affects_tasks_alike",
                        f"{a} ~ {b} n={size}",
                        "Spearman ρ over the same permutations > 0 (exact permutation test, one-sided)",
                        pair[a],
                        pair[b],
                        studies=tuple(sorted(set(rows["study"]))),
                    )
                )
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
        "A given permutation has similar effects across tasks (relatively high paired correlations).",
        "Spearman ρ > 0 between two tasks' scores over the same permutations (trial n uses permutation n on "
        "every task).",
        "exact permutation test, one-sided, raw p (at N trials the smallest p is 1/N!)",
        (replace(PERMUTATION, min_tasks=2),),
        permutation_affects_tasks_alike,
    ),
)
