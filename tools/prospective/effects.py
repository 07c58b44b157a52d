"""The effects the prospective tables are simulated at, each with its source.

The papers give few numbers: 004's Fig. 2 (sequential finetuning), its §5.6 MRPC table and its Figs. 5-6 (per-head
differences) are the only per-condition numbers of the three seeds' claims (001's Table 1 is a correlation). Every
other effect is this project's, read off the paper-tasks run (docs/paper_tasks.md: MiniLM, 6 layers, 500
examples, 3 trials, GLUE dev), its k scaled to the preset's L (k / L of the way along MiniLM's 7-point curve,
linearly interpolated), and used at every size: the MiniLM curve at 500 examples stands for BERT-base at the
preset's sizes, a labelled assumption."""

from __future__ import annotations

import numpy as np

SEED_004 = "../shared/seeds/004_317186e5dc9a0fa6.txt"
PAPER_TASKS = "this project's, MiniLM 500-example paper-tasks curve (docs/paper_tasks.md), k scaled by L"

# docs/paper_tasks.md: progressive reinit, k = 0..6, mean of 3 trials (CoLA: MCC; the rest accuracy).
CURVES = {
    "sst2": (0.722, 0.725, 0.738, 0.777, 0.793, 0.789, 0.797),
    "cola": (0.045, 0.049, 0.069, 0.094, 0.078, 0.090, 0.061),
    "qnli": (0.570, 0.560, 0.585, 0.677, 0.728, 0.717, 0.717),
}
# The probe's score per layer 0..6 (docs/paper_tasks.md, "Probes"), same tasks and metrics.
PROBES = {
    "sst2": (0.778, 0.778, 0.784, 0.803, 0.811, 0.806, 0.812),
    "cola": (0.030, 0.075, 0.140, 0.128, 0.125, 0.121, 0.072),
    "qnli": (0.586, 0.590, 0.628, 0.684, 0.690, 0.620, 0.537),
}
# Tasks without a curve of their own take QNLI's, the measured sentence-pair task (RTE, MRPC, STS-B are pairs;
# SQuAD is a question against a paragraph, as QNLI is), labelled where used.
NEAREST_CURVE = "qnli"
# 004 §5.6: MRPC F1 0.848 with no layer reinitialised, 0.812 with any k layers (its headline metric here: F1).
MRPC_FULL, MRPC_ANY_K = 0.848, 0.812
# 004 Fig. 2: rows the final task, columns the intermediate task (CoLA, MRPC, RTE, WNLI); the diagonal is direct.
SEQUENTIAL_ORDER = ("cola", "mrpc", "rte", "wnli")
SEQUENTIAL = {
    "cola": (0.526, 0.523, 0.526, 0.536),
    "mrpc": (0.757, 0.776, 0.732, 0.786),
    "rte": (0.462, 0.610, 0.635, 0.588),
    "wnli": (0.408, 0.394, 0.464, 0.549),
}
# 004 Figs. 5 (CoLA, MCC) and 6 (STS-B, correlation): head reinit - full per layer, heads 1..12.
HEADS = {
    "cola": {
        1: (0.008, -0.023, -0.005, -0.015, 0.01, -0.018, -0.015, -0.014, -0.026, -0.005, 0.011, -0.007),
        2: (-0.016, -0.007, -0.004, -0.045, -0.015, -0.031, -0.018, -0.043, -0.047, 0, -0.016, -0.017),
        11: (0.002, 0.013, 0.002, -0.013, 0.02, 0, 0.002, 0.007, 0.002, 0.013, 0.013, 0.015),
        12: (0.008, -0.002, -0.002, -0.002, 0.002, 0.002, 0, 0.005, 0.005, 0.016, 0.002, 0.005),
    },
    "stsb": {
        1: (0.002, 0.002, -0.002, -0.003, -0.003, -0.007, -0.004, -0.001, -0.007, -0.001, -0.005, -0.003),
        2: (-0.001, -0.001, -0.001, -0.004, -0.002, -0.006, -0.003, -0.002, -0.023, -0.001, -0.004, -0.001),
        11: (-0.003, 0.003, 0.004, -0.002, 0, 0.003, 0, -0.003, -0.002, 0.002, 0, 0.003),
        12: (0, -0.002, 0.003, -0.004, 0.001, 0.001, 0, 0.005, 0, 0, 0.001, 0.004),
    },
}
HEADS_SOURCE = f"paper's, {SEED_004} §5.7 Figs. 5-6 (one run each)"
# Chance on each task's headline metric: accuracy 0.5 (binary), MCC and correlations 0, MRPC's F1 and SQuAD 2.0's
# F1 those of the majority answer (always "paraphrase": 0.812 on MRPC dev, 004 §5.6; always "no answer": about
# 0.5 on SQuAD 2.0 dev, whose questions are about half unanswerable).
CHANCE = {"sst2": 0.5, "qnli": 0.5, "rte": 0.5, "wnli": 0.5, "cola": 0.0, "stsb": 0.0, "mrpc": 0.812, "squad_v2": 0.5}


def curve_source(task: str) -> str:
    if task == "mrpc":
        return f"paper's, {SEED_004} §5.6 (MRPC F1 0.848 full, 0.812 any k)"
    if task in CURVES:
        return PAPER_TASKS
    return f"{PAPER_TASKS}; {task}: QNLI's (nearest sentence-pair task, none measured)"


def score(task: str, k: int, layers: int) -> float:
    """The finetuned score with layers >= k reinitialised (k = layers: none) on `task`."""
    if task == "mrpc":
        return MRPC_FULL if k == layers else MRPC_ANY_K
    curve = CURVES.get(task, CURVES[NEAREST_CURVE])
    return float(np.interp(k / layers * (len(curve) - 1), np.arange(len(curve)), curve))


def probe(task: str, layer: int, layers: int) -> float:
    curve = PROBES[task]
    return float(np.interp(layer / layers * (len(curve) - 1), np.arange(len(curve)), curve))


def sequential(final: str, intermediate: str) -> float:
    """after `intermediate` - direct on `final` (004 Fig. 2)."""
    row = SEQUENTIAL[final]
    return row[SEQUENTIAL_ORDER.index(intermediate)] - row[SEQUENTIAL_ORDER.index(final)]
