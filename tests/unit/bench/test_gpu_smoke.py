"""bench/gpu.py, the GPU benchmark, in its CPU smoke mode (a tiny model, seconds), and the
projection of the paper grid from its measured numbers (here and in bench/cost.py)."""

import json
import subprocess
import sys

import pytest

from bench import cost, gpu
from src.conditions.condition import Condition
from tests.support import REPO

# Packages the pipeline installs that the GPU machine of bench/gpu.py does not have.
PIPELINE_ONLY = {"ruamel", "pandas", "scipy", "sklearn", "statsmodels", "dvc", "matplotlib", "pyarrow"}


def test_the_smoke_run_measures_every_configuration_and_projects_the_grid(tmp_path):
    out = tmp_path / "gpu.json"
    result = gpu.main(["--smoke", "--out", str(out)])
    assert json.loads(out.read_text()) == json.loads(json.dumps(result))  # written as measured
    rows = {(row["path"], row["k"]): row for row in result["configurations"]}
    assert set(rows) == {("alone", 1), ("stacked", 2), ("stacked", 4)}
    for row in rows.values():
        assert row["run_step_ms"] > 0 and row["tflops"] > 0 and row["floor_share"] > 0
    assert rows[("stacked", 4)]["run_step_ms"] == pytest.approx(rows[("stacked", 4)]["step_ms"] / 4)
    # On the CPU a run's first stacked step does not depend on the pack size, bit for bit.
    assert result["pack_size_moves_bits"] == {str(result["grid_length"]): False}
    first = rows[("stacked", 2)]["first_step"]
    assert first["run0_weights_sha256"] == rows[("stacked", 4)]["first_step"]["run0_weights_sha256"]
    assert abs(first["loss_minus_alone"]) < 1e-4
    grid = result["grid"]
    assert set(grid["gpu_hours"]) == {"alone", "pack 2", "pack 4"} and grid["runs"] == 3621


def test_the_grid_hours_are_steps_evals_and_runs_times_the_measured_times():
    measured = {
        "eval_batch_ms": 10.0,
        "run_setup_s": 2.0,
        "process_start_s": 5.0,
        "grid_length": 32,
        "floor_bytes_per_run_step": 4e9,
        "copy_bandwidth_gbs": 2000.0,
        "configurations": [
            {"path": "alone", "k": 1, "length": 32, "run_step_ms": 30.0},
            {"path": "stacked", "k": 16, "length": 32, "run_step_ms": 3.0},
            {"path": "stacked", "k": 8, "length": 128, "run_step_ms": 9.0},  # another length: not the grid's
        ],
    }
    total = {"train_steps": 1_000_000, "eval_batches": 36_000, "runs": 3600, "gpu_hours_projected": 42.0}
    grid = gpu.grid_projection(measured, {"total": total})
    # alone: 1e6 x 30 ms + 36,000 x 10 ms + 3,600 x (2 + 5) s = 30,000 + 360 + 25,200 s
    assert grid["gpu_hours"]["alone"] == pytest.approx((30_000 + 360 + 25_200) / 3600)
    assert grid["gpu_hours"]["pack 16"] == pytest.approx((3_000 + 360 + 7_200) / 3600)  # packed: no process per run
    assert set(grid["gpu_hours"]) == {"alone", "pack 16"}
    assert grid["memory_floor_gpu_hours"] == pytest.approx(1e6 * 4e9 / 2000e9 / 3600)


def test_bench_cost_projects_from_the_measured_times():
    measured = {
        "device": "NVIDIA H100 80GB HBM3",
        "started": "2026-11-26 20:00:00 UTC",
        "eval_batch_ms": 10.0,
        "run_setup_s": 2.0,
        "process_start_s": 5.0,
        "grid_length": 32,
        "configurations": [
            {"path": "alone", "k": 1, "length": 32, "run_step_ms": 30.0},
            {"path": "stacked", "k": 16, "length": 32, "run_step_ms": 3.0},
        ],
    }
    fastest = cost.measured_assumptions(measured)
    assert fastest["step_latency_s"] == pytest.approx(0.003) and fastest["run_overhead_s"] == 2.0
    assert "MEASURED on NVIDIA H100" in fastest["measured"]["label"]
    alone = cost.measured_assumptions(measured, "alone")
    assert alone["step_latency_s"] == pytest.approx(0.030) and alone["run_overhead_s"] == 7.0
    stats = {"t": {"mean_tokens": 10.0, "dev_examples": 100, "dev_tokens": 2000}}
    run = cost.run_cost(Condition("t", 500, 0, 5, k=0), stats, False, cost.load_preset().train, fastest)
    assert run["projected_s"] == pytest.approx(315 * 0.003 + 4 * 0.010 + 2.0)  # the measured times, no MFU bound


def test_the_script_imports_nothing_the_gpu_machine_lacks():
    # That machine has torch, transformers (with its own dependencies) and numpy: no ruamel.yaml, no
    # pandas, scipy or scikit-learn, which the pipeline's data and metrics modules import.
    code = "import sys, bench.gpu; print(' '.join(sorted({m.split('.')[0] for m in sys.modules})))"
    run = subprocess.run([sys.executable, "-c", code], cwd=REPO, capture_output=True, text=True, check=True)
    assert not set(run.stdout.split()) & PIPELINE_ONLY
