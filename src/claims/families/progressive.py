"""The progressive curve over k (k = 0..L pretrained layers kept, the rest reinitialised): the
full-vs-scratch gap, how many layers reach most of it and how that moves with data, the curve's
shape (slope, steps, linearity) and its scratch end against chance.

Each claim is one entry of this family's CLAIMS_<seed> (the papers: src/claims/claim.py), its
builders beside it; src/claims/registry.py orders the families' entries."""

from __future__ import annotations

import math
from dataclasses import replace

import numpy as np

from src.claims.claim import PROGRESSIVE, SEED_001, SEED_003, SEED_004, TWO_SIZES, Claim, Shared, k_text, plain_by, refs
from src.claims.curves import along_draws, curves_design
from src.claims.evidence import Evidence, chance_level
from src.claims.units import Unit, bootstrap_unit, contrast_unit, slope_unit
from src.stats.curves import drop_point, first_reaching, linear_r2


def full_beats_scratch(ev: Evidence, shared: Shared) -> list[Unit]:
    units = []
    for (task, size), rows in plain_by(ev, "progressive").groupby(["task", "size"]):
        full, scratch = refs(rows)
        if {full, scratch} <= set(rows["slug"]):
            units.append(
                contrast_unit(ev, "full_beats_scratch", task, int(size), {full: 1, scratch: -1}, "full − scratch > 0")
            )
    return units


def few_threshold(ev: Evidence) -> int:
    """'The first few layers': ⌈report.few_layers_fraction × L⌉, at least 1 (the paper's first three of 12
    at 0.25; two of MiniLM's six)."""
    return max(1, math.ceil(ev.settings.few_layers_fraction * ev.num_layers))


def slugs_by_k(rows) -> dict[int, str]:
    """The progressive condition (slug) of each k among `rows` (one task and size)."""
    return dict(zip(rows["k"].astype(int), rows["slug"]))


def few_layers_suffice(ev: Evidence, shared: Shared) -> list[Unit]:
    few, units = few_threshold(ev), []
    progressive = plain_by(ev, "progressive")
    for task, rows in progressive.groupby("task"):
        size = int(rows["size"].max())
        at_size = rows[rows["size"] == size]
        by_k, (full, scratch) = slugs_by_k(at_size), refs(at_size)
        if few not in by_k or not {full, scratch} <= set(at_size["slug"]):
            continue
        units.append(
            contrast_unit(
                ev,
                "few_layers_suffice_with_plenty_of_data",
                task,
                size,
                {by_k[few]: 1, full: -0.5, scratch: -0.5},
                f"score(k={few}) − (full + scratch)/2 > 0: the first {few} layers give more than half the gain",
                gap=True,
            )
        )
    return units


def k90_grows_as_data_shrinks(ev: Evidence, shared: Shared) -> list[Unit]:
    units = []
    for task in shared.tasks():
        sizes = shared.sizes(task)
        if len(sizes) < 2:
            continue
        small, large = shared.curves[(task, sizes[0])], shared.curves[(task, sizes[-1])]
        design, read = curves_design((small, large))
        k90 = lambda draws: along_draws(first_reaching, draws)  # noqa: E731
        units.append(
            bootstrap_unit(
                ev,
                "k90_grows_as_data_shrinks",
                f"{task} n={sizes[0]} vs n={sizes[-1]}",
                "bootstrap of k90(smallest) − k90(largest) > 0",
                first_reaching(small.mean) - first_reaching(large.mean),
                k90(small.draws) - k90(large.draws),
                min(len(small.trials), len(large.trials)),
                kind="bootstrap-difference",
                design=design,
                reads_seed_design=read,
                gaps=((task, sizes[0]), (task, sizes[-1])),
                studies=tuple(sorted(set(small.studies + large.studies))),
                notes=[
                    *small.notes,
                    *large.notes,
                    f"k90 {k_text(first_reaching(small.mean))} at n={sizes[0]}, "
                    f"{k_text(first_reaching(large.mean))} at n={sizes[-1]}",
                ],
            )
        )
    return units


