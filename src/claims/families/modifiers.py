"""Modifiers of how a run trains (more or fewer epochs, a higher learning rate on the reinitialised
layers, kept LayerNorm), each modified condition against the plain run at the same k.

Each claim is one entry of this family's CLAIMS_<seed> (the papers: src/claims/claim.py), its
builders beside it; src/claims/registry.py orders the families' entries."""

from __future__ import annotations

from collections.abc import Callable

import numpy as np

from src.claims.claim import SEED_001, Claim, Need, Shared, plentiful_only, variance_ratio_unit
from src.claims.evidence import ConditionRuns, Evidence, grouped
from src.claims.units import Unit, contrast_unit
from src.conditions.condition import Condition

LR_MULTIPLIER = Need("progressive", "lr_multiplier", {"ks": [0, 3]}, {"reinit_lr_multiplier": 5})


def modified_units(
    ev: Evidence,
    claim: str,
    select: Callable[[Condition], bool],
    shape: str,
    test: str,
    sizes: Callable[[int], bool] = lambda size: True,
    sign: int = 1,
) -> list[Unit]:
    """Each modified condition of a k (that `select` takes) against the plain run at the same task, size
    and k, paired by trial: sign * (modified − plain)."""
    units = []
    for (task, size, k, slug), _ in modified_by_k(ev, select):
        base = ev.curve(task, size).get(k)
        if not sizes(size) or base is None:
            continue
        units.append(
            contrast_unit(
                ev,
                claim,
                task,
                size,
                {slug: sign, base.slug: -sign},
                test,
                name=f"{task} n={size} {slug}",
                shape=shape,
                margin=ev.settings.modifier_margin,
            )
        )
    return units


def modified_by_k(ev: Evidence, select: Callable[[Condition], bool]) -> list[tuple[tuple, list[ConditionRuns]]]:
    """The modified conditions of a k that `select` takes, by (task, size, k, slug)."""
    chosen = [c for c in ev.conditions(plain=False) if c.condition.k is not None and select(c.condition)]
    return grouped(chosen, lambda c: (c.task, c.size, c.condition.k, c.slug))


def default_epochs(ev: Evidence, size: int) -> int:
    return ev.train.epochs_for(size) if ev.train else 3


def longer_training(ev: Evidence, shared: Shared) -> list[Unit]:
    """Longer − default epochs < margin at 5k examples and up (App. D's "subsamples of 5k"); below, outside the
    paper's scope."""
    return plentiful_only(
        modified_units(
            ev,
            "epochs_beyond_3_do_not_help_with_plenty_of_data",
            lambda c: not c.modified and c.epochs > default_epochs(ev, c.size),
            "below",
            f"longer − default epochs < {ev.settings.modifier_margin} (non-superiority)",
        )
    )


def five_epochs_help(ev: Evidence, shared: Shared) -> list[Unit]:
    small = ev.train.small_size if ev.train else 0
    return modified_units(
        ev,
        "five_epochs_help_with_little_data",
        lambda c: not c.modified and c.epochs < default_epochs(ev, c.size),
        "greater",
        "default (small_epochs) − fewer epochs > 0",
        sizes=lambda s: s <= small,
        sign=-1,
    )


def five_times_lr(c: Condition, num_layers: int) -> bool:
    """A condition of the lr-multiplier study that reinitialises some layer (k < L)."""
    return c.lr_multiplier != 1 and c.k is not None and c.k < num_layers


def lr_no_gain(ev: Evidence, shared: Shared) -> list[Unit]:
    return modified_units(
        ev,
        "lr_multiplier_does_not_help",
        lambda c: five_times_lr(c, ev.num_layers),
        "below",
        f"5× lr − plain < {ev.settings.modifier_margin} (non-superiority)",
    )


def lr_adds_variance(ev: Evidence, shared: Shared) -> list[Unit]:
    units = []
    for (task, size, k, slug), (modified,) in modified_by_k(ev, lambda c: five_times_lr(c, ev.num_layers)):
        base = ev.curve(task, size).get(k)
        finished, plain = modified.finished(), base.finished() if base is not None else []
        if not finished or not plain:
            continue
        units.append(
            variance_ratio_unit(
                "lr_multiplier_adds_variance",
                f"{task} n={size} {slug}",
                "var(5× lr) / var(plain) > 1 (F test, one-sided)",
                np.array([run.value for run in finished]),
                np.array([run.value for run in plain]),
                tuple(sorted({run.study for run in finished + plain})),
                reads=((task, size),),
            )
        )
    return units


def keep_layernorm_no_help(ev: Evidence, shared: Shared) -> list[Unit]:
    return modified_units(
        ev,
        "keep_layernorm_does_not_help",
        lambda c: c.keep_layernorm and c.k is not None and c.k < ev.num_layers,
        "below",
        f"kept LayerNorm − plain < {ev.settings.modifier_margin} (non-superiority)",
    )


CLAIMS_001 = (
    Claim(
        "epochs_beyond_3_do_not_help_with_plenty_of_data",
        f"{SEED_001} App. D",
        "Training longer than three epochs has minimal effect at 5k examples.",
        "Runs with more than the default epochs against the plain run at the same k, at sizes of 5,000 examples "
        "and up (the paper's 5k; below, outside its scope); 'minimal' = a gain below report.modifier_margin.",
        "paired non-superiority longer − default < margin",
        (Need("progressive", "epochs", {"ks": [0, "L"]}, {"epochs": 6}, sizes="plentiful"),),
        longer_training,
    ),
    Claim(
        "five_epochs_help_with_little_data",
        f"{SEED_001} App. D",
        "Training five epochs instead of three improves the 500-example runs by several points.",
        "Plain runs at sizes ≤ train.small_size (train.small_epochs) against runs of train.epochs at the same k.",
        "paired contrast default − fewer epochs > 0",
        (Need("progressive", "epochs_small", {"ks": [0, "L"]}, {"epochs": "train.epochs"}, sizes="small"),),
        five_epochs_help,
    ),
    Claim(
        "lr_multiplier_does_not_help",
        f"{SEED_001} App. E",
        "A 5× learning rate on the reinitialised layers does not improve performance.",
        "Each k < L of the lr-multiplier study against the plain run at the same k; gain below report.modifier_margin.",
        "paired non-superiority 5× − plain < margin",
        (LR_MULTIPLIER,),
        lr_no_gain,
    ),
    Claim(
        "lr_multiplier_adds_variance",
        f"{SEED_001} App. E",
        "A higher learning rate appears to increase the variance of the evaluation metrics.",
        "Variance over trials of the 5× runs against the plain runs at the same k < L.",
        "one-sided F test of the variance ratio",
        (LR_MULTIPLIER,),
        lr_adds_variance,
    ),
    Claim(
        "keep_layernorm_does_not_help",
        f"{SEED_001} App. F",
        "Preserving the LayerNorm parameters does not aid (and may even harm) finetuning of reinitialised layers.",
        "Each k < L of the keep-LayerNorm study against the plain run at the same k; gain below "
        "report.modifier_margin.",
        "paired non-superiority kept − plain < margin",
        (Need("progressive", "keep_layernorm", {"ks": [0, 3]}, {"keep_layernorm": True}),),
        keep_layernorm_no_help,
    ),
)
