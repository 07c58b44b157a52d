"""How far finetuning moves the weights, per layer (‖ΔW‖ of the full model's output sublayer at
the end of training, and every sublayer's after steps 1, 2, 4, …), and how that grows with data.

Each claim is one entry of this family's CLAIMS_<seed> (the papers: src/claims/claim.py), its
builders beside it; src/claims/registry.py orders the families' entries."""

from __future__ import annotations

import math
from dataclasses import replace

import numpy as np

from src.claims.claim import PROGRESSIVE, SEED_003, TWO_SIZES, Claim, Shared, one_sided_welch, p_text
from src.claims.evidence import Evidence, studies_of
from src.claims.units import Unit, estimate_test_unit, slope_unit
from src.stats import hypothesis


def later_layers_move_more(ev: Evidence, shared: Shared) -> list[Unit]:
    units = []
    for (task, size), changes in ev.output_change().items():
        trials = sorted(changes.by_trial)
        layers = np.array(sorted({layer for by_layer in changes.by_trial.values() for layer in by_layer}), dtype=float)
        by_trial = np.array([[changes.by_trial[t].get(int(layer), math.nan) for layer in layers] for t in trials])
        unit = slope_unit(
            "later_layers_move_more",
            f"{task} n={size}",
            "per-trial slope of end-of-training ‖ΔW_output‖ over layers > 0 (t over trials)",
            layers,
            by_trial,
            studies=studies_of(ev, task, size, changes.slugs),
            reads=((task, size),),
            notes=(
                "exact permutation p of ρ(layer, mean ‖ΔW‖) (raw) = "
                + p_text(hypothesis.exact_spearman_p(layers, np.nanmean(by_trial, axis=0))),
            ),
        )
        units.append(unit)
    return units


def per_trial_total(by_trial: dict[int, dict[int, float]]) -> np.ndarray:
    """Each trial's ‖ΔW‖ over all its layers (the root of the sum of squares), trials in order."""
    return np.array([float(np.sqrt((np.array(list(by_trial[t].values())) ** 2).sum())) for t in sorted(by_trial)])


def size_pairs(keys) -> list[tuple[str, int, int]]:
    """(task, smallest size, largest size) of every task (in order) with two sizes at least among `keys`."""
    sizes: dict[str, list[int]] = {}
    for task, size in sorted(keys):
        sizes.setdefault(task, []).append(size)
    return [(task, s[0], s[-1]) for task, s in sizes.items() if len(s) >= 2]


def change_studies(ev: Evidence, task: str, sizes, slugs: frozenset[str]) -> tuple:
    return tuple(sorted({s for size in sizes for s in studies_of(ev, task, size, slugs)}))


def more_data_moves_weights_more(ev: Evidence, shared: Shared) -> list[Unit]:
    changes = ev.output_change()
    return [
        one_sided_welch(
            ev,
            "more_data_moves_weights_more",
            f"{task} n={large} vs n={small}",
            "Welch t: end-of-training ‖ΔW_output‖ (all layers) at the largest size − at the smallest > 0",
            per_trial_total(changes[(task, large)].by_trial),
            per_trial_total(changes[(task, small)].by_trial),
            studies=change_studies(ev, task, (small, large), changes[(task, large)].slugs),
            reads=((task, small), (task, large)),
        )
        for task, small, large in size_pairs(changes)
    ]


def more_data_equal_steps(ev: Evidence, shared: Shared) -> list[Unit]:
    """Secondary: all sublayers' ‖ΔW‖ at the largest step count both sizes reached."""
    units: list[Unit] = []
    changes = ev.step_change()
    for task, small, large in size_pairs(changes):
        little, big = changes[(task, small)], changes[(task, large)]
        step = min(min(max(by_step) for by_step in runs.values()) for runs in (little, big))
        unit = one_sided_welch(
            ev,
            "more_data_moves_weights_more_at_equal_steps",
            f"{task} n={large} vs n={small}",
            f"Welch t: ‖ΔW‖ (all sublayers) at step {step} at the largest size − at the smallest > 0",
            per_trial_total({t: by_step[step] for t, by_step in big.items() if step in by_step}),
            per_trial_total({t: by_step[step] for t, by_step in little.items() if step in by_step}),
            studies=studies_of(ev, task, large, {c.refs.full for c in ev.conditions()}),
            reads=((task, small), (task, large)),
            notes=("equal steps: controls the number of Adam steps, not how often each example was seen",),
        )
        units.append(unit)
    return units


