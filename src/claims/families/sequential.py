"""Sequential finetuning: an intermediate task first, then the final task, against finetuning on
the final task directly.

Each claim is one entry of this family's CLAIMS_<seed> (the papers: src/claims/claim.py), its
builders beside it; src/claims/registry.py orders the families' entries."""

from __future__ import annotations

from src.claims.claim import SEED_004, Claim, Need, Shared
from src.claims.evidence import Evidence
from src.claims.units import Unit, contrast_unit


def intermediate_beats_direct(ev: Evidence, shared: Shared) -> list[Unit]:
    units = []
    runs = ev.runs[ev.runs["intermediate_task"].notna()] if "intermediate_task" in ev.runs else ev.runs.iloc[0:0]
    for (task, size, slug), rows in runs.groupby(["task", "size", "slug"]):
        direct = rows["ref_baseline"].iloc[0]
        units.append(
            contrast_unit(
                ev,
                "some_intermediate_task_beats_direct",
                task,
                int(size),
                {slug: 1, direct: -1},
                "after intermediate − direct > 0",
                name=f"{task} n={size} after {rows['intermediate_task'].iloc[0]}",
            )
        )
    return units


CLAIMS_004 = (
    Claim(
        "some_intermediate_task_beats_direct",
        f"{SEED_004} §6.1, abstract",
        "There are cases where finetuning on an intermediate task first beats finetuning directly on the final task.",
        "Every (final, intermediate) pair of the sequential study against direct finetuning; existential.",
        "paired contrast after intermediate − direct > 0, Holm across the report",
        (Need("progressive", "sequential", {"ks": ["L"]}, {"intermediate_tasks": "data.tasks"}, min_tasks=2),),
        intermediate_beats_direct,
        every=False,
    ),
)
