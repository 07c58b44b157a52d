"""One attention head reinitialised, against the full model: by layer (the first two, the last
two), the paper's heads 4 and 9, and whether heads matter at all.

Huang et al. ran every head of layers 1, 2, 11 and 12 (§4.3.1: 12 heads x 4 layers x 2 tasks); the
claims about "any head" of a layer and its percentiles need every head of the layer and are not run
on fewer (their command asks for every head: `heads` = 0..H-1). Heads are numbered from 0 here
(`head_index`) and from 1 in the paper: its heads 4 and 9 are 3 and 8.

Each claim is one entry of this family's CLAIMS_<seed> (the papers: src/claims/claim.py), its
builders beside it; src/claims/registry.py orders the families' entries."""

from __future__ import annotations

import math
from collections.abc import Callable
from dataclasses import replace
from typing import cast

import numpy as np

from src.claims.claim import SEED_004, Claim, Need, Shared
from src.claims.evidence import Evidence, grouped
from src.claims.units import Unit, contrast_unit
from src.stats import hypothesis

HEADS = Need("head", "heads", {"layers": [1, 2, "L-1", "L"], "heads": [0]})
EVERY_HEAD = replace(HEADS, args={"layers": [1, 2, "L-1", "L"], "heads": "all_heads"})
PAPER_HEADS = (3, 8)  # the paper's heads 4 and 9 (Figs. 9-10 number them from 1)
SPECIFIC_HEADS = replace(HEADS, args={"layers": [1, 2, "L-1", "L"], "heads": list(PAPER_HEADS)})
FIRST_TWO, LAST_TWO, EVERY_LAYER = (lambda L: {1, 2}), (lambda L: {L - 1, L}), (lambda L: set(range(1, L + 1)))
PERCENTILE = 0.75  # "up to the 75th percentile" (§6.3)


def head_groups(ev: Evidence, layers: Callable[[int], set], every_head: bool) -> dict:
    """(task, size, layer) -> ({head: slug}, the full model's slug) for the head runs at `layers`;
    with `every_head` only the layers where every head of the model ran (none where the number of
    heads is unknown)."""
    groups = {}
    for (task, size, layer), conditions in grouped(
        ev.conditions("head"), lambda c: (c.task, c.size, c.condition.layer)
    ):
        by_head = {c.condition.head_index: c.slug for c in conditions}
        if layer in layers(ev.num_layers) and (
            not every_head or (ev.num_heads and set(by_head) == set(range(ev.num_heads)))
        ):
            groups[(task, size, layer)] = (by_head, conditions[0].refs.full)
    return groups


def head_units(
    ev: Evidence,
    claim: str,
    layers: Callable[[int], set],
    sign: int,
    test: str,
    heads: tuple | None = None,
    every_head: bool = False,
    **shape,
) -> list[Unit]:
    """sign * (head reinit − full) per head (of `heads`, every head run where None) at `layers`."""
    units = []
    for (task, size, layer), (by_head, full) in head_groups(ev, layers, every_head).items():
        for head in sorted(h for h in by_head if heads is None or h in heads):
            units.append(
                contrast_unit(
                    ev,
                    claim,
                    task,
                    size,
                    {by_head[head]: sign, full: -sign},
                    test,
                    name=f"{task} n={size} layer {layer} head {head}",
                    **shape,
                )
            )
    return units


