"""The progressive curve over k (k = 0..L pretrained layers kept, the rest reinitialised): the
full-vs-scratch gap, how many layers reach most of it and how that moves with data, the curve's
shape (slope, steps, linearity) and its scratch end against chance.

Each claim is one entry of this family's CLAIMS_<seed> (the papers: src/claims/claim.py), its
builders beside it; src/claims/registry.py orders the families' entries."""

from __future__ import annotations

import math
from dataclasses import replace

import numpy as np

from src.claims.claim import (
    PROGRESSIVE,
    SEED_001,
    SEED_003,
    SEED_004,
    TWO_SIZES,
    Claim,
    Shared,
    curve_contrasts,
    k_text,
    one_sided_welch,
    per_trial_contrast,
    variance_ratio_unit,
)
from src.claims.curves import along_draws, curves_design
from src.claims.evidence import Evidence, chance_level, grouped, studies_of
from src.claims.units import Refusal, Refused, Unit, bootstrap_unit, contrast_unit, refuse_collapsed_curves, slope_unit
from src.stats.curves import drop_point, first_reaching, linear_r2


def full_beats_scratch(ev: Evidence, shared: Shared) -> list[Unit]:
    return curve_contrasts(ev, "full_beats_scratch", lambda L: [("", {L: 1, 0: -1}, "full − scratch > 0")])


def few_threshold(ev: Evidence) -> int:
    """'The first few layers': ⌈report.few_layers_fraction × L⌉, at least 1 (the paper's first three of 12
    at 0.25; two of MiniLM's six)."""
    return max(1, math.ceil(ev.settings.few_layers_fraction * ev.num_layers))


def size_pairs(ev: Evidence, tasks: tuple = (), ratio: float = 1.0):
    """(task, smallest, largest, {k: slug} at each) for every task (of `tasks`) whose progressive study
    ran two sizes at least `ratio` apart."""
    for task, sizes in ev.curve_sizes().items():
        if (not tasks or task in tasks) and len(sizes) > 1 and sizes[-1] >= ratio * sizes[0]:
            at = {size: {k: c.slug for k, c in ev.curve(task, size).items()} for size in (sizes[0], sizes[-1])}
            yield task, sizes[0], sizes[-1], at[sizes[0]], at[sizes[-1]]


def size_pair_units(
    ev: Evidence, claim: str, small_weights, large_weights, test: str, tasks: tuple = (), ratio: float = 1.0
) -> list[Unit]:
    """Welch over trials of sum_k w k's score at a task's smallest size (`small_weights(L)`) − the
    same at its largest (`large_weights(L)`) > 0. The sizes' runs are not paired (each trial draws its
    own subset at each size); trials only: the eval set's noise, common to both sizes, is left out."""
    units, L = [], ev.num_layers
    for task, small, large, at_small, at_large in size_pairs(ev, tasks, ratio):
        a_w, b_w = small_weights(L), large_weights(L)
        if not (set(a_w) <= set(at_small) and set(b_w) <= set(at_large)):
            continue
        a = per_trial_contrast(ev, task, small, {at_small[k]: w for k, w in a_w.items()})
        b = per_trial_contrast(ev, task, large, {at_large[k]: w for k, w in b_w.items()})
        studies = tuple(
            sorted(
                set(studies_of(ev, task, small, at_small.values()))
                | set(studies_of(ev, task, large, at_large.values()))
            )
        )
        unit = one_sided_welch(
            ev,
            claim,
            f"{task} n={small} vs n={large}",
            test,
            a,
            b,
            studies=studies,
            reads=((task, small), (task, large)),
            notes=("trials only: the eval set's noise, common to both sizes, is not in the variance",),
        )
        units.append(unit)
    return units


def few_layers_suffice(ev: Evidence, shared: Shared) -> list[Unit]:
    few = few_threshold(ev)
    test = f"score(k={few}) − (full + scratch)/2 > 0: the first {few} layers give more than half the gain"
    return curve_contrasts(
        ev,
        "few_layers_suffice_with_plenty_of_data",
        lambda L: [("", {few: 1, L: -0.5, 0: -0.5}, test)],
        largest_only=True,
        gap=True,
    )