def drop_point_shifts(ev: Evidence, shared: Shared) -> list[Unit]:
    units = []
    for task in shared.tasks():
        sizes = shared.sizes(task)
        if len(sizes) < 2:
            continue
        small, large = shared.curves[(task, sizes[0])], shared.curves[(task, sizes[-1])]
        design, read = curves_design((small, large))
        units.append(
            bootstrap_unit(
                ev,
                "drop_point_shifts_with_data_size",
                f"{task} n={sizes[0]} vs n={sizes[-1]}",
                "bootstrap of steepest step k(smallest) − k(largest) > 0",
                drop_point(small.mean) - drop_point(large.mean),
                drop_point(small.draws) - drop_point(large.draws),
                min(len(small.trials), len(large.trials)),
                kind="bootstrap-difference",
                design=design,
                reads_seed_design=read,
                gaps=((task, sizes[0]), (task, sizes[-1])),
                studies=tuple(sorted(set(small.studies + large.studies))),
                notes=[
                    f"steepest step at k={drop_point(small.mean):.0f} (n={sizes[0]}), "
                    f"{drop_point(large.mean):.0f} (n={sizes[-1]})"
                ],
            )
        )
    return units


def cola_near_linear(ev: Evidence, shared: Shared) -> list[Unit]:
    units, r2 = [], ev.settings.linear_r2
    for size in shared.sizes("cola"):
        curve = shared.curves[("cola", size)]
        units.append(
            bootstrap_unit(
                ev,
                "cola_near_linear_drop",
                f"cola n={size}",
                f"bootstrap of R²(line through the curve) − {r2} > 0",
                linear_r2(curve.mean) - r2,
                along_draws(linear_r2, curve.draws) - r2,
                len(curve.trials),
                kind="bootstrap",
                studies=curve.studies,
                notes=[f"R² = {linear_r2(curve.mean):.3f}"],
            )
        )
    return units


def later_reinit_costs_less(ev: Evidence, shared: Shared) -> list[Unit]:
    return [
        slope_unit(
            "later_reinit_costs_less",
            f"{task} n={size}",
            "per-trial OLS slope of score over k > 0 (t over trials)",
            range(ev.num_layers + 1),
            curve.per_trial,
            studies=curve.studies,
            notes=list(curve.notes),
        )
        for (task, size), curve in shared.curves.items()
    ]


def reinit_curve_not_monotone(ev: Evidence, shared: Shared) -> list[Unit]:
    units = []
    for (task, size), rows in plain_by(ev, "progressive").groupby(["task", "size"]):
        by_k = slugs_by_k(rows)
        for k in sorted(by_k):
            if k + 1 in by_k:
                units.append(
                    contrast_unit(
                        ev,
                        "reinit_curve_not_monotone",
                        task,
                        int(size),
                        {by_k[k]: 1, by_k[k + 1]: -1},
                        f"score(k={k}) − score(k={k + 1}) > 0",
                        name=f"{task} n={size} k={k} vs {k + 1}",
                    )
                )
    return units


def all_reinit_at_chance(ev: Evidence, shared: Shared) -> list[Unit]:
    units = []
    for (task, size), rows in plain_by(ev, "progressive").groupby(["task", "size"]):
        _, scratch = refs(rows)
        chance = chance_level(ev, task)
        if scratch not in set(rows["slug"]):
            continue
        unit = contrast_unit(
            ev,
            "all_reinit_at_chance",
            task,
            int(size),
            {scratch: 1},
            f"|scratch − chance| < {ev.settings.chance_margin} (TOST)",
            shape="within",
            margin=ev.settings.chance_margin,
            shift=chance if np.isfinite(chance) else 0.0,
        )
        if not np.isfinite(chance):
            unit.refused, unit.p_for, unit.p_against = (
                "chance level unknown without the eval labels",
                math.nan,
                math.nan,
            )
        else:
            unit.notes.append(f"chance level {chance:.3f}")
        units.append(unit)
    return units