def weight_change_interaction(ev: Evidence, shared: Shared) -> list[Unit]:
    units = []
    changes = ev.output_change()
    for task, small, large in size_pairs(changes):
        slopes = [
            np.array(
                [
                    np.polyfit(np.array(list(by_layer), dtype=float), np.array(list(by_layer.values())), 1)[0]
                    for _, by_layer in sorted(changes[(task, size)].by_trial.items())
                ]
            )
            for size in (large, small)
        ]
        units.append(
            one_sided_welch(
                ev,
                "weight_change_grows_more_in_later_layers_with_more_data",
                f"{task} n={large} vs n={small}",
                "Welch t: per-trial slope of ‖ΔW_output‖ over layers at the largest size − at the smallest > 0",
                *slopes,
                studies=change_studies(ev, task, (small, large), changes[(task, large)].slugs),
                reads=((task, small), (task, large)),
            )
        )
    return units


BALANCED = 0.2  # "balanced across layers": the fitted line's rise from the first layer to the last within ±20% of
# the mean ‖ΔW‖ (each end within ±10% of it); this project's margin, the paper gives no number


def relative_rise(by_layer: dict[int, float]) -> float:
    """A trial's OLS slope of ‖ΔW_output‖ over layers times the layers' span, over its mean ‖ΔW‖: the fitted line's
    rise from the first layer to the last as a share of the mean change (scale-free, so comparable across
    models)."""
    layers = np.array(sorted(by_layer), dtype=float)
    values = np.array([by_layer[int(layer)] for layer in layers])
    return float(np.polyfit(layers, values, 1)[0] * (layers[-1] - layers[0]) / values.mean())


def cola_weight_change_balanced(ev: Evidence, shared: Shared) -> list[Unit]:
    units = []
    for (task, size), changes in ev.output_change().items():
        if task != "cola":
            continue
        rises = np.array([relative_rise(by_layer) for _, by_layer in sorted(changes.by_trial.items())])
        n = len(rises)
        sd = float(np.std(rises, ddof=1)) if n > 1 else math.nan
        estimate = hypothesis.Estimate(float(rises.mean()), sd / math.sqrt(n), n, n - 1, sd, n - 1)
        units.append(
            estimate_test_unit(
                "cola_weight_change_balanced_across_layers",
                f"{task} n={size}",
                f"|relative rise of end-of-training ‖ΔW_output‖ over layers| < {BALANCED} (TOST, t over trials)",
                estimate,
                shape="within",
                margin=BALANCED,
                studies=studies_of(ev, task, size, changes.slugs),
                reads=((task, size),),
                notes=("trials only: a run's ‖ΔW‖ has no eval-set noise",),
            )
        )
    return units


CLAIMS_003 = (
    Claim(
        "later_layers_move_more",
        f"{SEED_003} §4.5, §6.3, Fig. 3",
        "Higher layers change more during finetuning than lower layers (the curves are upward trending).",
        "End-of-training L2 (Frobenius) distance of the output sublayer of the full model, per layer, as the paper.",
        "one-sample t over trials of each trial's slope over layers > 0",
        (PROGRESSIVE,),
        later_layers_move_more,
    ),
    Claim(
        "more_data_moves_weights_more",
        f"{SEED_003} §1, §6.3",
        "With more training data, the weights of all layers are transformed more (at the end of finetuning).",
        "End-of-training ‖ΔW_output‖ over all layers of the full model, largest size against smallest.",
        "Welch t > 0",
        (TWO_SIZES,),
        more_data_moves_weights_more,
    ),
    Claim(
        "more_data_moves_weights_more_at_equal_steps",
        f"{SEED_003} §6.3 (secondary analysis)",
        "(Secondary, not the paper's statement) More data moves the weights more at an equal number of steps.",
        "All sublayers' ‖ΔW‖ at the largest step count both sizes reached.",
        "Welch t > 0",
        (TWO_SIZES,),
        more_data_equal_steps,
        secondary=True,
    ),
    Claim(
        "weight_change_grows_more_in_later_layers_with_more_data",
        f"{SEED_003} §6.3",
        "The increase in L2 distance over layers is steeper when the data size is bigger (layer × size interaction).",
        "Per-trial slope of end-of-training ‖ΔW_output‖ over layers, largest size against smallest.",
        "Welch t > 0",
        (TWO_SIZES,),
        weight_change_interaction,
    ),
    Claim(
        "cola_weight_change_balanced_across_layers",
        f"{SEED_003} App. B, Fig. 5(b)",
        "Regarding the weights' changes between BERT base and fine-tuned, for CoLA we have a more noisy pattern "
        "[...] we can conclude that all layers have a more balanced chance to change because none of them is "
        "appropriate for this specific task.",
        f"On CoLA, each trial's end-of-training ‖ΔW‖ of the full model's output sublayer per layer (as "
        f"later_layers_move_more): the OLS line's rise from the first layer to the last, over the trial's mean "
        f"‖ΔW‖, within ±{BALANCED} (each end within ±{BALANCED / 2:.0%} of the mean; this project's margin, the "
        "paper gives no number).",
        "TOST |mean relative rise| < margin, one-sample t over trials",
        (replace(PROGRESSIVE, tasks=("cola",)),),
        cola_weight_change_balanced,
    ),
)
