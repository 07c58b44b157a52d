"""DVC's own cost on a grid, without training: `dvc status`, a no-op `dvc repro`, and
`dvc exp run -S k=<the k it has>` (every stage checked, an experiment recorded, nothing
trained), on the default grid and on the paper's.

A scratch clone of this repository gets the grid's params.yaml and a placeholder for
every output (one result file per condition the grid defines, so DVC hashes as many
files as a finished run would leave), recorded in dvc.lock by `dvc commit`. Then the
timed commands see a finished pipeline of the real shape: same stages, same files.
"""

from __future__ import annotations

import copy
import subprocess
import sys
import tempfile
import time
from pathlib import Path

import yaml

from src.artefacts.run_result import result_path
from src.conditions.studies import all_study_conditions, trained_conditions
from src.params.load import ModelLimits, validate

REPO = Path(__file__).resolve().parents[1]

# Tamkin et al. (bert-base, QNLI / SST-2 / CoLA, 500 / 5k / 50k examples, k = 0..12;
# 3 trials per progressive point, 10 for block and permutation runs) with the two
# follow-up studies at the same sizes: ~3,100 finetuning runs in 20 stages. Only DVC sees
# this grid: a real run would refuse 50k examples of CoLA (8.5k) before training.
PAPER_LAYERS, PAPER_HEADS = 12, 12
PAPER_TASKS = ["qnli", "sst2", "cola"]


def paper_params(default: dict) -> dict:
    params = copy.deepcopy(default)
    params.update(task="sst2", size=5000, k=12)
    params["model"]["name"] = "bert-base-uncased"
    params["data"]["tasks"] = PAPER_TASKS
    params["probe"]["tasks"] = PAPER_TASKS
    every = {"tasks": PAPER_TASKS, "sizes": [500, 5000, 50000]}
    mid = {"tasks": PAPER_TASKS, "sizes": [5000]}
    layers = list(range(1, PAPER_LAYERS + 1))
    params["studies"] = {
        "progressive": {"scheme": "progressive", **every, "ks": list(range(PAPER_LAYERS + 1)), "trials": 3},
        "blocks": {"scheme": "block", "window": 3, **every, "trials": 10},
        "single_layer": {"scheme": "single_layer", "layers": layers, **mid, "trials": 3},
        "permutation": {"scheme": "permutation", **every, "trials": 10},
        "heads": {
            "scheme": "head",
            "layers": layers,
            "heads": list(range(PAPER_HEADS)),
            **mid,
            "tasks": ["cola"],
            "trials": 1,
        },
        "lr_multiplier": {
            "scheme": "progressive",
            "ks": list(range(PAPER_LAYERS + 1)),
            "reinit_lr_multiplier": 5,
            **mid,
            "trials": 3,
        },
        "keep_layernorm": {
            "scheme": "progressive",
            "ks": list(range(PAPER_LAYERS + 1)),
            "keep_layernorm": True,
            **mid,
            "trials": 3,
        },
        "epochs": {"scheme": "progressive", "ks": [0, 6, 12], "epochs": 10, **every, "trials": 3},
        "sequential": {"scheme": "progressive", "ks": [12], "intermediate_tasks": PAPER_TASKS, **mid, "trials": 3},
    }
    return params


def dvc_seconds(root: Path, *args: str) -> float:
    """Wall seconds of one `dvc <args>` in `root`; a failure is an error, not a timing."""
    start = time.perf_counter()
    run = subprocess.run([sys.executable, "-m", "dvc", *args], cwd=root, capture_output=True, text=True)
    if run.returncode != 0:
        raise RuntimeError(f"dvc {' '.join(args)} failed in {root}:\n{run.stdout[-2000:]}\n{run.stderr[-2000:]}")
    return time.perf_counter() - start


def _placeholders(root: Path, config, num_layers: int, num_heads: int) -> int:
    """A file at every output path of the pipeline; one per condition in the study folders."""
    from dvc.repo import Repo

    runs, reported = 0, all_study_conditions(config, num_layers)
    with Repo(str(root)) as repo:
        outs = [out.def_path for stage in repo.index.stages for out in stage.outs]
    for out in outs:
        path = root / out
        if out.startswith("data/runs/studies/"):
            conditions = trained_conditions(reported, Path(out).name, num_layers)
            runs += len(conditions)
            files = [result_path(path, c) for c in conditions]
        else:
            files = [path] if path.suffix else [path / "placeholder"]
        for file in files:
            file.parent.mkdir(parents=True, exist_ok=True)
            file.write_text(f"{file.name}\n")
    (root / "data/model/base.json").write_text(f'{{"num_layers": {num_layers}, "num_heads": {num_heads}}}\n')
    return runs


def measure(params: dict, num_layers: int, num_heads: int) -> dict:
    """Stage count, study finetuning runs, and seconds of dvc status / no-op repro / exp run
    with the k already in params (a real experiment that finds nothing to rerun)."""
    checked = validate(copy.deepcopy(params), ModelLimits(num_layers, num_heads))  # a grid the pipeline would accept
    with tempfile.TemporaryDirectory(prefix="bench_dvc_") as tmp:
        root = Path(tmp) / "repo"
        subprocess.run(["git", "clone", "-q", str(REPO), str(root)], check=True)
        for key, value in (("user.name", "bench"), ("user.email", "bench@localhost")):  # exp run commits
            subprocess.run(["git", "config", key, value], cwd=root, check=True)
        (root / "params.yaml").write_text(yaml.safe_dump(params, sort_keys=False))
        runs = _placeholders(root, checked, num_layers, num_heads)
        dvc_seconds(root, "commit", "-f", "-q")  # record the placeholders as the pipeline's finished outputs
        stages = len(
            subprocess.run(
                [sys.executable, "-m", "dvc", "stage", "list"], cwd=root, capture_output=True, text=True, check=True
            ).stdout.splitlines()
        )
        return {
            "stages": stages,
            "study_runs": runs,
            "status_s": dvc_seconds(root, "status"),
            "noop_repro_s": dvc_seconds(root, "repro"),
            # the focus k it already has: DVC checks every stage and records an experiment, nothing trains
            "exp_run_s": dvc_seconds(root, "exp", "run", "-S", f"k={params['k']}"),
        }