def curve_shift_units(ev: Evidence, shared: Shared, claim: str, statistic, label: str) -> list[Unit]:
    """`statistic` of a task's curve (a k, applied along each draw) at its smallest size minus at its
    largest, > 0: the bootstrap of the difference, both curves drawn on the task's shared eval draws
    (and its crossed seed_design, where they read one); needs the gap at both sizes; refused where either curve
    holds a (nearly) collapsed or degraded run (units.refuse_collapsed_curves)."""
    units = []
    for task in shared.tasks():
        sizes = shared.sizes(task)
        if len(sizes) < 2:
            continue
        small, large = shared.curves[(task, sizes[0])], shared.curves[(task, sizes[-1])]
        design, read = curves_design((small, large))
        value = {sizes[0]: statistic(small.mean), sizes[-1]: statistic(large.mean)}
        units.append(
            bootstrap_unit(
                ev,
                claim,
                f"{task} n={sizes[0]} vs n={sizes[-1]}",
                f"bootstrap of {label}(smallest) − {label}(largest) > 0",
                value[sizes[0]] - value[sizes[-1]],
                along_draws(statistic, small.draws) - along_draws(statistic, large.draws),
                min(len(small.trials), len(large.trials)),
                kind="bootstrap-difference",
                design=design,
                reads_seed_design=read,
                gaps=((task, sizes[0]), (task, sizes[-1])),
                studies=tuple(sorted(set(small.studies + large.studies))),
                notes=(
                    *small.notes,
                    *large.notes,
                    f"{label} {k_text(value[sizes[0]])} at n={sizes[0]}, {k_text(value[sizes[-1]])} at n={sizes[-1]}",
                ),
            )
        )
        units[-1] = refuse_collapsed_curves(units[-1], (small, large))
    return units


def k90_grows_as_data_shrinks(ev: Evidence, shared: Shared) -> list[Unit]:
    return curve_shift_units(ev, shared, "k90_grows_as_data_shrinks", first_reaching, "k90")


def drop_point_shifts(ev: Evidence, shared: Shared) -> list[Unit]:
    return curve_shift_units(ev, shared, "drop_point_shifts_with_data_size", drop_point, "steepest step k")


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
                reads=(("cola", size),),
                notes=(f"R² = {linear_r2(curve.mean):.3f}",),
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
            reads=((task, size),),
            notes=tuple(curve.notes),
        )
        for (task, size), curve in shared.curves.items()
    ]


def reinit_curve_not_monotone(ev: Evidence, shared: Shared) -> list[Unit]:
    return curve_contrasts(
        ev,
        "reinit_curve_not_monotone",
        lambda L: [(f" k={k} vs {k + 1}", {k: 1, k + 1: -1}, f"score(k={k}) − score(k={k + 1}) > 0") for k in range(L)],
    )


def reinit_curve_change_not_constant(ev: Evidence, shared: Shared) -> list[Unit]:
    """The step from k+1 to k+2 larger or smaller than from k to k+1: each sign its own one-sided unit."""
    return curve_contrasts(
        ev,
        "reinit_curve_change_not_constant",
        lambda L: [
            (
                f" steps at k={k},{k + 1} {word}",
                {k: sign, k + 1: -2 * sign, k + 2: sign},
                f"{sign:+d} × (step(k={k + 1}) − step(k={k})) > 0",
            )
            for k in range(L - 1)
            for sign, word in ((1, "grow"), (-1, "shrink"))
        ],
    )


def top_two_negligible(ev: Evidence, shared: Shared) -> list[Unit]:
    m = ev.settings.single_layer_margin
    return curve_contrasts(
        ev,
        "top_two_layers_negligible_in_finetuning",
        lambda L: [("", {L: 1, L - 2: -1}, f"|score(k=L) − score(k=L−2)| < {m} (TOST)")],
        shape="within",
        margin=m,
    )


