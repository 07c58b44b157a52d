"""Each study's figure, chosen by the registry (src/schemes/registry.py: figure_of), and
the figures drawn across studies (draw_figures: the weight change, every progressive run at
the smallest size, the training loss against steps).

`own`: the study's headline points, `runs` its runs; `plain_points` / `plain_runs`:
unmodified conditions from any study, where each condition's references are found by
slug. A figure with nothing to draw raises plots.NothingToDraw with the reason.
"""

from __future__ import annotations

import functools
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path

import pandas as pd

from src.artefacts.run_result import RunResult
from src.config.schema import Config, StudyConfig
from src.figures import plots
from src.results.aggregate import (
    Tables,
    epoch_curves,
    head_changes,
    progressive_curves,
    step_loss_curves,
    summarise_weights,
)
from src.results.measures import run_measures
from src.schemes.registry import SCHEMES, figure_of


@dataclass(frozen=True)
class StudyTables:
    own: pd.DataFrame  # the study's headline points
    runs: pd.DataFrame  # the study's headline runs
    plain_points: pd.DataFrame
    plain_runs: pd.DataFrame
    references: pd.DataFrame  # full and scratch per task and size
    results: list[RunResult]
    probe: pd.DataFrame


def _variant(study: StudyConfig) -> str:
    modifiers = [
        f"{study.reinit_lr_multiplier:g}x lr on reinitialised layers" if study.reinit_lr_multiplier is not None else "",
        "pretrained LayerNorm kept" if study.keep_layernorm else "",
    ]
    return ", ".join(filter(None, modifiers))


def _baseline(t: StudyTables) -> tuple[pd.DataFrame, pd.DataFrame]:
    """(the study's modified points, the plain points of their baselines)."""
    modified = t.own[t.own["ref_baseline"].notna()]
    keys = modified[["task", "size", "ref_baseline"]].drop_duplicates().rename(columns={"ref_baseline": "slug"})
    return modified, t.plain_points.merge(keys, on=["task", "size", "slug"])


def _sequential(study, t, path):
    modified, baseline = _baseline(t)
    matrix = pd.concat([modified, baseline.assign(intermediate_task=baseline["task"])])
    plots.plot_sequential(matrix.assign(final_task=matrix["task"]), path)


def _modifier(study, t, path):
    modified, baseline = _baseline(t)
    variant = _variant(study)
    both = pd.concat([baseline.assign(variant="baseline"), modified.assign(variant=variant)])
    plots.plot_modifier(
        both,
        path,
        f"{study.name}: progressive reinitialisation with {variant} vs without (mean and 95% t CI over trials)",
    )


def _variants(study: StudyConfig, frame: pd.DataFrame) -> pd.DataFrame:
    """The rows of the study's scheme's own conditions (not the references it reports beside them)."""
    return frame[frame["scheme"].isin(SCHEMES[study.scheme].variants)]


# A scheme's figure (Scheme.figure) or a modifier's: (study, its tables, path) -> drawn.
FIGURES = {
    "progressive": lambda study, t, path: plots.plot_progressive(
        progressive_curves(t.own, t.probe, list(study.tasks)), path
    ),
    "blocks": lambda study, t, path: plots.plot_blocks(_variants(study, t.own), t.references, path),
    "single_layer": lambda study, t, path: plots.plot_single_layer(_variants(study, t.own), t.references, path),
    "permutation": lambda study, t, path: plots.plot_permutation(_variants(study, t.runs), t.references, path),
    "heads": lambda study, t, path: plots.plot_heads(
        head_changes(_variants(study, t.runs), t.plain_runs), t.references, path, study.layers, study.heads
    ),
    "remove": lambda study, t, path: plots.plot_remove(_variants(study, t.own), t.references, path),
    "epochs": lambda study, t, path: plots.plot_epochs(epoch_curves(t.results), path),
    "sequential": _sequential,
    "modifier": _modifier,
}


def draw_study(study: StudyConfig, tables: StudyTables, path: plots.Paths) -> None:
    FIGURES[figure_of(study)](study, tables, path)


def _draw_named_study(t: Tables, name: str, study: StudyConfig, path: plots.Paths) -> None:
    """The figure of the study called `name`, from its rows of the tables."""
    draw_study(
        study,
        StudyTables(
            t.headline_points[t.headline_points["study"] == name],
            t.headline[t.headline["study"] == name],
            t.plain_points,
            t.plain_runs,
            t.references,
            t.results[name],
            t.probe,
        ),
        path,
    )


WEIGHT_COLUMNS = ["task", "size", "layer", "sublayer", "mean", "ci_low", "ci_high", "n"]


def draw_figures(config: Config, tables: Tables, folder: Path, vector: Path, data: Path, listing: Path) -> None:
    """Every study's figure and the figures across studies, each as a PNG into `folder`, as an
    SVG into `vector` and, where it draws means, their numbers as a CSV into `data` (DVC plot
    data; Fig. 1 of the study `progressive` has its own, plots/progressive.csv); each drawn, or
    removed with the reason, as `listing` (metrics/figures.csv) says."""
    t = tables
    figures: dict[str, Callable[[plots.Paths], object]] = {
        name: functools.partial(_draw_named_study, t, name, study) for name, study in config.studies.items()
    }
    weights = summarise_weights(t.weights, config.train) if len(t.weights) else pd.DataFrame(columns=WEIGHT_COLUMNS)
    figures["weight_change"] = lambda path: plots.plot_weight_change(weights, path)
    measured = run_measures({"progressive": t.results.get("progressive", [])})
    progressive_weights = t.weights[t.weights["study"] == "progressive"] if len(t.weights) else t.weights
    figures["representation"] = lambda path: plots.plot_representation(
        measured["cka"], progressive_weights, measured["criticality"], path
    )
    progressive = t.headline[t.headline["study"] == "progressive"]
    figures["progressive_runs"] = lambda path: plots.plot_runs_at_smallest_size(progressive, path)
    figures["progressive_loss"] = lambda path: plots.plot_step_losses(
        step_loss_curves(t.results.get("progressive", []), lambda c: f"k={c.k}"),
        path,
        "Training loss against steps per k, progressive reinitialisation (Huang et al. Fig. 4)",
    )
    sequential = {  # each condition once: two sequential studies may report the same direct run
        r.cond: r for name, study in config.studies.items() if study.intermediate_tasks for r in t.results[name]
    }
    figures["sequential_loss"] = lambda path: plots.plot_step_losses(
        step_loss_curves(
            list(sequential.values()), lambda c: f"after {c.intermediate_task}" if c.intermediate_task else "direct"
        ),
        path,
        "Training loss on the final task against steps, after an intermediate task or direct (Huang et al. Fig. 1)",
    )
    drawn = []
    folder.mkdir(parents=True, exist_ok=True)
    vector.mkdir(parents=True, exist_ok=True)
    data.mkdir(parents=True, exist_ok=True)
    for name, draw in figures.items():
        paths = [folder / f"{name}.png", vector / f"{name}.svg"]
        paths += [data / f"{name}.csv"] if name != "progressive" else []
        try:
            draw(paths)
            drawn.append({"figure": name, "status": "drawn"})
        except plots.NothingToDraw as reason:
            for path in paths:
                path.unlink(missing_ok=True)
            drawn.append({"figure": name, "status": f"not run: {reason}"})
    listing.parent.mkdir(parents=True, exist_ok=True)
    pd.DataFrame(drawn).to_csv(listing, index=False)
