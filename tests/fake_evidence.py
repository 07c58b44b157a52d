"""Hand-built evidence for the claims report: runs with their eval predictions, as the report stage reads
them (src/claims/evidence.py Evidence), where the truth is planted; and the report written from it. Shared by
the claims' unit tests and the report's browser test (tests/e2e/test_report_browser.py)."""

import math
import zlib
from dataclasses import replace
from pathlib import Path

import numpy as np
import pandas as pd

from src.claims.evidence import Evidence
from src.claims.render import write_report
from src.claims.summary import WhatRan, failed_run_names, headline
from src.claims.verdicts import judge_claims
from src.config.schema import ReportConfig
from src.params.load import validate
from tests.support import grid_params

L = 4
H = 12  # attention heads per layer
N = 200  # eval examples
LABELS = np.random.default_rng(0).integers(0, 2, N)
RISING = [0.50, 0.70, 0.80, 0.85, 0.90]  # a progressive curve over k = 0..L with a clear gain
SETTINGS = ReportConfig(**{**grid_params()["report"], "bootstrap_resamples": 200})
CONFIG = validate(grid_params())


def predictions_with_accuracy(accuracy: float, seed: int) -> np.ndarray:
    """Predictions whose accuracy on LABELS is `accuracy` (errors at random examples)."""
    wrong = np.random.default_rng(seed).permutation(N)[: round((1 - accuracy) * N)]
    predictions = LABELS.copy()
    predictions[wrong] = 1 - predictions[wrong]
    return predictions


def stable_seed(*parts) -> int:
    """The same seed in every process (Python's hash() of a str is salted per process)."""
    return zlib.crc32("|".join(map(str, parts)).encode())


class Builder:
    """Runs with their predictions, as the report stage reads them."""

    def __init__(self):
        self.rows, self.predictions = [], {}

    def add(self, slug, accuracy, task="sst2", size=500, trial=0, scheme="progressive", status="ok", **columns):
        row = {
            "study": "progressive",
            "task": task,
            "size": size,
            "slug": slug,
            "trial": trial,
            "scheme": scheme,
            "k": math.nan,
            "layer": math.nan,
            "window": math.nan,
            "head_index": math.nan,
            "lr_multiplier": 1.0,
            "keep_layernorm": False,
            "intermediate_task": None,
            "epochs": 3,
            "metric": "accuracy",
            "value": math.nan if status != "ok" else accuracy,
            "status": status,
            "collapsed": False,
            "ref_full": f"k{L}",
            "ref_scratch": "k0",
            "ref_baseline": None,
            "plain": True,
        }
        self.rows.append({**row, **columns})
        if status == "ok":
            self.predictions[(task, size, slug, trial)] = predictions_with_accuracy(
                accuracy, stable_seed(task, size, slug, trial)
            )
        return self

    def curve(self, values, trials, spread=0.01, task="sst2", size=500):
        for t in range(trials):
            for k, v in enumerate(values):
                self.add(f"k{k}", v + spread * ((t + k) % 3 - 1), task, size, t, k=k)
        return self

    def evidence(self, probe=None, weight_change=None, layer_change=None, studies=None, **settings):
        return Evidence(
            pd.DataFrame(self.rows),
            self.predictions,
            {"sst2": LABELS, "cola": LABELS, "qnli": LABELS},
            probe if probe is not None else pd.DataFrame(columns=["task", "layer", "value"]),
            weight_change if weight_change is not None else pd.DataFrame(),
            layer_change if layer_change is not None else pd.DataFrame(),
            L,
            replace(SETTINGS, **settings),
            studies if studies is not None else {"progressive": CONFIG.studies["progressive"]},
            CONFIG.data,
            CONFIG.train,
            num_heads=H,
        )


def probe_table(curves: list[list[float]]) -> pd.DataFrame:
    return pd.DataFrame(
        [
            {"task": "sst2", "layer": layer, "value": value, "seed": seed}
            for seed, curve in enumerate(curves)
            for layer, value in enumerate(curve)
        ]
    )


def probe_evidence(builder: Builder, curve: list[float], seeds: int):
    """Evidence with a probe of `seeds` seeds whose layer-l predictions score exactly curve[l]."""
    predictions = np.stack(
        [
            [predictions_with_accuracy(a, stable_seed("probe", s, layer)) for layer, a in enumerate(curve)]
            for s in range(seeds)
        ]
    )
    probe = probe_table([curve] * seeds).assign(metric="accuracy")
    return replace(builder.evidence(probe=probe), probe_predictions={"sst2": predictions})


def render(
    evidence,
    folder: Path,
    figures: list[tuple[str, Path | str]] | None = None,
    extra: list[tuple[str, pd.DataFrame]] | None = None,
) -> str:
    """The report of `evidence` written to folder/r.md and folder/r.html (a fake progressive PNG and a figure not
    drawn unless `figures` are given; a one-cell extra table unless `extra` are); the Markdown's text."""
    verdict_list, _ = judge_claims(evidence)
    if figures is None:
        png = folder / "progressive.png"
        png.write_bytes(b"\x89PNG fake")
        figures = [("progressive", png), ("heads", "not run: no rows to plot")]
    ok = evidence.runs["status"] == "ok" if len(evidence.runs) else pd.Series(dtype=bool)
    focus = next(((task, sizes[0]) for task, sizes in evidence.curve_sizes().items()), None)  # the first curve
    ran = WhatRan(
        "tiny-bert (a test model; bert, 4 layers, 12 heads)",
        "tiny-bert (bert, 4 layers)",
        evidence.studies,
        ok.sum(),
        (~ok).sum(),
        "abc1234",
        "0.6.0",
        headline(evidence, *focus) if focus else None,
        evidence.fallback_counts(),
        failed_run_names(evidence.conditions(plain=None)),
    )
    write_report(
        verdict_list,
        evidence.settings,
        ran,
        [("extra", pd.DataFrame({"a": [1.5]}))] if extra is None else extra,
        figures,
        folder / "r.md",
        folder / "r.html",
    )
    return (folder / "r.md").read_text()