def percentile_units(ev: Evidence, claim: str, layers: Callable[[int], set]) -> list[Unit]:
    """Per layer with every head run: "up to the 75th percentile, reinitialising a head lowers the
    score", i.e. at least m = ⌈0.75 H⌉ of its H heads do. Each head's paired contrast full − head > 0,
    Holm within the layer; at least m rejections at α shows at least m heads that lower it (Holm holds
    the familywise rate, so with fewer such heads some rejection is false with probability ≤ α): p for
    is the m-th smallest Holm p, p against the (H − m + 1)-th smallest Holm p of the heads' tests the
    other way."""
    units = []
    for (task, size, layer), (by_head, full) in head_groups(ev, layers, every_head=True).items():
        heads = [
            contrast_unit(ev, claim, task, size, {full: 1, slug: -1}, "full − head reinit > 0")
            for _, slug in sorted(by_head.items())
        ]
        count, m = len(heads), math.ceil(PERCENTILE * len(heads))
        unit = Unit(
            claim,
            f"{task} n={size} layer {layer} ({count} heads)",
            f"at least ⌈{PERCENTILE} H⌉ = {m} of {count} heads: full − head reinit > 0 (Holm within the layer); "
            f"estimate: the {PERCENTILE:.0%} percentile of head reinit − full",
            float(np.percentile([-h.estimate for h in heads], 100 * PERCENTILE)),
            (math.nan, math.nan),
            min(cast(int, h.n) for h in heads),  # a contrast unit's n: its trials
            studies=tuple(sorted({s for h in heads for s in h.studies})),
            key=(task, size),
            test_type=heads[0].test_type,
            collapse={slug: rate for h in heads for slug, rate in h.collapse.items()},  # full's and each head's
            refused=next((h.refused for h in heads if h.refused), None),
            interval_note="a count of heads: no interval",
        )
        if not unit.refused:
            p_for = sorted(hypothesis.holm([h.p_for for h in heads]))
            p_against = sorted(hypothesis.holm([h.p_against for h in heads]))
            unit = replace(unit, p_for=p_for[m - 1], p_against=p_against[count - m]).noted(
                f"{sum(p < ev.settings.alpha for p in p_for)} of {count} heads lower it after Holm"
            )
        units.append(unit)
    return units


def early_heads_hurt(ev: Evidence, shared: Shared) -> list[Unit]:
    return percentile_units(ev, "head_reinit_in_first_two_layers_hurts", FIRST_TWO)


def late_heads_help(ev: Evidence, shared: Shared) -> list[Unit]:
    return head_units(ev, "head_reinit_in_last_two_layers_helps", LAST_TWO, 1, "head reinit − full > 0")


def every_late_head_helps(ev: Evidence, shared: Shared) -> list[Unit]:
    claim = "any_head_reinit_in_last_two_layers_helps"
    return head_units(ev, claim, LAST_TWO, 1, "head reinit − full > 0", every_head=True)


def specific_heads_matter(ev: Evidence, shared: Shared) -> list[Unit]:
    claim, heads = "specific_heads_matter", PAPER_HEADS
    return head_units(ev, claim, EVERY_LAYER, -1, "full − head reinit > 0", heads=heads)


def heads_barely_matter(ev: Evidence, shared: Shared) -> list[Unit]:
    margin = ev.settings.single_layer_margin
    test = f"|head reinit − full| < {margin} (TOST)"
    claim = "head_reinit_no_significant_impact"
    return head_units(ev, claim, EVERY_LAYER, 1, test, shape="within", margin=margin)


def late_heads_cost_less(ev: Evidence, shared: Shared) -> list[Unit]:
    """Per task and size: the mean over the heads run in layers L−1 and L of head reinit − full, against the same
    mean over layers 1 and 2 (the full model cancels): late − early > 0."""
    units: list[Unit] = []
    by_size: dict[tuple[str, int], dict[str, list[str]]] = {}
    for (task, size, layer), (by_head, _) in head_groups(ev, lambda L: FIRST_TWO(L) | LAST_TWO(L), False).items():
        side = "late" if layer in LAST_TWO(ev.num_layers) else "early"
        by_size.setdefault((task, size), {"early": [], "late": []})[side] += list(by_head.values())
    for (task, size), sides in by_size.items():
        if sides["early"] and sides["late"]:
            weights = {slug: 1 / len(sides["late"]) for slug in sides["late"]}
            weights |= {slug: -1 / len(sides["early"]) for slug in sides["early"]}
            test = "mean head reinit in layers L−1, L − mean head reinit in layers 1, 2 > 0"
            name = f"{task} n={size} ({len(sides['late'])} late, {len(sides['early'])} early heads)"
            units.append(
                contrast_unit(
                    ev, "head_reinit_costs_less_downstream_than_upstream", task, size, weights, test, name=name
                )
            )
    return units


