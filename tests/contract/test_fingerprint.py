"""A result's fingerprint hashes the training recipe (src/train/run.py RECIPE) as normalised
code: a change that can change a trained number retrains, and an edit that cannot (a
comment, a docstring, formatting, the data readers, the downloader, the code hasher) does
not. On the papers' grid one retrain is about 3,000 GPU runs."""

import shutil
from pathlib import Path

import pytest

from src.conditions.condition import Condition
from src.core.codehash import code_files
from src.train import run
from src.train.schedule import run_settings
from tests.support import REPO


def test_the_recipe_is_the_run_functions_import_closure_less_what_cannot_change_a_number():
    closure = set(code_files("src.train.run"))
    assert set(run.RECIPE) == closure - set(run.NOT_RECIPE)
    assert set(run.NOT_RECIPE) <= closure, "NOT_RECIPE names a file the run does not import"
    recipe = {
        "src/train/run.py",
        "src/train/loop.py",
        "src/train/weights.py",
        "src/model/finetuner.py",
        "src/model/reinit.py",
        "src/model/families.py",
        "src/model/base.py",
        "src/data/tokens.py",
        "src/tasks/splits.py",
        "src/conditions/condition.py",
        "src/core/seeds.py",
        "src/schemes/registry.py",
        "src/tasks/kinds.py",
        "src/tasks/metrics.py",
        "src/measures/criticality.py",
    }
    assert recipe <= set(run.RECIPE)
    # readers, the downloader and exporter, the hasher, where runs execute, the params schema, the report
    elsewhere = {
        "src/tasks/glue.py",
        "src/tasks/squad.py",
        "src/tasks/embedded.py",
        "src/core/downloads.py",
        "src/model/export.py",
        "src/core/codehash.py",
        "src/train/executors.py",
        "src/train/schedule.py",
        "src/params/load.py",
        "src/config/schema.py",
    }
    assert not elsewhere & set(run.RECIPE)
    assert not [f for f in run.RECIPE if f.startswith(("src/claims/", "src/results/", "src/figures/", "src/stats/"))]


@pytest.fixture
def fingerprint_of_copy(tmp_path, monkeypatch, config, tiny_model_dir, tiny_tasks_root):
    """The fingerprint of one condition computed over a copy of src/ that a test edits."""
    shutil.copytree(REPO / "src", tmp_path / "src")
    monkeypatch.setattr(run, "ROOT", tmp_path)
    condition, settings = Condition("rt_sentiment", 8, 0, 1, k=2), run_settings(config, 1)

    def fingerprint() -> str:
        return run.fingerprint(condition, settings, tiny_model_dir, tiny_tasks_root)

    return tmp_path, fingerprint


def edit(path: Path, old: str, new: str) -> None:
    text = path.read_text()
    assert text.count(old) >= 1, f"{old!r} not in {path}"
    path.write_text(text.replace(old, new, 1))


def test_comments_docstrings_and_formatting_in_the_recipe_change_no_fingerprint(fingerprint_of_copy):
    root, fingerprint = fingerprint_of_copy
    before = fingerprint()
    reinit = root / "src/model/reinit.py"
    reinit.write_text(reinit.read_text() + "\n# a comment\n")
    edit(reinit, '"""', '"""A docstring edit. ')  # the module's docstring
    edit(root / "src/train/loop.py", "\n\n\n", "\n\n\n\n")  # blank lines
    edit(root / "src/train/run.py", "from __future__ import annotations", "from __future__ import (annotations)")
    assert fingerprint() == before


def test_any_edit_of_the_readers_the_downloader_or_the_hasher_changes_no_fingerprint(fingerprint_of_copy):
    root, fingerprint = fingerprint_of_copy
    before = fingerprint()
    for path in ("src/tasks/glue.py", "src/core/downloads.py", "src/model/export.py", "src/train/executors.py"):
        with open(root / path, "a") as f:
            f.write("\n\ndef added():\n    return 1\n")
    edit(root / "src/tasks/glue.py", '"SST-2"', '"SST2"')
    assert fingerprint() == before


def test_a_one_character_change_to_the_reinit_code_changes_the_fingerprint(fingerprint_of_copy):
    root, fingerprint = fingerprint_of_copy
    before = fingerprint()
    edit(root / "src/model/reinit.py", "return 2 * sigma if", "return 3 * sigma if")
    assert fingerprint() != before
