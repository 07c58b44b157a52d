"""The bench/ scripts run against the pipeline's own modules, which no other test imports
them with: a renamed or removed function would break a benchmark only when someone next
runs it. Importing each module (no benchmark is run) catches that in the default suite."""

import importlib

import pytest

from tests.support import REPO

BENCH_MODULES = sorted(p.stem for p in (REPO / "bench").glob("*.py") if p.stem != "__init__")


@pytest.mark.parametrize("name", BENCH_MODULES)
def test_bench_module_imports(name):
    importlib.import_module(f"bench.{name}")


@pytest.mark.parametrize("fastest", ["bf16", "fp32"])
def test_the_best_trainer_runs_at_the_machines_fastest_precision(fastest):
    from bench.run import trainer_configs

    configs = trainer_configs(fastest)
    assert configs["trainer_best"]["bf16"] == configs["trainer_best_random_order"]["bf16"] == (fastest == "bf16")
    assert configs["trainer_run_glue_default"]["bf16"] is False  # run_glue.py's default: fp32
