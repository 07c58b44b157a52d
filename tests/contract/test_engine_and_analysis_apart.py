"""Training and analysis meet only through the typed artefacts (src/artefacts): the analysis
stages run without torch, and DVC reruns neither side for an edit of the other (a stage
reruns exactly when a dvc.yaml dep of it changes; tests/contract/test_dvc_deps.py keeps the deps
equal to each stage's imports)."""

import subprocess
import sys

import pytest
import yaml

from tests.support import REPO

BLOCK_TORCH = """
import importlib.abc, sys

class Blocked(importlib.abc.MetaPathFinder):
    def find_spec(self, name, path=None, target=None):
        if name.split(".")[0] in {"torch", "transformers", "safetensors", "tokenizers"}:
            raise ImportError(f"{name} is blocked: the analysis must not need it")

sys.meta_path.insert(0, Blocked())
"""


def test_the_analysis_stages_and_packages_import_without_torch():
    analysis = ["stages.aggregate", "stages.report"] + [
        ".".join(p.relative_to(REPO).with_suffix("").parts)
        for package in ("artefacts", "results", "figures", "claims", "stats")
        for p in sorted((REPO / "src" / package).glob("*.py"))
        if p.name != "__init__.py"
    ]
    code = BLOCK_TORCH + "".join(f"import {module}\n" for module in analysis) + "print('imported', len(sys.modules))"
    done = subprocess.run([sys.executable, "-c", code], cwd=REPO, capture_output=True, text=True)
    assert done.returncode == 0, done.stderr[-2000:]
    blocked = subprocess.run(
        [sys.executable, "-c", BLOCK_TORCH + "import src.train.loop"], cwd=REPO, capture_output=True
    )
    assert blocked.returncode != 0  # the block works: the engine does need torch


def stage_deps() -> dict[str, list[str]]:
    stages = yaml.safe_load((REPO / "dvc.yaml").read_text())["stages"]
    return {name: stage.get("do", stage)["deps"] for name, stage in stages.items()}


def reruns(stage: str, edited: str) -> bool:
    """Whether an edit of file `edited` makes DVC rerun `stage` (a dep is that file or a folder above it)."""
    return any(edited == dep or edited.startswith(dep.rstrip("/") + "/") for dep in stage_deps()[stage])


@pytest.mark.parametrize(
    "edited",
    ["tools/calibrate.py", "src/stats/validity.py", "src/stats/hypothesis.py", "src/stats/curves.py"],
)
def test_a_calibration_or_statistics_edit_reruns_no_training(edited):
    assert (REPO / edited).is_file()
    assert not reruns("finetune", edited) and not reruns("focus", edited)
    assert reruns("report", edited) or edited == "tools/calibrate.py"


@pytest.mark.parametrize(
    "edited",
    ["src/train/loop.py", "src/train/run.py", "src/model/reinit.py", "src/measures/cka.py", "src/data/tokens.py"],
)
def test_a_training_edit_reruns_no_analysis(edited):
    assert (REPO / edited).is_file()
    assert reruns("finetune", edited)
    assert not reruns("aggregate", edited) and not reruns("report", edited)