def rte_top_reinit_beats_full(ev: Evidence, shared: Shared) -> list[Unit]:
    return curve_contrasts(
        ev,
        "rte_top_layer_reinit_beats_full",
        lambda L: [(f" k={k}", {k: 1, L: -1}, f"score(k={k}) − full > 0") for k in range(math.ceil(7 * L / 12), L)],
        tasks=("rte",),
    )


def mrpc_insensitive(ev: Evidence, shared: Shared) -> list[Unit]:
    m = ev.settings.single_layer_margin
    return curve_contrasts(
        ev,
        "mrpc_insensitive_to_reinit",
        lambda L: [(f" k={k}", {k: 1, L: -1}, f"|score(k={k}) − full| < {m} (TOST)") for k in range(L)],
        tasks=("mrpc",),
        shape="within",
        margin=m,
    )


def pretraining_gain_shrinks(ev: Evidence, shared: Shared) -> list[Unit]:
    gain = lambda L: {L: 1, 0: -1}  # noqa: E731
    test = "Welch t over trials: (full − scratch) at the smallest size − at the largest > 0"
    return size_pair_units(ev, "pretraining_gain_shrinks_as_data_grow", gain, gain, test)


def little_data_beats_scratch_with_more(ev: Evidence, shared: Shared) -> list[Unit]:
    test = "Welch t over trials: full at the smallest size − scratch at a size ≥ 10× larger > 0"
    return size_pair_units(
        ev, "full_at_little_data_beats_scratch_with_tenfold", lambda L: {L: 1}, lambda L: {0: 1}, test, ratio=10
    )


