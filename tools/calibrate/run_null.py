"""A finished run's design under a global null: its evidence read as the report stage reads it
(read_run_evidence), the null's common levels (common_levels), one replicate of its outcomes drawn under the null
(null_replicate) and the null's expectation, where each estimand's truth is read (expected_evidence)."""

from __future__ import annotations

import math
from dataclasses import replace
from pathlib import Path

import numpy as np
import pandas as pd

from src.artefacts.evidence import read_evidence
from src.claims.evidence import Evidence
from src.core.errors import UserError
from src.params.load import load_config, model_limits
from src.tasks.kinds import Classification, TaskKind
from src.tasks.metrics import score
from src.tasks.registry import TASKS
from tools.calibrate.nulls import NEAR_PUSH, NULLS, SHARED_EXAMPLE_SD, Null, mean_for

# A replicate keeps a finished run's design exactly (its runs, trials, tasks, eval labels, probe seeds and layers,
# weight-change rows) and replaces every outcome by one drawn under the global null: every condition of a task has
# one expected accuracy (no effect of k, scheme, modifier, size, intermediate task), every probe layer of a task
# another, every layer moves alike in finetuning. The whole report is then judged (judge_claims, the report's code)
# and each decided verdict is compared with the truth under that null.

REPORT_NULL = "trial + example"  # the default of the nulls a replicate can take (REPORT_NULLS)
# A global null treats every condition alike, collapses included: the symmetric NULLS, and one where every run of
# every condition collapses at the same rate (the harness's asymmetric nulls have no global form).
REPORT_NULLS = {name: null for name, null in NULLS.items() if null.symmetric} | {
    "every condition collapses (0.2)": Null(trial_sd=0.05, example_sd=0.2, collapse=0.2, collapse_a=0.2),
}


def read_run_evidence(metrics: Path, predictions: Path, model: Path, params: Path) -> Evidence:
    """A finished run's evidence, read exactly as the report stage reads it (stages/report.py)."""
    for path, what in ((metrics / "runs.csv", "--run-metrics"), (predictions, "--run-predictions")):
        if not path.is_file():
            raise UserError(f"{what}: no file {path} (a finished run's metrics/ and data/predictions.npz)")
    if not (model / "base.json").is_file():
        raise UserError(f"--run-model: no prepared model at {model} (its base.json; the run's data/model)")
    if not params.is_file():
        raise UserError(f"--run-params: no file {params} (the run's params.yaml)")
    config, limits = load_config(params), model_limits(model)
    assert limits.num_layers is not None and limits.num_heads is not None, "base.json records both"
    evidence = read_evidence(Evidence, metrics, predictions, limits.num_layers, config)
    return replace(evidence, num_heads=limits.num_heads)


def _classes(task: str) -> int:
    spec = TASKS.get(task)
    if spec is None or not isinstance(spec.kind, Classification):
        raise UserError(f"task {task!r}: the whole-report null simulates classification tasks only")
    return spec.num_labels


def _accuracy(predictions: np.ndarray, labels: np.ndarray) -> float:
    return float(np.mean(predictions == labels))


def common_levels(ev: Evidence) -> dict[tuple[str, str], float]:
    """The global null's expected accuracy of each task's runs ("runs", task): the mean accuracy of its plain
    finished runs' stored predictions; and of its probes ("probe", task): the mean over its stored probe
    predictions (every seed and layer), else over its probe scores."""
    plain = ev.plain()
    plain = plain[plain["status"] == "ok"]
    levels = {}
    for task in sorted(set(ev.runs.loc[ev.runs["status"] == "ok", "task"])):
        _classes(task)
        rows = plain[plain["task"] == task]
        keys = zip(rows["size"].astype(int), rows["slug"], rows["trial"].astype(int))
        found = [
            _accuracy(ev.predictions[(task, *key)], ev.labels[task]) for key in keys if (task, *key) in ev.predictions
        ]
        if not found or task not in ev.labels:
            raise UserError(f"task {task!r}: no stored predictions of its plain runs and eval labels (predictions.npz)")
        levels[("runs", task)] = float(np.mean(found))
    for task, rows in ev.probe.groupby("task") if not ev.probe.empty else ():
        stored = ev.probe_predictions.get(task)
        levels[("probe", task)] = (
            _accuracy(stored, ev.labels[task]) if stored is not None else float(rows["value"].astype(float).mean())
        )
    return levels


