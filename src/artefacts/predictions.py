"""data/predictions.npz: every run's per-example eval predictions, every probe's (seeds x
layers x examples) and each task's eval labels, what the report's paired resampling reads:
the probes share their task's eval set with the runs, so the report resamples it jointly.
One writer, one reader: the key format lives here only."""

from __future__ import annotations

from pathlib import Path
from typing import NamedTuple

import numpy as np

from src.artefacts.probe_result import read_probe_predictions
from src.artefacts.run_result import RunResult
from src.tasks import splits

RunKey = tuple[str, int, str, int]  # task, size, slug, trial


class Predictions(NamedTuple):
    runs: dict[RunKey, np.ndarray]  # a run's eval predictions [N]
    labels: dict[str, np.ndarray]  # a task's eval labels [N]
    probes: dict[str, np.ndarray]  # a probed task's eval predictions [seeds, layers 0..L, N]


def _run_key(key: RunKey) -> str:
    task, size, slug, trial = key
    return f"{task}|{size}|{slug}|{trial}"


def write_predictions(
    path: Path, results: dict[str, list[RunResult]], tasks_dir: Path, probe_dir: Path, probe_tasks: list[str]
) -> None:
    """Every run's predictions, and the probes' of `probe_tasks` (the probe stage's
    <probe_dir>/<task>.npz), with the eval labels of each task either has."""
    arrays: dict[str, np.ndarray] = {}
    tasks = set(probe_tasks)
    for study_results in results.values():
        for r in study_results:
            c = r.cond
            predictions = r.eval_predictions()
            if predictions is not None:
                arrays[_run_key((c.task, c.size, c.slug, c.trial))] = predictions
                tasks.add(c.task)
    for task in probe_tasks:
        arrays[f"probe|{task}"] = read_probe_predictions(probe_dir / f"{task}.npz")
    for task in sorted(tasks):
        arrays[f"labels|{task}"] = splits.load_split(tasks_dir / task / "tokens.npz", "eval").example_labels
    Path(path).parent.mkdir(parents=True, exist_ok=True)
    np.savez_compressed(path, allow_pickle=False, **arrays)  # numbers only: the file loads without pickle


def read_predictions(path: Path) -> Predictions:
    predictions = Predictions({}, {}, {})
    with np.load(path) as arrays:
        for key in arrays.files:
            parts = key.split("|")
            if parts[0] == "labels":
                predictions.labels[parts[1]] = arrays[key]
            elif parts[0] == "probe":
                predictions.probes[parts[1]] = arrays[key]
            else:
                predictions.runs[(parts[0], int(parts[1]), parts[2], int(parts[3]))] = arrays[key]
    return predictions
