"""How far finetuning moves the weights, per layer (‖ΔW‖ of the full model's output sublayer at
the end of training, and every sublayer's after steps 1, 2, 4, …), and how that grows with data.

Each claim is one entry of this family's CLAIMS_<seed> (the papers: src/claims/claim.py), its
builders beside it; src/claims/registry.py orders the families' entries."""

from __future__ import annotations

import numpy as np
import pandas as pd

from src.claims.claim import PROGRESSIVE, SEED_003, TWO_SIZES, Claim, Shared, one_sided_welch, p_text
from src.claims.evidence import Evidence, studies_of
from src.claims.units import Unit, slope_unit
from src.stats import hypothesis


def full_model_output_change(ev: Evidence) -> pd.DataFrame:
    """End-of-training ‖ΔW‖ (Frobenius: the paper's L2 distance) of the output sublayer of the
    unmodified full model, per task, size, trial and layer."""
    w = ev.weight_change
    if w.empty:
        return pd.DataFrame(columns=["task", "size", "slug", "trial", "layer", "frobenius"])
    full = pd.DataFrame(
        [(c.task, c.size, c.slug, run.trial) for c in ev.conditions() if c.slug == c.refs.full for run in c.finished()],
        columns=["task", "size", "slug", "trial"],
    )
    rows = w[(w["sublayer"] == "output") & (w["status"] == "ok")].merge(
        full.drop_duplicates(), on=["task", "size", "slug", "trial"]
    )
    return rows.drop_duplicates(["task", "size", "trial", "layer"])


def later_layers_move_more(ev: Evidence, shared: Shared) -> list[Unit]:
    units = []
    for (task, size), rows in full_model_output_change(ev).groupby(["task", "size"]):
        by_trial = rows.pivot_table(index="trial", columns="layer", values="frobenius")
        layers = by_trial.columns.to_numpy(dtype=float)
        unit = slope_unit(
            "later_layers_move_more",
            f"{task} n={size}",
            "per-trial slope of end-of-training ‖ΔW_output‖ over layers > 0 (t over trials)",
            layers,
            by_trial.to_numpy(),
            studies=studies_of(ev, task, size, set(rows["slug"])),
            reads=((task, int(size)),),
        )
        unit.notes.append(
            "exact permutation p of ρ(layer, mean ‖ΔW‖) (raw) = "
            + p_text(hypothesis.exact_spearman_p(layers, by_trial.mean().to_numpy()))
        )
        units.append(unit)
    return units


def per_trial_output_total(rows: pd.DataFrame) -> np.ndarray:
    return rows.groupby("trial")["frobenius"].apply(lambda f: float(np.sqrt((f**2).sum()))).to_numpy()


def size_pairs(rows: pd.DataFrame):
    for task, task_rows in rows.groupby("task"):
        sizes = sorted(set(task_rows["size"]))
        if len(sizes) >= 2:
            yield (
                task,
                sizes[0],
                sizes[-1],
                task_rows[task_rows["size"] == sizes[0]],
                task_rows[task_rows["size"] == sizes[-1]],
            )


def change_studies(ev: Evidence, task: str, sizes, rows: pd.DataFrame) -> tuple:
    return tuple(sorted({s for size in sizes for s in studies_of(ev, task, size, set(rows["slug"]))}))


def more_data_moves_weights_more(ev: Evidence, shared: Shared) -> list[Unit]:
    return [
        one_sided_welch(
            ev,
            "more_data_moves_weights_more",
            f"{task} n={large} vs n={small}",
            "Welch t: end-of-training ‖ΔW_output‖ (all layers) at the largest size − at the smallest > 0",
            per_trial_output_total(big),
            per_trial_output_total(little),
            studies=change_studies(ev, task, (small, large), big),
            reads=((task, small), (task, large)),
        )
        for task, small, large, little, big in size_pairs(full_model_output_change(ev))
    ]


def more_data_equal_steps(ev: Evidence, shared: Shared) -> list[Unit]:
    """Secondary: all sublayers' ‖ΔW‖ at the largest step count both sizes reached."""
    units: list[Unit] = []
    changes = ev.layer_change
    if changes.empty:
        return units
    for task, small, large, little, big in size_pairs(changes):
        step = min(little.groupby("trial")["step"].max().min(), big.groupby("trial")["step"].max().min())
        unit = one_sided_welch(
            ev,
            "more_data_moves_weights_more_at_equal_steps",
            f"{task} n={large} vs n={small}",
            f"Welch t: ‖ΔW‖ (all sublayers) at step {step} at the largest size − at the smallest > 0",
            per_trial_output_total(big[big["step"] == step]),
            per_trial_output_total(little[little["step"] == step]),
            studies=studies_of(ev, task, large, {c.refs.full for c in ev.conditions()}),
            reads=((task, small), (task, large)),
        )
        unit.notes.append("equal steps: controls the number of Adam steps, not how often each example was seen")
        units.append(unit)
    return units


def weight_change_interaction(ev: Evidence, shared: Shared) -> list[Unit]:
    units = []
    for task, small, large, little, big in size_pairs(full_model_output_change(ev)):
        slopes = [
            np.array(
                [
                    np.polyfit(r["layer"].to_numpy(float), r["frobenius"].to_numpy(float), 1)[0]
                    for _, r in rows.groupby("trial")
                ]
            )
            for rows in (big, little)
        ]
        units.append(
            one_sided_welch(
                ev,
                "weight_change_grows_more_in_later_layers_with_more_data",
                f"{task} n={large} vs n={small}",
                "Welch t: per-trial slope of ‖ΔW_output‖ over layers at the largest size − at the smallest > 0",
                *slopes,
                studies=change_studies(ev, task, (small, large), big),
                reads=((task, small), (task, large)),
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
)