def sst2_middle_layers_with_less_data(ev: Evidence, shared: Shared) -> list[Unit]:
    middle = lambda L: {math.ceil(2 * L / 3): 1, L // 3: -1}  # noqa: E731 - the middle third's gain
    test = "Welch t over trials: score(k=⌈2L/3⌉) − score(k=⌊L/3⌋) at the smallest size − at the largest > 0"
    return size_pair_units(ev, "sst2_middle_layers_matter_more_with_less_data", middle, middle, test, ("sst2",))


def subsampling_variance(ev: Evidence, shared: Shared) -> list[Unit]:
    units = []
    for task, small, large, at_small, at_large in size_pairs(ev):
        L = ev.num_layers
        if L in at_small and L in at_large:
            a = per_trial_contrast(ev, task, small, {at_small[L]: 1})
            b = per_trial_contrast(ev, task, large, {at_large[L]: 1})
            studies = tuple(
                sorted(
                    set(studies_of(ev, task, small, [at_small[L]])) | set(studies_of(ev, task, large, [at_large[L]]))
                )
            )
            units.append(
                variance_ratio_unit(
                    "subsampling_variance_larger_with_less_data",
                    f"{task} n={small} vs n={large}",
                    "var over trials of the full model at the smallest size / at the largest > 1 (F test, one-sided)",
                    a,
                    b,
                    studies,
                    reads=((task, small), (task, large)),
                )
            )
    return units


def all_reinit_at_chance(ev: Evidence, shared: Shared) -> list[Unit]:
    units = []
    for (task, size), conditions in grouped(ev.conditions("progressive"), lambda c: (c.task, c.size)):
        scratch = conditions[0].refs.scratch
        chance = chance_level(ev, task)
        if scratch not in {c.slug for c in conditions}:
            continue
        unit = contrast_unit(
            ev,
            "all_reinit_at_chance",
            task,
            size,
            {scratch: 1},
            f"|scratch − chance| < {ev.settings.chance_margin} (TOST)",
            shape="within",
            margin=ev.settings.chance_margin,
            shift=chance if np.isfinite(chance) else 0.0,
        )
        if not np.isfinite(chance):
            unit = replace(
                unit,
                refused=Refused(Refusal.CHANCE_UNKNOWN, "chance level unknown without the eval labels"),
                p_for=math.nan,
                p_against=math.nan,
            )
        else:
            unit = unit.noted(f"chance level {chance:.3f}")
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
        "'plentiful': each task's largest size.",
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
    Claim(
        "subsampling_variance_larger_with_less_data",
        f"{SEED_001} App. B",
        "The particular datapoints subsampled can have a large impact on downstream performance, especially when "
        "data is scarce.",
        "The full model's spread over trials (each trial its own subset) at a task's smallest size against its "
        "largest.",
        "one-sided F test of the variance ratio (normal scores)",
        (TWO_SIZES,),
        subsampling_variance,
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
    Claim(
        "pretraining_gain_shrinks_as_data_grow",
        f"{SEED_003} abstract, §7",
        "As training data size increases, the performance gains from the pre-trained information of each layer are "
        "lower.",
        "The full model's gain over scratch at a task's smallest size against its largest (trials of the two "
        "sizes are not paired).",
        "Welch t over trials of (full − scratch) at the smallest size − at the largest > 0",
        (TWO_SIZES,),
        pretraining_gain_shrinks,
    ),
    Claim(
        "full_at_little_data_beats_scratch_with_tenfold",
        f"{SEED_003} §6.1.1",
        "With 1% of the training examples, the model with no (or only the last few layers') reinitialisation beats "
        "a fully supervised model trained on 10 or 100 times the data.",
        "The full model at a task's smallest size against scratch (k = 0) at its largest, where that is at least "
        "10 times larger.",
        "Welch t over trials of full(smallest) − scratch(largest) > 0",
        (replace(PROGRESSIVE, sizes="tenfold"),),
        little_data_beats_scratch_with_more,
    ),
    Claim(
        "sst2_middle_layers_matter_more_with_less_data",
        f"{SEED_003} §6.1.1, §6.1.3",
        "For SST-2 the loss with increasing reinitialisation becomes less concave as data shrink: the middle layers' "
        "pretrained information contributes much more with less training data.",
        "The middle third's gain, score(k = ⌈2L/3⌉) − score(k = ⌊L/3⌋), at SST-2's smallest size against its largest.",
        "Welch t over trials of the middle third's gain at the smallest size − at the largest > 0",
        (replace(TWO_SIZES, tasks=("sst2",)),),
        sst2_middle_layers_with_less_data,
    ),
    Claim(
        "top_two_layers_negligible_in_finetuning",
        f"{SEED_003} §6.2",
        "In partial reinitialisation the highest two layers have a negligible effect on accuracy.",
        "Keeping the top two layers pretrained (k = L) against reinitialising them (k = L − 2), within "
        "report.single_layer_margin (the margin of 'a single layer barely matters').",
        "TOST |score(L) − score(L−2)| < margin",
        (PROGRESSIVE,),
        top_two_negligible,
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
    Claim(
        "reinit_curve_change_not_constant",
        f"{SEED_004} abstract, §6.2",
        "The change in performance is not constant as the next upstream layer is reinitialised (with "
        "reinit_curve_not_monotone: neither monotone nor constant).",
        "Somewhere along the progressive curve one step differs from the next: a second difference score(k) − "
        "2 score(k+1) + score(k+2) above or below 0; existential over k and sign.",
        "paired contrast ±(second difference) > 0, Holm across the report",
        (PROGRESSIVE,),
        reinit_curve_change_not_constant,
        every=False,
    ),
    Claim(
        "rte_top_layer_reinit_beats_full",
        f"{SEED_004} §6.2",
        "For RTE, the performance when reinitialising from layers k ∈ [8, 12] surpasses the performance when no "
        "layers are reinitialised.",
        "On RTE, keeping k = ⌈7L/12⌉ … L − 1 layers (reinitialising from layer 8 of 12 up) against the full model, "
        "at every such k.",
        "paired contrast score(k) − full > 0 per k",
        (replace(PROGRESSIVE, tasks=("rte",)),),
        rte_top_reinit_beats_full,
    ),
    Claim(
        "mrpc_insensitive_to_reinit",
        f"{SEED_004} §5.6",
        "For MRPC, the performance does not change with reinitialising different layers.",
        "On MRPC, every k < L within report.single_layer_margin of the full model.",
        "TOST |score(k) − full| < margin per k",
        (replace(PROGRESSIVE, tasks=("mrpc",)),),
        mrpc_insensitive,
        paper_value="accuracy 0.776 with no layer reinitialised, 0.683 with any k layers; F1 0.848 vs 0.812 (§5.6)",
    ),
)
