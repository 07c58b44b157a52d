"""One layer alone reinitialised, against the full model (with the paper's exception, layer 1 on
CoLA, tested as a drop).

Each claim is one entry of this family's CLAIMS_<seed> (the papers: src/claims/claim.py), its
builders beside it; src/claims/registry.py orders the families' entries."""

from __future__ import annotations

from src.claims.claim import SEED_001, Claim, Need, Shared
from src.claims.evidence import Evidence, grouped
from src.claims.units import Unit, contrast_unit


def single_layer_barely_matters(ev: Evidence, shared: Shared) -> list[Unit]:
    units, margin = [], ev.settings.single_layer_margin
    by_layer = grouped(ev.conditions("single_layer"), lambda c: (c.task, c.size, c.condition.layer))
    for (task, size, layer), conditions in by_layer:
        full, slug = conditions[0].refs.full, conditions[0].slug
        name = f"{task} n={size} layer {layer}"
        if task == "cola" and layer == 1:  # the paper's own exception: layer 1 matters on CoLA
            units.append(
                contrast_unit(
                    ev,
                    "single_layer_barely_matters",
                    task,
                    size,
                    {full: 1, slug: -1},
                    "exception: full − single layer 1 > 0 on CoLA",
                    name=name,
                    gap=True,
                )
            )
            continue
        units.append(
            contrast_unit(
                ev,
                "single_layer_barely_matters",
                task,
                size,
                {slug: 1, full: -1},
                f"|single layer − full| < {margin} (TOST)",
                name=name,
                shape="within",
                margin=margin,
                gap=True,
            )
        )
    return units


CLAIMS_001 = (
    Claim(
        "single_layer_barely_matters",
        f"{SEED_001} App. C",
        "Reinitialising a single layer has little effect on finetuning, with the exception of the first layer on CoLA.",
        "Equivalence |single − full| < report.single_layer_margin at every task, size and layer; the exception is "
        "encoded as its own test: full − single(layer 1) > 0 on CoLA.",
        "TOST per layer (exception: paired contrast); needs the gap",
        (Need("single_layer", "single_layer", {"layers": "all_layers"}),),
        single_layer_barely_matters,
        needs_gap=True,
    ),
)
