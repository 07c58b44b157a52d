"""Modifiers of how a run trains (more or fewer epochs, a higher learning rate on the reinitialised
layers, kept LayerNorm), each modified condition against the plain run at the same k.

Each claim is one entry of this family's CLAIMS_<seed> (the papers: src/claims/claim.py), its
builders beside it; src/claims/registry.py orders the families' entries."""

from __future__ import annotations

from src.claims.claim import SEED_001, Claim, Need, Shared, variance_ratio_unit
from src.claims.evidence import Evidence
from src.claims.units import Unit, contrast_unit

LR_MULTIPLIER = Need("progressive", "lr_multiplier", {"ks": [0, 3]}, {"reinit_lr_multiplier": 5})


def modified_units(
    ev: Evidence, claim: str, select, shape: str, test: str, sizes=lambda size: True, sign: int = 1
) -> list[Unit]:
    """Each modified condition (`select` of the runs) against the plain run at the same task, size
    and k, paired by trial: sign * (modified − plain)."""
    units, plain = [], ev.plain()
    modified = ev.runs[~ev.runs["plain"]] if "plain" in ev.runs else ev.runs.iloc[0:0]
    for (task, size, k, slug), _ in select(modified).groupby(["task", "size", "k", "slug"]):
        if not sizes(int(size)):
            continue
        base = plain[
            (plain["scheme"] == "progressive") & (plain["task"] == task) & (plain["size"] == size) & (plain["k"] == k)
        ]
        if base.empty:
            continue
        units.append(
            contrast_unit(
                ev,
                claim,
                task,
                int(size),
                {slug: sign, base["slug"].iloc[0]: -sign},
                test,
                name=f"{task} n={size} {slug}",
                shape=shape,
                margin=ev.settings.modifier_margin,
            )
        )
    return units


def default_epochs(ev: Evidence, size: int) -> int:
    return ev.train.epochs_for(size) if ev.train else 3


def longer_training(ev: Evidence, shared: Shared) -> list[Unit]:
    small = ev.train.small_size if ev.train else 0
    return modified_units(
        ev,
        "epochs_beyond_3_do_not_help_with_plenty_of_data",
        lambda r: r[
            (r["lr_multiplier"] == 1)
            & ~r["keep_layernorm"].astype(bool)
            & r["intermediate_task"].isna()
            & (r["epochs"] > r["size"].map(lambda s: default_epochs(ev, s)))
        ],
        "below",
        f"longer − default epochs < {ev.settings.modifier_margin} (non-superiority)",
        sizes=lambda s: s > small,
    )


def five_epochs_help(ev: Evidence, shared: Shared) -> list[Unit]:
    small = ev.train.small_size if ev.train else 0
    return modified_units(
        ev,
        "five_epochs_help_with_little_data",
        lambda r: r[
            (r["lr_multiplier"] == 1)
            & ~r["keep_layernorm"].astype(bool)
            & r["intermediate_task"].isna()
            & (r["epochs"] < r["size"].map(lambda s: default_epochs(ev, s)))
        ],
        "greater",
        "default (small_epochs) − fewer epochs > 0",
        sizes=lambda s: s <= small,
        sign=-1,
    )


def lr_no_gain(ev: Evidence, shared: Shared) -> list[Unit]:
    return modified_units(
        ev,
        "lr_multiplier_does_not_help",
        lambda r: r[(r["lr_multiplier"] != 1) & (r["k"] < ev.num_layers)],
        "below",
        f"5× lr − plain < {ev.settings.modifier_margin} (non-superiority)",
    )


def lr_adds_variance(ev: Evidence, shared: Shared) -> list[Unit]:
    units, plain = [], ev.plain()
    modified = ev.runs[~ev.runs["plain"]] if "plain" in ev.runs else ev.runs.iloc[0:0]
    modified = modified[
        (modified["lr_multiplier"] != 1) & (modified["k"] < ev.num_layers) & (modified["status"] == "ok")
    ]
    for (task, size, k, slug), rows in modified.groupby(["task", "size", "k", "slug"]):
        base = plain[
            (plain["scheme"] == "progressive")
            & (plain["task"] == task)
            & (plain["size"] == size)
            & (plain["k"] == k)
            & (plain["status"] == "ok")
        ]
        a, b = rows["value"].to_numpy(float), base["value"].to_numpy(float)
        if len(b) == 0:
            continue
        units.append(
            variance_ratio_unit(
                "lr_multiplier_adds_variance",
                f"{task} n={size} {slug}",
                "var(5× lr) / var(plain) > 1 (F test, one-sided)",
                a,
                b,
                tuple(sorted(set(rows["study"]) | set(base["study"]))),
                reads=((task, int(size)),),
            )
        )
    return units


def keep_layernorm_no_help(ev: Evidence, shared: Shared) -> list[Unit]:
    return modified_units(
        ev,
        "keep_layernorm_does_not_help",
        lambda r: r[r["keep_layernorm"].astype(bool) & (r["k"] < ev.num_layers)],
        "below",
        f"kept LayerNorm − plain < {ev.settings.modifier_margin} (non-superiority)",
    )


CLAIMS_001 = (
    Claim(
        "epochs_beyond_3_do_not_help_with_plenty_of_data",
        f"{SEED_001} App. D",
        "Training longer than three epochs has minimal effect at 5k examples.",
        "Runs with more than the default epochs against the plain run at the same k, at sizes above "
        "train.small_size; 'minimal' = a gain below report.modifier_margin.",
        "paired non-superiority longer − default < margin",
        (Need("progressive", "epochs", {"ks": [0, "L"]}, {"epochs": 6}, sizes="large"),),
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
