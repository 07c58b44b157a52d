"""data/predictions.npz: every run's per-example eval predictions and each task's eval
labels, what the report's paired resampling reads. One writer, one reader: the key
format lives here only."""

from __future__ import annotations

from pathlib import Path

import numpy as np

from src.data import tokens
from src.train.result import RunResult

RunKey = tuple[str, int, str, int]  # task, size, slug, trial


def _run_key(key: RunKey) -> str:
    task, size, slug, trial = key
    return f"{task}|{size}|{slug}|{trial}"


def write_predictions(path: Path, results: dict[str, list[RunResult]], tasks_dir: Path) -> None:
    arrays = {}
    for study_results in results.values():
        for r in study_results:
            c = r.cond
            if r.predictions:
                arrays[_run_key((c.task, c.size, c.slug, c.trial))] = r.eval_predictions()
    for task in sorted({key.split("|")[0] for key in arrays}):
        arrays[f"labels|{task}"] = tokens.load_split(tasks_dir / task / "tokens.npz", "eval").example_labels
    np.savez_compressed(path, **arrays)


def read_predictions(path: Path) -> tuple[dict[RunKey, np.ndarray], dict[str, np.ndarray]]:
    """(predictions by (task, size, slug, trial), eval labels by task)."""
    by_run, labels = {}, {}
    with np.load(path) as arrays:
        for key in arrays.files:
            parts = key.split("|")
            if parts[0] == "labels":
                labels[parts[1]] = arrays[key]
            else:
                by_run[(parts[0], int(parts[1]), parts[2], int(parts[3]))] = arrays[key]
    return by_run, labels