def _predictions(correct: np.ndarray, labels: np.ndarray, classes: int, rng: np.random.Generator) -> np.ndarray:
    """The label where `correct`, another class (at random among the others) where not."""
    other = (labels + rng.integers(1, classes, labels.shape)) % classes
    return np.where(correct, labels, other).astype(labels.dtype)


def _scored(runs: pd.DataFrame, index, task: str, predictions: np.ndarray, labels: np.ndarray) -> None:
    """Set a run's score (its metric, as the pipeline computes it: src/tasks/metrics.py score), its majority share
    and its collapse flag (src/tasks/kinds.py) from its predictions."""
    metric = runs.at[index, "metric"]
    runs.at[index, "value"] = score((metric,), predictions, labels)[metric]
    share = TASKS[task].kind.majority_share(predictions)
    runs.at[index, "majority_share"], runs.at[index, "collapsed"] = share, TaskKind.collapsed(share)


def _with_outcomes(ev: Evidence, run_predictions, probe_predictions, weight_change, layer_change) -> Evidence:
    """`ev` with every finished run's and probe's outcomes replaced: `run_predictions(task, index of its runs,
    labels)` and `probe_predictions(task, seeds, layers, labels)` give predictions [runs or seeds, (layers,) N]."""
    runs = ev.runs.copy()
    runs["majority_share"] = runs["majority_share"].astype(float) if "majority_share" in runs else math.nan
    predictions, probe, probes = {}, ev.probe.copy(), {}
    for task in sorted(set(runs.loc[runs["status"] == "ok", "task"])):
        finished, labels = runs.index[(runs["task"] == task) & (runs["status"] == "ok")], ev.labels[task]
        for index, drawn in zip(finished, run_predictions(task, finished, labels)):
            key = (task, int(runs.at[index, "size"]), runs.at[index, "slug"], int(runs.at[index, "trial"]))
            _scored(runs, index, task, drawn, labels)
            if key in ev.predictions:
                predictions[key] = drawn
    for task, rows in ev.probe.groupby("task") if not ev.probe.empty else ():
        seeds = sorted(set(rows["seed"])) if "seed" in rows else [0]
        layers = list(range(ev.num_layers + 1))
        drawn = probe_predictions(task, len(seeds), len(layers), ev.labels[task])  # [S, L+1, N]
        metric = rows["metric"] if "metric" in rows else pd.Series("accuracy", rows.index)
        for index in rows.index:
            s = seeds.index(rows.at[index, "seed"]) if "seed" in rows else 0
            name = metric[index]
            probe.at[index, "value"] = score((name,), drawn[s, int(rows.at[index, "layer"])], ev.labels[task])[name]
        if task in ev.probe_predictions:
            probes[task] = drawn
    return replace(
        ev,
        runs=runs,
        predictions=predictions,
        probe=probe,
        probe_predictions=probes,
        weight_change=weight_change,
        layer_change=layer_change,
    )


WEIGHT_RUN = ["study", "task", "size", "slug", "trial"]  # one run of weight_change.csv
LAYER_RUN = ["task", "size", "trial"]  # one full-model run of layer_change.csv


def _layers_permuted(table: pd.DataFrame, run: list[str], rng: np.random.Generator) -> pd.DataFrame:
    """Every layer alike: the layer labels of each run permuted at random, one permutation for all its rows
    (sublayers, steps), so that each layer keeps its values together and the run keeps its values."""
    if table.empty:
        return table
    table = table.copy()
    for _, rows in table.groupby([c for c in run if c in table], dropna=False, sort=True):
        layers = np.unique(rows["layer"])
        table.loc[rows.index, "layer"] = rows["layer"].map(dict(zip(layers, rng.permutation(layers))))
    return table


def _layers_averaged(table: pd.DataFrame, run: list[str], values: list[str]) -> pd.DataFrame:
    """Every layer alike, in expectation: each run's values replaced by their mean over its layers."""
    if table.empty:
        return table
    table = table.copy()
    for column in (c for c in values if c in table):
        table[column] = table.groupby([c for c in run if c in table], dropna=False)[column].transform("mean")
    return table


