"""The report pinned byte for byte: a fixed synthetic design of every study family (progressive at two sizes
tenfold apart on two tasks, blocks, single layers, permutation, heads, removal, the lr-multiplier,
keep-LayerNorm and epochs modifiers, sequential finetuning, probes with their predictions, weight change),
its runs faked as finished results with planted scores, goes in process through the aggregate's tables and
predictions store and the report stage (`stages.report.main`), and report.md and verdicts.json must equal the
golden files beside this test. A refactor of the evidence or verdict side that changes no number leaves them
equal; a change that does must regenerate them (`GOLDEN_UPDATE=1`) and say in its commit what moved.

The report's commit stamp is fixed (checkout_commit patched), so the golden holds no real commit."""

from __future__ import annotations

import json
import math
import os
import sys
import zlib
from pathlib import Path

import numpy as np
import pandas as pd
import yaml

from src.artefacts.base_model import BaseModelRecord
from src.artefacts.predictions import write_predictions
from src.artefacts.probe_result import ProbeLayer, ProbeResult, write_probe_predictions
from src.artefacts.run_result import result_path
from src.conditions.studies import all_study_conditions, trained_conditions
from src.params.load import validate
from src.results.aggregate import build_tables, write_tables
from src.results.measures import write_measures
from src.tasks.metrics import score
from src.tasks.registry import get_task
from src.tasks.splits import TokenizedSplit, save_splits
from tests.support import grid_params, stub_result

GOLDEN = Path(__file__).parent / "golden"
LAYERS, HEADS = 4, 4
EVAL = 120  # eval examples per task
SUBLAYERS = ("query", "key", "value", "attention_output", "intermediate", "output")
TASKS = ("sst2", "qnli", "cola", "rte", "mrpc", "wnli")
# what each reinitialised layer (1..L) costs a task's score: SST-2 leans on its middle layers, QNLI on its first,
# CoLA on each alike, RTE gains from fresh top layers, MRPC and WNLI barely care
LAYER_COST = {
    "sst2": (0.02, 0.10, 0.08, 0.01),
    "qnli": (0.12, 0.05, 0.03, 0.0),
    "cola": (0.05, 0.05, 0.05, 0.05),
    "rte": (0.06, 0.03, -0.01, -0.03),
    "mrpc": (0.005, 0.005, 0.0, 0.0),
    "wnli": (0.0, 0.0, 0.0, 0.0),
}


def design() -> dict:
    """The test grid on GLUE's tasks with every study family, at trial counts that decide some claims and not
    others."""
    params = grid_params()
    params["task"], params["size"] = "sst2", 80
    params["data"].update({"tasks": list(TASKS), "glue_dir": "glue"})
    params["train"].update({"epochs": 2, "small_size": 8, "small_epochs": 3})
    params["report"]["bootstrap_resamples"] = 100
    params["probe"].update({"tasks": ["sst2", "qnli", "cola"], "seeds": 3})
    sst2 = {"tasks": ["sst2"], "sizes": [80], "trials": 3}
    params["studies"] = {
        "progressive": {
            "scheme": "progressive",
            "tasks": ["sst2", "qnli", "cola", "rte", "mrpc"],
            "sizes": {"sst2": [8, 80], "qnli": [8, 80], "cola": [80], "rte": [80], "mrpc": [80]},
            "trials": 4,
            "ks": list(range(LAYERS + 1)),
        },
        "blocks": {"scheme": "block", "window": 2, **sst2, "tasks": ["sst2", "qnli"]},
        "single_layer": {
            "scheme": "single_layer",
            "layers": list(range(1, LAYERS + 1)),
            **sst2,
            "tasks": ["sst2", "cola"],
        },
        "permutation": {"scheme": "permutation", **sst2, "tasks": ["sst2", "qnli"], "trials": 4},
        "heads": {"scheme": "head", "layers": [1, LAYERS], "heads": list(range(HEADS)), **sst2},
        "remove": {"scheme": "remove", "removals": ["top2", "alternate2", [1, 2]], **sst2},
        "lr_multiplier": {"scheme": "progressive", "ks": [0, 2], "reinit_lr_multiplier": 5, **sst2},
        "keep_layernorm": {"scheme": "progressive", "ks": [0, 2], "keep_layernorm": True, **sst2},
        "epochs": {"scheme": "progressive", "ks": [0, LAYERS], "epochs": 6, **sst2},
        "epochs_small": {"scheme": "progressive", "ks": [0, LAYERS], "epochs": 2, **sst2, "sizes": [8]},
        "sequential": {
            "scheme": "progressive",
            "ks": [LAYERS],
            "intermediate_tasks": ["wnli", "qnli"],
            **sst2,
            "tasks": ["cola", "mrpc", "rte"],
        },
    }
    return params


def labels_of(task: str) -> np.ndarray:
    return np.random.default_rng(zlib.crc32(task.encode())).integers(0, 2, EVAL)


def quality(condition, rng: np.random.Generator) -> float:
    """The planted share of eval examples a run gets right: what its fresh, removed and modified layers cost."""
    cost = LAYER_COST[condition.task]
    fresh = condition.reinit_layers(LAYERS)
    lost = sum(cost[i] for i in fresh) + sum(cost[i] for i in condition.removed_layers())
    lost += 0.02 * len(condition.reinit_heads()) / HEADS
    gained = 0.04 * (condition.size >= 80) + 0.02 * (condition.lr_multiplier != 1.0) * bool(fresh)
    gained += 0.01 * condition.keep_layernorm + 0.03 * (condition.intermediate_task is not None)
    gained += 0.02 * (condition.epochs > 3)
    return float(np.clip(0.62 + gained - lost + rng.normal(0, 0.02), 0.3, 0.98))