CLAIMS_001 = (
    Claim(
        "full_beats_scratch",
        f"{SEED_001} §2, Fig. 1",
        "The fully pretrained model finetunes better than the model trained from scratch.",
        "k = L against k = 0 at every task and size the progressive study ran.",
        "paired contrast full − scratch > 0 (one-sided t)",
        (PROGRESSIVE,),
        full_beats_scratch,
    ),
    Claim(
        "few_layers_suffice_with_plenty_of_data",
        f"{SEED_001} §1 contribution 1, Fig. 1 caption",
        "The first few layers of BERT are sufficient to provide the majority of improvement on downstream metrics "
        "when finetuning data is plentiful ('first three BERT layers', Fig. 1 caption).",
        "'The majority of the improvement': more than half of the full model's gain over scratch; 'the first few "
        "layers': k = ⌈report.few_layers_fraction × L⌉ pretrained layers (the caption's three of 12 is 0.25); "
        "'plentiful': each task's largest size. Until 2026-11-26 this read 90% of the gain (k90) and ⌊0.25 L⌋.",
        "paired contrast score(k=few) − (full + scratch)/2 > 0; needs the gap",
        (PROGRESSIVE,),
        few_layers_suffice,
        needs_gap=True,
    ),
    Claim(
        "k90_grows_as_data_shrinks",
        f"{SEED_001} §2, contribution 1",
        "More pretrained layers are needed when finetuning data is scarce.",
        "k90 at a task's smallest size against its largest.",
        "bootstrap of k90(smallest) − k90(largest) > 0; needs the gap",
        (TWO_SIZES,),
        k90_grows_as_data_shrinks,
        needs_gap=True,
    ),
)


CLAIMS_003 = (
    Claim(
        "drop_point_shifts_with_data_size",
        f"{SEED_003} §6.1",
        "As training data shrink, the rapid accuracy drop begins at later layers: more early layers become important.",
        "The drop point = the k whose addition gains most (the curve's steepest step), smallest against largest size.",
        "bootstrap of drop point(smallest) − drop point(largest) > 0; needs the gap",
        (TWO_SIZES,),
        drop_point_shifts,
        needs_gap=True,
    ),
    Claim(
        "cola_near_linear_drop",
        f"{SEED_003} §6.1, Fig. 1(d)",
        "CoLA shows a fairly linear drop in performance with increasing partial reinitialisation.",
        "R² of a straight line through the mean curve over k at least report.linear_r2.",
        "bootstrap of R² − threshold > 0",
        (replace(PROGRESSIVE, tasks=("cola",)),),
        cola_near_linear,
    ),
)


CLAIMS_004 = (
    Claim(
        "later_reinit_costs_less",
        f"{SEED_004} §6.2, abstract",
        "Reinitialising downstream layers causes a smaller decrease than reinitialising upstream layers.",
        "Reinitialising layers ≥ k is the progressive scheme at k − 1: the score rises with k.",
        "one-sample t over trials of each trial's slope of score over k > 0",
        (PROGRESSIVE,),
        later_reinit_costs_less,
    ),
    Claim(
        "reinit_curve_not_monotone",
        f"{SEED_004} §6.2, abstract",
        "The change in performance does not decrease monotonically as the next upstream layer is reinitialised.",
        "Somewhere along the progressive curve, keeping one more layer lowers the score; existential over adjacent k.",
        "paired contrast score(k) − score(k+1) > 0, Holm across the report",
        (PROGRESSIVE,),
        reinit_curve_not_monotone,
        every=False,
    ),
    Claim(
        "all_reinit_at_chance",
        f"{SEED_004} §6.2",
        "Every task exhibits random-guessing behaviour when all layers are reinitialised.",
        "k = 0 within report.chance_margin of the chance level (majority class share; MCC 0).",
        "TOST |scratch − chance| < margin",
        (PROGRESSIVE,),
        all_reinit_at_chance,
    ),
)