def null_replicate(ev: Evidence, null: Null, levels: dict, rng: np.random.Generator) -> Evidence:
    """One replicate of `ev`'s design under the global null, on the harness's probit model (`null`'s SDs): a run of
    trial t of a task is correct on example n where

        mu + trial_sd * z[size, t] + example_sd * v[n] + u[n] + eps[run, n] > 0,

    the trial effect z shared by the conditions of that trial (they share its training subset), the difficulty v,
    u (SD SHARED_EXAMPLE_SD) shared by every run and probe of the task, the interaction eps each run's own, and mu
    (mean_for) giving the task's common expected accuracy (common_levels); a probe of seed s at layer l likewise,
    its seed's effect shared by its layers, with the probes' common level. Every run, whatever its condition,
    collapses onto one class (drawn per run) with probability `null.collapse` and nearly collapses with probability
    `null.near_b` (a share NEAR_PUSH of its examples pushed onto one class), its trained runs' mu compensating so
    that the expected accuracy stays the common level. Weight change and layer change: each run's layer labels
    permuted (_layers_permuted)."""
    one_class = null.collapse + float(np.mean(NEAR_PUSH)) * null.near_b  # expected share of a run's examples

    def latent(level: float, effects: np.ndarray, difficulty: np.ndarray, shape: tuple, collapse=0.0, chance=0.5):
        return mean_for(level, null, collapse, chance) + effects + difficulty + rng.standard_normal(shape)

    difficulty = {
        task: null.example_sd * rng.standard_normal(len(labels)) + SHARED_EXAMPLE_SD * rng.standard_normal(len(labels))
        for task, labels in sorted(ev.labels.items())
    }

    def run_predictions(task, finished, labels):
        rows = ev.runs.loc[finished]
        trials = list(zip(rows["size"].astype(int), rows["trial"].astype(int)))
        effect = {trial: null.trial_sd * rng.standard_normal() for trial in sorted(set(trials))}
        effects = np.array([effect[trial] for trial in trials])[:, None]
        classes, shape = _classes(task), (len(trials), len(labels))
        correct = latent(levels[("runs", task)], effects, difficulty[task], shape, one_class, 1 / classes) > 0
        predictions = _predictions(correct, labels, classes, rng)
        if not one_class:
            return predictions
        draw = rng.random((len(trials), 1))
        pushed = rng.random(shape) < rng.uniform(*NEAR_PUSH, (len(trials), 1))
        onto = (draw < null.collapse) | ((draw < null.collapse + null.near_b) & pushed)
        return np.where(onto, rng.integers(0, classes, (len(trials), 1)), predictions).astype(labels.dtype)

    def probe_predictions(task, seeds, layers, labels):
        effects = null.trial_sd * rng.standard_normal((seeds, 1, 1))
        correct = latent(levels[("probe", task)], effects, difficulty[task], (seeds, layers, len(labels))) > 0
        return _predictions(correct, labels, _classes(task), rng)

    return _with_outcomes(
        ev,
        run_predictions,
        probe_predictions,
        _layers_permuted(ev.weight_change, WEIGHT_RUN, rng),
        _layers_permuted(ev.layer_change, LAYER_RUN, rng),
    )


def expected_evidence(ev: Evidence, levels: dict) -> Evidence:
    """`ev`'s design at the global null's expectation, where each estimand's true value is read: every run of a task
    predicts alike, right on round(level x N) of the examples (its common level), every probe of it alike at the
    probes' level, and every layer of a run moves by the run's mean over its layers."""

    def alike(level: float, labels: np.ndarray, task: str) -> np.ndarray:
        correct = np.arange(len(labels)) < round(level * len(labels))
        return np.where(correct, labels, (labels + 1) % _classes(task)).astype(labels.dtype)

    return _with_outcomes(
        ev,
        lambda task, finished, labels: [alike(levels[("runs", task)], labels, task)] * len(finished),
        lambda task, seeds, layers, labels: np.broadcast_to(
            alike(levels[("probe", task)], labels, task), (seeds, layers, len(labels))
        ),
        _layers_averaged(ev.weight_change, WEIGHT_RUN + ["sublayer"], ["frobenius", "spectral"]),
        _layers_averaged(ev.layer_change, LAYER_RUN + ["step"], ["frobenius"]),
    )