def write_runs(root: Path, config) -> None:
    reported = all_study_conditions(config, LAYERS)
    for study in reported:
        for condition in trained_conditions(reported, study, LAYERS):
            rng = np.random.default_rng([condition.trial, condition.size, zlib.crc32(condition.slug.encode())])
            labels = labels_of(condition.task)
            predictions = np.where(rng.random(EVAL) < quality(condition, rng), labels, 1 - labels).astype(np.int64)
            spec = get_task(condition.task)
            steps = condition.epochs * math.ceil(condition.size / config.train.batch_size)
            stub_result(
                condition.as_dict(),
                metric=spec.metrics[0],
                scores=score(spec.metrics, predictions, labels),
                majority_share=spec.kind.majority_share(predictions),
                predictions=spec.kind.encode_predictions(predictions),
                weight_change=[
                    {"layer": layer, "sublayer": sub, "frobenius": layer * (1 + rng.random()), "spectral": 1.0}
                    for layer in range(1, LAYERS + 1)
                    for sub in SUBLAYERS
                ],
                steps=steps,
                layer_change_by_step=[
                    {"step": step, "frobenius": [layer * step**0.5 * (1 + rng.random()) for layer in range(1, 5)]}
                    for step in (2**i for i in range(steps.bit_length()))
                ],
            ).write(result_path(root / "runs" / study, condition))


def write_probes(root: Path, config) -> None:
    """Each probed task's probes: a curve rising to its middle layer, then flat, per seed."""
    for task in config.probe.tasks:
        rng, labels = np.random.default_rng(zlib.crc32(task.encode())), labels_of(task)
        rising = [0.55, 0.66, 0.74, 0.76, 0.75] if task == "rt_sentiment" else [0.55, 0.72, 0.73, 0.70, 0.68]
        predictions = np.stack(
            [
                np.stack([np.where(rng.random(EVAL) < q, labels, 1 - labels) for q in rising])
                for _ in range(config.probe.seeds)
            ]
        )
        layers = [
            ProbeLayer(
                layer,
                seed,
                score(("accuracy",), predictions[seed, layer], labels),
                {"accuracy": 0.5},
                100.0 - 10 * layer,
            )
            for seed in range(config.probe.seeds)
            for layer in range(LAYERS + 1)
        ]
        ProbeResult(task, "accuracy", "mean", 80, EVAL, list(range(config.probe.seeds)), [], 120.0, layers).write(
            root / "probe" / f"{task}.json"
        )
        write_probe_predictions(root / "probe" / f"{task}.npz", predictions)


def write_tasks(root: Path) -> None:
    """Each task's eval labels where the data stage puts them (one token per example: only the labels are read)."""
    for task in TASKS:
        (root / "tasks" / task).mkdir(parents=True)
        labels = labels_of(task)
        split = TokenizedSplit(
            ids=np.ones(EVAL, np.int32),
            type_ids=np.zeros(EVAL, np.int8),
            offsets=np.arange(EVAL + 1, dtype=np.int64),
            labels=labels,
            pad_id=0,
        )
        save_splits(root / "tasks" / task / "tokens.npz", {"eval": split})


def report(root: Path, monkeypatch) -> tuple[str, str]:
    """The design's report.md and verdicts.json, written in process as the aggregate and report stages write
    them (figures not drawn: the report lists them as not run)."""
    from stages import report as stage

    params = design()
    config = validate(params)
    (root / "params.yaml").write_text(yaml.safe_dump(params, sort_keys=False))
    (root / "model").mkdir()
    BaseModelRecord("tiny", "test", "bert", LAYERS, 64, HEADS, "fake", 512).write(root / "model")
    (root / "probe").mkdir()
    write_tasks(root)
    monkeypatch.setattr(os, "fsync", lambda fd: None)  # a test's results need not survive a power cut
    write_runs(root, config)
    write_probes(root, config)
    tables = build_tables(config, all_study_conditions(config, LAYERS), root / "runs", root / "probe", LAYERS)
    write_tables(tables, config, root / "metrics", root / "plots" / "progressive.csv", LAYERS)
    write_measures(config.studies, tables, root / "metrics", LAYERS, root / "runs")
    write_predictions(root / "predictions.npz", tables.results, root / "tasks", root / "probe", config.probe.tasks)
    pd.DataFrame({"figure": list(config.studies), "status": "not run: no figures in this test"}).to_csv(
        root / "metrics" / "figures.csv", index=False
    )
    monkeypatch.chdir(root)
    monkeypatch.setattr(stage, "checkout_commit", lambda: "abc1234")
    monkeypatch.setattr(
        sys,
        "argv",
        ["report", "--tables", "metrics", "--predictions", "predictions.npz", "--figures", "plots", "--model", "model"]
        + ["--markdown", "report.md", "--html", "report.html", "--agreement", "agreement.csv"]
        + ["--verdicts", "verdicts.json"],
    )
    stage.main()
    return (root / "report.md").read_text(), (root / "verdicts.json").read_text()


def test_the_report_of_a_fixed_design_is_byte_equal_to_its_golden(tmp_path, monkeypatch):
    markdown, tally = report(tmp_path, monkeypatch)
    if os.environ.get("GOLDEN_UPDATE"):
        GOLDEN.mkdir(exist_ok=True)
        (GOLDEN / "report.md").write_text(markdown)
        (GOLDEN / "verdicts.json").write_text(tally)
    assert json.loads(tally), "no verdicts"
    assert markdown == (GOLDEN / "report.md").read_text()
    assert tally == (GOLDEN / "verdicts.json").read_text()
