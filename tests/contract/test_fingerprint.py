"""A result's fingerprint hashes the training recipe (src/train/run.py RECIPE) as normalised
code: a change that can change a trained number retrains, and an edit that cannot (a
comment, a docstring, formatting, a help or error text, the data readers, the downloader,
the code hasher, the measurement code) does not. On the papers' grid one retrain is about
3,000 GPU runs. Each measurement's code has a digest of its own (src/train/reuse.py)."""

import os
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

from src.artefacts.run_result import LEGACY_MEASUREMENT_CODE
from src.conditions.condition import Condition
from src.core.codehash import code_digest, code_files
from src.measures import MEASUREMENTS
from src.train import run
from src.train.reuse import measurement_code, measurement_files
from src.train.schedule import run_settings
from tests.support import REPO


def test_the_recipe_is_the_run_functions_import_closure_less_what_cannot_change_a_number():
    closure = set(code_files("src.train.run"))
    measures = {f for f in closure if f.startswith("src/measures/")}
    assert set(run.RECIPE) == closure - set(run.NOT_RECIPE) - measures
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
        "src/measures/__init__.py",
        "src/measures/cka.py",
        "src/measures/criticality.py",
        "src/measures/heads.py",
    }
    assert not elsewhere & (set(run.RECIPE) | set(run.PACKED_RECIPE))
    assert not [f for f in run.RECIPE if f.startswith(("src/claims/", "src/results/", "src/figures/", "src/stats/"))]


@pytest.fixture
def fingerprint_of_copy(tmp_path, monkeypatch, config, tiny_model_dir, tiny_tasks_root):
    """The fingerprint of one condition computed over a copy of src/ that a test edits."""
    shutil.copytree(REPO / "src", tmp_path / "src")
    monkeypatch.setattr(run, "ROOT", tmp_path)
    condition, settings = Condition("rt_sentiment", 8, 0, 1, k=2), run_settings(config, 1)

    def fingerprint() -> tuple[str, str]:
        """The run's fingerprint, and its training fingerprint (settings.unmeasured)."""
        return tuple(
            run.fingerprint(condition, s, tiny_model_dir, tiny_tasks_root) for s in (settings, settings.unmeasured())
        )

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


def test_an_edit_to_the_cka_code_changes_no_training_key_but_the_cka_digest(fingerprint_of_copy):
    root, fingerprint = fingerprint_of_copy
    before, digests = fingerprint(), {m.setting: code_digest(measurement_files(m), root) for m in MEASUREMENTS}
    edit(root / "src/measures/cka.py", "import numpy as np", "import numpy as np\n\nEPSILON = 1e-12")
    assert fingerprint() == before
    now = {m.setting: code_digest(measurement_files(m), root) for m in MEASUREMENTS}
    assert now["cka"] != digests["cka"] and {s: now[s] for s in ("criticality", "head_importance")} == {
        s: digests[s] for s in ("criticality", "head_importance")
    }


def test_help_error_and_warning_text_changes_no_fingerprint(fingerprint_of_copy):
    root, fingerprint = fingerprint_of_copy
    before = fingerprint()
    registry = root / "src/schemes/registry.py"
    edit(registry, '"Fig. 1: keep layers 1..k, reinitialise k+1..L"', '"Fig. 1: layers 1..k kept"')  # a scheme's help
    edit(registry, '"App. E: reinitialised layers train at lr x this"', '"App. E: lr x this"')  # a modifier's help
    edit(registry, '"the attention heads (0..H-1) reinitialised', '"heads (0..H-1) reinitialised')  # a key's help
    edit(registry, "unknown scheme {variant!r}; allowed", "no scheme {variant!r}; choose")  # an error message
    edit(root / "src/train/loop.py", "cannot be read ({error}); discarded", "is unreadable ({error})")  # a warning
    assert fingerprint() == before


def test_a_string_that_can_change_a_number_still_changes_the_fingerprint(fingerprint_of_copy):
    root, fingerprint = fingerprint_of_copy
    before = fingerprint()
    edit(root / "src/schemes/registry.py", 'keep = c.scheme == "block_preserve"', 'keep = c.scheme == "block_keep"')
    assert fingerprint() != before


def test_each_measurement_has_the_digest_of_its_own_code():
    """The table with its functions, and the module each measurement runs."""
    files = {m.setting: measurement_files(m) for m in MEASUREMENTS}
    assert files == {
        "cka": ["src/measures/__init__.py", "src/measures/cka.py"],
        "criticality": ["src/measures/__init__.py", "src/measures/criticality.py"],
        "head_importance": ["src/measures/__init__.py", "src/measures/heads.py"],
    }
    assert measurement_code() == {setting: code_digest(f) for setting, f in files.items()}


def test_the_digests_pinned_for_83d6513_are_what_its_code_hashed(tmp_path):
    """The recipe digests declared equivalent are what 83d6513's own fingerprint hashed (its
    RECIPE and PACKED_RECIPE by its normaliser; the golden runs prove their numbers are
    today's), and the measurement digests of results written before results recorded them
    are today's hasher over 83d6513's measurement files."""
    listed = subprocess.run(["git", "ls-tree", "-r", "--name-only", "83d6513", "src"], cwd=REPO, capture_output=True)
    if listed.returncode:
        pytest.skip("83d6513 is not in this clone's history")
    for name in listed.stdout.decode().split():
        (tmp_path / name).parent.mkdir(parents=True, exist_ok=True)
        (tmp_path / name).write_bytes(
            subprocess.run(["git", "show", f"83d6513:{name}"], cwd=REPO, capture_output=True).stdout
        )
    digests = "from src.train import run; print(*(run.code_digest(list(r)) for r in (run.RECIPE, run.PACKED_RECIPE)))"
    then = subprocess.run(
        [sys.executable, "-c", digests],
        cwd=tmp_path,
        env={**os.environ, "PYTHONPATH": str(tmp_path)},
        capture_output=True,
        text=True,
        check=True,
    )
    assert set(then.stdout.split()) <= set(run.EQUIVALENT_RECIPES)
    assert {m.setting: code_digest(measurement_files(m), tmp_path) for m in MEASUREMENTS} == LEGACY_MEASUREMENT_CODE
