"""The SLURM and Ray backends against real daemons on this machine (slow; `python -m pytest -q -m slow`).

- SLURM: tests/cluster/slurm.sh starts munged, slurmctld and slurmd (needs root; installs
  Debian's slurm-wlm and munge with apt when missing); the finetune stage runs a tiny study
  as one job array and every number must equal the local backend's.
- Ray: `ray start --head` on localhost, the same study, the same comparison; and GPU
  placement with fake GPUs declared to a fresh Ray cluster.
Both need `pip install -r requirements-cluster.txt`; without it (or, for SLURM, without
root) each test is skipped before it trains anything.
"""

import copy
import importlib.util
import json
import os
import subprocess
import sys
from pathlib import Path

import pytest

from src.params.load import validate
from tests.support import (
    REPO,
    finetune_workspace,
    grid_params,
    most_at_once,
    result_files,
    stage_command,
    stage_env,
    tiny_params,
)

pytestmark = pytest.mark.slow
needs_submitit = pytest.mark.skipif(
    importlib.util.find_spec("submitit") is None, reason="pip install -r requirements-cluster.txt"
)
needs_ray = pytest.mark.skipif(
    importlib.util.find_spec("ray") is None, reason="pip install -r requirements-cluster.txt"
)
STUDY = {"scheme": "progressive", "tasks": ["rt_sentiment"], "sizes": [40], "ks": [0, 3], "trials": 2}  # 4 runs


def run_study(root: Path, tiny_model_dir: Path) -> tuple[str, dict]:
    run = subprocess.run(
        stage_command(tiny_model_dir), cwd=root, env=stage_env(), capture_output=True, text=True, timeout=900
    )
    assert run.returncode == 0, f"stage failed:\n{run.stdout[-3000:]}\n{run.stderr[-3000:]}"
    return run.stdout, {name: json.loads(p.read_text()) for name, p in result_files(root / "out").items()}


def with_executor(**executor) -> dict:
    params = tiny_params(copy.deepcopy(STUDY))
    params["executor"].update(executor)
    return params


@pytest.fixture(scope="module")
def local_results(tmp_path_factory, tiny_model_dir, tiny_task_dir):
    root = finetune_workspace(tmp_path_factory.mktemp("cluster") / "local", tiny_task_dir, with_executor(kind="local"))
    return run_study(root, tiny_model_dir)[1]


def assert_same_numbers(results: dict, reference: dict) -> None:
    assert results.keys() == reference.keys() and len(results) == 4
    for name, result in results.items():  # every field but the clock: scores, losses, weight changes, fingerprint
        assert {**result, "train_seconds": None} == {**reference[name], "train_seconds": None}, name


@needs_submitit
@pytest.mark.skipif(os.geteuid() != 0, reason="tests/cluster/slurm.sh starts slurmd, which must run as root")
def test_a_study_through_a_slurm_job_array_gives_the_local_numbers(
    tmp_path, tiny_model_dir, tiny_task_dir, local_results
):
    subprocess.run([str(REPO / "tests" / "cluster" / "slurm.sh"), "start"], check=True, timeout=600)
    logs = tmp_path / "slurm_logs"
    root = finetune_workspace(
        tmp_path / "slurm",
        tiny_task_dir,
        with_executor(kind="slurm", gpus_per_run=0, mem_gb_per_run=1, time_limit_min=10, log_dir=str(logs)),
    )
    stdout, results = run_study(root, tiny_model_dir)
    assert_same_numbers(results, local_results)
    arrays = {p.name.split("_")[0] for p in logs.iterdir() if p.is_dir()}
    assert len(arrays) == 1, f"expected one job array, found jobs {sorted(arrays)}"
    assert (
        stdout.count("| ") == 4 and "4 done, 0 running, 0 failed, 0 queued" in stdout
    )  # one plain line per run, then done


@pytest.fixture
def ray_head(tmp_path):
    ray = str(Path(sys.executable).parent / "ray")
    subprocess.run(
        [ray, "start", "--head", "--num-cpus", "2", "--include-dashboard=false", "--disable-usage-stats"],
        check=True,
        timeout=300,
        env=stage_env(),
    )
    yield
    subprocess.run([ray, "stop", "--force"], timeout=120)


@needs_ray
def test_a_study_through_ray_tasks_gives_the_local_numbers(
    tmp_path, tiny_model_dir, tiny_task_dir, local_results, ray_head
):
    root = finetune_workspace(
        tmp_path / "ray", tiny_task_dir, with_executor(kind="ray", address="auto", gpus_per_run=0)
    )
    stdout, results = run_study(root, tiny_model_dir)
    assert_same_numbers(results, local_results)
    assert stdout.count("| ") == 4


@needs_ray
def test_ray_places_each_run_on_one_fake_gpu_and_no_gpu_holds_more_than_its_share(tmp_path):
    import ray
    from fake_runs import note_slot

    from src.train import executors

    params = grid_params()
    params["executor"].update(kind="ray", address="local", gpus_per_run=0.5)  # two runs per GPU
    params["train"]["threads"] = 1
    config = validate(params)
    # A fresh local cluster that believes it has 2 GPUs and 4 CPUs: Ray sets CUDA_VISIBLE_DEVICES per task.
    ray.init(num_cpus=4, num_gpus=2, runtime_env={"env_vars": {"PYTHONPATH": f"{REPO}:{REPO / 'tests'}"}})
    try:
        outcomes = dict(
            executors.execute(note_slot, [(i, 0.3, str(tmp_path), 4) for i in range(10)], config.executor, config.train)
        )
    finally:
        ray.shutdown()

    assert sorted(outcomes) == list(range(10))
    slots = {o["slot"] for o in outcomes.values()}
    assert slots <= {"0", "1"}, f"every run must see exactly one GPU: {slots}"
    for gpu in ("0", "1"):
        assert most_at_once([(o["start"], o["end"]) for o in outcomes.values() if o["slot"] == gpu]) <= 2
    assert most_at_once([(o["start"], o["end"]) for o in outcomes.values()]) == 4
    assert len({o["pid"] for o in outcomes.values()}) == 10  # max_calls=1: a fresh process per run
