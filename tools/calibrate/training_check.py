"""The training-length check (src/claims/training.py): how often it marks a (task, size) undertrained
(training_check_table)."""

from __future__ import annotations

import itertools
from dataclasses import dataclass

import numpy as np

from src.claims.training import UNDERTRAINED, EpochGain, TrainingCheck
from tools.calibrate.nulls import MARGIN

# The true gain of training longer at k = 0 (the full model's is 0): 0 (a plateau), up to the margin, at it,
# and beyond it: 0.094 is scratch's gain from 3 to 6 epochs at 128 subjectivity examples (docs/embedded_default.md)
TRAINING_GAINS = (0.0, 0.01, 0.02, 0.05, 0.094)
# The SD of one trial's gain: 0.005-0.008 in the default's check (7 -> 10 epochs), about 0.03 where eval
# accuracy still swings from epoch to epoch (lr 5e-5, 3 -> 6 epochs)
TRAINING_SDS = (0.005, 0.01, 0.03)
TRAINING_TRIALS = (3, 5)


@dataclass(frozen=True)
class TrainingRow:
    gain: float
    sd: float
    trials: int
    reps: int
    undertrained: float  # share of replicates the check marks undertrained


def training_check_table(
    reps: int, seed: int = 0, gains=TRAINING_GAINS, sds=TRAINING_SDS, trials=TRAINING_TRIALS, margin: float = MARGIN
) -> list[TrainingRow]:
    """How often TrainingCheck (its status, as the report reads it) marks a (task, size) undertrained when k = 0
    truly gains `gain` from training longer and the full model gains nothing, each trial's gain normal with SD
    `sd`: its false-alarm rate at gain 0 and its miss rate beyond the margin."""
    rng = np.random.default_rng(seed)
    rows = []
    for gain, sd, n in itertools.product(gains, sds, trials):
        scratch = gain + sd * rng.standard_normal((reps, n))
        full = sd * rng.standard_normal((reps, n))
        marked = [
            TrainingCheck("task", 128, (EpochGain(0, (3, 6), tuple(a)), EpochGain(6, (3, 6), tuple(b))), margin).status
            == UNDERTRAINED
            for a, b in zip(scratch, full)
        ]
        rows.append(TrainingRow(gain, sd, n, reps, float(np.mean(marked))))
    return rows


TRAINING_HEADER = "| true gain at k = 0 | SD of a trial's gain | T | reps | marked undertrained |\n" + "|---" * 5 + "|"


def training_markdown_row(row: TrainingRow) -> str:
    return f"| {row.gain:+.3f} | {row.sd} | {row.trials} | {row.reps:,} | {row.undertrained:.4f} |"