def head_on_average(ev: Evidence, claim: str, head: int, sign_of, tasks: tuple = ()) -> list[Unit]:
    """Per task (of `tasks`, every one where empty) and size: sign_of(task) × (the mean over the layers it ran of
    head `head` reinitialised − full) > 0 (the paper's "on average": over layers 1, 2, L−1 and L)."""
    units: list[Unit] = []
    by_size: dict[tuple[str, int], tuple[list[str], str]] = {}
    for (task, size, _), (by_head, full) in head_groups(ev, EVERY_LAYER, False).items():
        if head in by_head and (not tasks or task in tasks):
            by_size.setdefault((task, size), ([], full))[0].append(by_head[head])
    for (task, size), (slugs, full) in by_size.items():
        sign = sign_of(task)
        weights = {slug: sign / len(slugs) for slug in slugs} | {full: -sign}
        what = f"mean over {len(slugs)} layers of head {head} reinit − full"
        units.append(
            contrast_unit(
                ev,
                claim,
                task,
                size,
                weights,
                f"{what} > 0" if sign > 0 else f"−({what}) > 0",
                name=f"{task} n={size} head {head}",
            )
        )
    return units


HEAD_12 = 11  # the paper's head 12 of BERT-base's 12 (head_index counts from 0)


def head_12_helps(ev: Evidence, shared: Shared) -> list[Unit]:
    return head_on_average(ev, "head_12_reinit_helps_on_average", HEAD_12, lambda task: 1, ("cola", "stsb"))


def head_1_roles(ev: Evidence, shared: Shared) -> list[Unit]:
    sign = lambda task: 1 if task == "cola" else -1  # noqa: E731 - the paper's example: CoLA up, STS-B down
    return head_on_average(ev, "head_1_reinit_helps_cola_hurts_stsb", 0, sign, ("cola", "stsb"))


FIG5 = "(Fig. 5: CoLA, head reinit − full in MCC, baseline 0.526, one run each)"  # 004's per-head table

