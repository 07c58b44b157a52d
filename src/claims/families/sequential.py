"""Sequential finetuning: an intermediate task first, then the final task, against finetuning on
the final task directly.

Each claim is one entry of this family's CLAIMS_<seed> (the papers: src/claims/claim.py), its
builders beside it; src/claims/registry.py orders the families' entries."""

from __future__ import annotations

from dataclasses import replace

from src.claims.claim import SEED_004, Claim, Need, Shared
from src.claims.evidence import Evidence, grouped
from src.claims.units import Unit, contrast_unit


def sequential_units(
    ev: Evidence,
    claim: str,
    sign_of,
    intermediates: tuple = (),
    finals: tuple = (),
    negative: str = "direct − after intermediate > 0 (the exception)",
) -> list[Unit]:
    """Each (final, intermediate) pair of the sequential runs (of `intermediates` and `finals`, every one where
    empty) against direct finetuning: sign_of(final) * (after intermediate − direct) > 0 (tested as `negative`
    where the sign is −1)."""
    units = []
    sequential = [c for c in ev.conditions(plain=None) if c.condition.intermediate_task is not None]
    for (task, size, slug), (c,) in grouped(sequential, lambda c: (c.task, c.size, c.slug)):
        intermediate, sign = c.condition.intermediate_task, sign_of(task)
        if (intermediates and intermediate not in intermediates) or (finals and task not in finals):
            continue
        units.append(
            contrast_unit(
                ev,
                claim,
                task,
                size,
                {slug: sign, c.refs.baseline: -sign},
                "after intermediate − direct > 0" if sign > 0 else negative,
                name=f"{task} n={size} after {intermediate}",
            )
        )
    return units


def intermediate_beats_direct(ev: Evidence, shared: Shared) -> list[Unit]:
    return sequential_units(ev, "some_intermediate_task_beats_direct", lambda task: 1)


def wnli_helps_all_but_rte(ev: Evidence, shared: Shared) -> list[Unit]:
    sign = lambda task: -1 if task == "rte" else 1  # noqa: E731 - the paper's exception
    return sequential_units(ev, "wnli_intermediate_helps_every_task_but_rte", sign, ("wnli",))


def direct_best_on_rte_and_wnli(ev: Evidence, shared: Shared) -> list[Unit]:
    claim, negative = "direct_finetuning_best_on_rte_and_wnli", "direct − after intermediate > 0"
    intermediates = tuple(PAPER_INTERMEDIATES)  # single intermediate tasks: the paper ran no chains (§7.1)
    return sequential_units(ev, claim, lambda task: -1, intermediates, ("rte", "wnli"), negative)


def wnli_beats_rte_on_cola(ev: Evidence, shared: Shared) -> list[Unit]:
    """On CoLA, after WNLI against after RTE, paired by trial at each size and k where both ran."""
    units = []
    sequential = [c for c in ev.conditions(plain=None) if c.condition.intermediate_task is not None]
    for (task, size, _), conditions in grouped(sequential, lambda c: (c.task, c.size, c.condition.k)):
        after = {c.condition.intermediate_task: c.slug for c in conditions}
        if task == "cola" and {"wnli", "rte"} <= set(after):
            units.append(
                contrast_unit(
                    ev,
                    "wnli_beats_rte_as_intermediate_on_cola",
                    "cola",
                    size,
                    {after["wnli"]: 1, after["rte"]: -1},
                    "after WNLI − after RTE > 0 on CoLA",
                    name=f"cola n={size} after wnli vs after rte",
                )
            )
    return units


PAPER_INTERMEDIATES = ["cola", "mrpc", "rte", "wnli"]  # 004 §5.5, Fig. 2: every final task after each of these
PAPER_SEQUENTIAL = Need("progressive", "sequential", {"ks": ["L"]}, {"intermediate_tasks": PAPER_INTERMEDIATES})


CLAIMS_004 = (
    Claim(
        "some_intermediate_task_beats_direct",
        f"{SEED_004} §6.1, abstract",
        "There are cases where finetuning on an intermediate task first beats finetuning directly on the final task.",
        "Every (final, intermediate) pair of the sequential study against direct finetuning; existential.",
        "paired contrast after intermediate − direct > 0, Holm across its paper's claims",
        (Need("progressive", "sequential", {"ks": ["L"]}, {"intermediate_tasks": "data.tasks"}, min_tasks=2),),
        intermediate_beats_direct,
        every=False,
        paper_value="after WNLI, CoLA MCC 0.536 vs 0.526 direct and MRPC accuracy 0.786 vs 0.776; on RTE and WNLI "
        "no intermediate task beats direct (Fig. 2, one run each)",
    ),
    Claim(
        "wnli_intermediate_helps_every_task_but_rte",
        f"{SEED_004} §6.1, §7",
        "Using WNLI as an intermediate task and each of the other tasks as the final task outperforms finetuning "
        "directly; the only final task for which it is worse is RTE.",
        "After WNLI against direct finetuning on every final task run; the exception, RTE, is tested as its own "
        "contrast: direct beats after WNLI.",
        "paired contrast after WNLI − direct > 0 per final task (RTE: direct − after WNLI > 0)",
        (
            Need(
                "progressive",
                "sequential_wnli",
                {"ks": ["L"]},
                {"intermediate_tasks": ["wnli"]},
                tasks=("cola", "mrpc", "rte"),
            ),
        ),
        wnli_helps_all_but_rte,
        paper_value="after WNLI − direct: CoLA MCC +0.010 (0.536 vs 0.526), MRPC accuracy +0.010 (0.786 vs 0.776), "
        "RTE accuracy −0.047 (0.588 vs 0.635) (Fig. 2, one run each)",
    ),
    Claim(
        "direct_finetuning_best_on_rte_and_wnli",
        f"{SEED_004} §6.1, Fig. 2",
        "For RTE as the final task, directly finetuning on the pretrained BERT model achieves the highest accuracy "
        "of 0.635. For WNLI as the final task, directly finetuning on the pretrained BERT model achieves the "
        "highest accuracy of 0.549.",
        "On RTE and on WNLI as final tasks, direct finetuning against finetuning after each intermediate task the "
        "sequential study ran (the paper's CoLA, MRPC, RTE and WNLI; not the chains of §7.1, proposed and not "
        "run), at every such pair.",
        "paired contrast direct − after intermediate > 0 per (final, intermediate)",
        (replace(PAPER_SEQUENTIAL, tasks=("rte", "wnli")),),
        direct_best_on_rte_and_wnli,
        paper_value="RTE: 0.635 direct vs 0.462 (after CoLA), 0.610 (MRPC), 0.588 (WNLI); WNLI: 0.549 direct vs "
        "0.408 (CoLA), 0.394 (MRPC), 0.464 (RTE) (Fig. 2, accuracy, one run each)",
    ),
    Claim(
        "wnli_beats_rte_as_intermediate_on_cola",
        f"{SEED_004} §6.1, Fig. 2",
        "For CoLA as the final task, using WNLI as the intermediate task achieves a higher Matthew's correlation "
        "coefficient than the mcc obtained by using RTE as the intermediate task.",
        "On CoLA, finetuning after WNLI against finetuning after RTE, paired by trial.",
        "paired contrast after WNLI − after RTE > 0 on CoLA",
        (replace(PAPER_SEQUENTIAL, tasks=("cola",)),),
        wnli_beats_rte_on_cola,
        paper_value="MCC 0.536 after WNLI vs 0.526 after RTE (Fig. 2, one run each)",
    ),
)
