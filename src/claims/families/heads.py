"""One attention head reinitialised, against the full model: by layer (the first two, the last
two) and anywhere.

Each claim is one entry of this family's CLAIMS_<seed> (the papers: src/claims/claim.py), its
builders beside it; src/claims/registry.py orders the families' entries."""

from __future__ import annotations

from collections.abc import Callable

from src.claims.claim import SEED_004, Claim, Need, Shared, plain_by, refs
from src.claims.evidence import Evidence
from src.claims.units import Unit, contrast_unit

HEADS = Need("head", "heads", {"layers": [1, 2, "L-1", "L"], "heads": [0]})


def head_units(ev: Evidence, claim: str, layers: Callable[[int], set], sign: int, test: str) -> list[Unit]:
    units = []
    for (task, size, layer, head), rows in plain_by(ev, "head").groupby(["task", "size", "layer", "head_index"]):
        if int(layer) not in layers(ev.num_layers):
            continue
        full, _ = refs(rows)
        units.append(
            contrast_unit(
                ev,
                claim,
                task,
                int(size),
                {rows["slug"].iloc[0]: sign, full: -sign},
                test,
                name=f"{task} n={size} layer {int(layer)} head {int(head)}",
            )
        )
    return units


def early_heads_hurt(ev: Evidence, shared: Shared) -> list[Unit]:
    return head_units(ev, "head_reinit_in_first_two_layers_hurts", lambda L: {1, 2}, -1, "full − head reinit > 0")


def late_heads_help(ev: Evidence, shared: Shared) -> list[Unit]:
    return head_units(ev, "head_reinit_in_last_two_layers_helps", lambda L: {L - 1, L}, 1, "head reinit − full > 0")


def specific_heads_matter(ev: Evidence, shared: Shared) -> list[Unit]:
    return head_units(ev, "specific_heads_matter", lambda L: set(range(1, L + 1)), -1, "full − head reinit > 0")


CLAIMS_004 = (
    Claim(
        "head_reinit_in_first_two_layers_hurts",
        f"{SEED_004} §6.3, Fig. 7-8",
        "Reinitialising any attention head in layers 1 or 2 decreases performance (up to the 75th percentile).",
        "Every head reinitialised in layers 1-2 against the full model.",
        "paired contrast full − head reinit > 0",
        (HEADS,),
        early_heads_hurt,
    ),
    Claim(
        "head_reinit_in_last_two_layers_helps",
        f"{SEED_004} §6.3",
        "Reinitialising any attention head in the downstream layers improves performance.",
        "Every head reinitialised in layers L−1 and L against the full model.",
        "paired contrast head reinit − full > 0",
        (HEADS,),
        late_heads_help,
    ),
    Claim(
        "specific_heads_matter",
        f"{SEED_004} §6.3",
        "Specific attention heads (4 and 9 in BERT-base) hold information whose loss decreases performance.",
        "Some head reinitialised lowers the score; existential over every head and layer the heads study ran.",
        "paired contrast full − head reinit > 0, Holm across the report",
        (HEADS,),
        specific_heads_matter,
        every=False,
    ),
)