CLAIMS_004 = (
    Claim(
        "head_reinit_no_significant_impact",
        f"{SEED_004} §4.3.2 (the experiment's hypothesis)",
        "Reinitialising attention heads will not significantly impact performance.",
        "Every head the heads study reinitialised stays within report.single_layer_margin of the full model "
        "(the margin of 'a single layer barely matters').",
        "TOST |head reinit − full| < margin per head",
        (HEADS,),
        heads_barely_matter,
        paper_value=f"every head of layers 1, 2, 11 and 12 within −0.047 … +0.020 {FIG5}",
    ),
    Claim(
        "head_reinit_in_first_two_layers_hurts",
        f"{SEED_004} §6.3, Figs. 7-8",
        "If we reinitialise any attention head in layers 1 or 2, the performance, up to the 75th percentile, will "
        "decrease.",
        "Per layer 1 and 2, with every head of the layer run as the paper did: at least ⌈0.75 H⌉ of its H heads "
        "lower the score (the 75th percentile of head reinit − full below 0). Not run on fewer heads.",
        "paired contrast full − head reinit > 0 per head, Holm within the layer; the ⌈0.75 H⌉-th Holm p",
        (EVERY_HEAD,),
        early_heads_hurt,
        paper_value=f"layer 1: −0.026 … +0.011, 3 of 12 heads above 0; layer 2: −0.047 … 0, none above 0 {FIG5}",
    ),
    Claim(
        "head_reinit_in_last_two_layers_helps",
        f"{SEED_004} abstract",
        "Reinitialising certain attention heads at top layers can even improve the model performance.",
        "Some head reinitialised in layers L−1 and L beats the full model; existential over the heads run there.",
        "paired contrast head reinit − full > 0, Holm across its paper's claims",
        (HEADS,),
        late_heads_help,
        every=False,
        paper_value=f"the largest gains +0.020 (layer 11, head 5) and +0.016 (layer 12, head 10) {FIG5}",
    ),
    Claim(
        "any_head_reinit_in_last_two_layers_helps",
        f"{SEED_004} §6.3",
        "Reinitialising any attention head in the downstream layers improves the model performance.",
        "Every head of layers L−1 and L, each run as the paper did, beats the full model (the paper's own Fig. 7 "
        "has heads of layer 11 below it). Not run on fewer heads.",
        "paired contrast head reinit − full > 0 per head",
        (EVERY_HEAD,),
        every_late_head_helps,
        paper_value=f"10 of 12 heads of layer 11 and 8 of 12 of layer 12 above 0 {FIG5}",
    ),
    Claim(
        "specific_heads_matter",
        f"{SEED_004} §6.3, Figs. 9-10, §7",
        "Reinitialising attention heads 4 or 9, no matter for which layer or which task, will decrease the "
        "performance.",
        "The paper's heads 4 and 9 (head_index 3 and 8, counted from 0) at every layer and task the heads study ran, "
        "each against the full model.",
        "paired contrast full − head reinit > 0 per head",
        (SPECIFIC_HEADS,),
        specific_heads_matter,
        paper_value=f"head 4: −0.015, −0.045, −0.013, −0.002; head 9: −0.026, −0.047, +0.002, +0.005 in layers 1, 2, "
        f"11, 12 {FIG5}",
    ),
    Claim(
        "head_reinit_costs_less_downstream_than_upstream",
        f"{SEED_004} §4.3.2 (the heads study's hypothesis), §6.3, Figs. 7-8",
        "We expect that reinitializing attention heads in downstream layers will cause a smaller decline in "
        "performance compared to reinitializing attention heads in upstream layers.",
        "Per task and size: the mean over the heads run in layers L−1 and L (the paper's 11 and 12) of head "
        "reinit − full against the same mean over layers 1 and 2; the full model cancels.",
        "paired contrast mean(late heads) − mean(early heads) > 0",
        (HEADS,),
        late_heads_cost_less,
        paper_value="CoLA: layers 11, 12 mean −full +0.006, +0.003; layers 1, 2 −0.008, −0.021 (late − early "
        "+0.019); STS-B: +0.0003, +0.0009 vs −0.003, −0.004 (+0.004) (Figs. 7-8, one run per head)",
    ),
    Claim(
        "head_12_reinit_helps_on_average",
        f"{SEED_004} §6.3, Figs. 9-10",
        "Reinitializing attention head 12 improves the performance of the two finetuning tasks on average.",
        f"On CoLA and STS-B (the paper's two tasks), per size: head 12 (head_index {HEAD_12}) reinitialised, "
        "averaged over the layers the heads study ran it in (the paper's 1, 2, 11, 12), against the full model. "
        "STS-B comes from the GLUE files: not run offline.",
        "paired contrast mean over layers of head 12 reinit − full > 0",
        (replace(HEADS, args={"layers": [1, 2, "L-1", "L"], "heads": [HEAD_12]}, tasks=("cola", "stsb")),),
        head_12_helps,
        paper_value="mean over layers 1, 2, 11, 12: CoLA −0.001 (Fig. 9: its own table does not show the "
        "improvement), STS-B +0.0005 (Fig. 10) (one run each)",
    ),
    Claim(
        "head_1_reinit_helps_cola_hurts_stsb",
        f"{SEED_004} §6.3, Figs. 9-10",
        "Different attention heads play different roles in different tasks. For example, reinitializing attention "
        "head 1 will increase the performance for CoLA but decrease the performance for STS-B on average.",
        "Head 1 (head_index 0) reinitialised, averaged over the layers the heads study ran it in, against the full "
        "model: above it on CoLA, below it on STS-B (the paper's example; STS-B comes from the GLUE files: not run "
        "offline).",
        "paired contrast per task: mean over layers of head 1 reinit − full > 0 on CoLA, < 0 on STS-B",
        (replace(HEADS, tasks=("cola", "stsb")),),
        head_1_roles,
        paper_value="mean over layers 1, 2, 11, 12: CoLA +0.0009, STS-B −0.0008 (Figs. 9-10, one run each)",
    ),
)
