"""dvc.yaml's code deps cannot drift from the code: each stage lists exactly the code units
(src/core/codehash.py code_units: a package folder under src/ whose every module it imports,
else the files) that its entry point imports, transitively. A unit missing from the list
would let `dvc repro` say "up to date" over results the new code would not produce."""

import textwrap
from pathlib import Path

import pytest
import yaml

from src.core import codehash as imports
from src.core.codehash import code_files, code_units
from tests.support import REPO


def stage_entries() -> dict[str, tuple[str, list[str]]]:
    """dvc.yaml stage name -> (its `python -m` entry module, the code deps it lists)."""
    stages = yaml.safe_load((REPO / "dvc.yaml").read_text())["stages"]
    entries = {}
    for name, stage in stages.items():
        body = stage.get("do", stage)  # foreach stages keep their definition under do:
        module = body["cmd"].split("python -m ", 1)[1].split()[0]
        entries[name] = (module, [d for d in body["deps"] if d.split("/")[0] in imports.OWN])
    return entries


def test_every_stage_lists_exactly_the_code_units_its_entry_point_imports():
    entries = stage_entries()
    assert {
        "validate",
        "prepare_model",
        "data",
        "finetune",
        "focus",
        "features",
        "probe",
        "aggregate",
        "report",
    } <= set(entries)
    for name, (module, listed) in entries.items():
        expected = code_units(module)
        assert f"{module.replace('.', '/')}.py" in expected
        assert listed == expected, (
            f"dvc.yaml stage {name}: missing {sorted(set(expected) - set(listed))}, "
            f"not imported {sorted(set(listed) - set(expected))}, or out of order"
        )


def write_tree(root: Path, files: dict[str, str]) -> None:
    for path, text in files.items():
        (root / path).parent.mkdir(parents=True, exist_ok=True)
        (root / path).write_text(textwrap.dedent(text))


@pytest.fixture
def synthetic_repo(tmp_path, monkeypatch):
    """A small repo whose entry point imports in every form code_files must follow."""
    write_tree(
        tmp_path,
        {
            "src/__init__.py": "",
            "src/entry.py": """
                from typing import TYPE_CHECKING

                import json

                from src import plain  # from src import a: a module of the package src
                from src.pkg.inner import value  # from src.b import x: a name from a module
                import src.dotted  # import src.c
                from src.busy import run  # a package whose __init__ runs code

                if TYPE_CHECKING:  # annotations only: never runs
                    from src import annotations_only
                    import src.also_annotations_only
                else:
                    from src import runtime_else


                def later():
                    from src.lazy import thing  # inside a function: runs when it is called
            """,
            "src/plain.py": "from src.deep import x\n",
            "src/deep.py": "x = 1\n",
            "src/pkg/__init__.py": "",  # an empty package marker runs nothing: not listed
            "src/pkg/inner.py": "value = 1\n",
            "src/pkg/unused.py": "import src.never\n",  # in an imported package, but not imported
            "src/never.py": "",
            "src/dotted.py": "",
            "src/busy/__init__.py": "from src.busy.core import run\n",
            "src/busy/core.py": "run = 1\n",
            "src/annotations_only.py": "import src.behind_annotations\n",
            "src/also_annotations_only.py": "",
            "src/behind_annotations.py": "",
            "src/runtime_else.py": "",
            "src/lazy.py": "thing = 1\n",
            "stages/__init__.py": "",
            "stages/run_me.py": "from src.pkg.inner import value\nimport src.dotted\n",
        },
    )
    monkeypatch.setattr(imports, "ROOT", tmp_path)
    return tmp_path


def test_code_files_follows_every_import_form_and_skips_type_checking_blocks(synthetic_repo):
    assert code_files("src.entry") == [
        "src/busy/__init__.py",
        "src/busy/core.py",
        "src/deep.py",  # through src/plain.py
        "src/dotted.py",
        "src/entry.py",
        "src/lazy.py",
        "src/pkg/inner.py",
        "src/plain.py",
        "src/runtime_else.py",
    ]
    assert code_files("src.annotations_only") == ["src/annotations_only.py", "src/behind_annotations.py"]


def test_code_units_are_whole_packages_under_src_where_every_module_is_imported_and_files_elsewhere(
    synthetic_repo,
):
    assert code_units("src.entry") == [
        "src/busy",  # both of its modules
        "src/deep.py",
        "src/dotted.py",
        "src/entry.py",
        "src/lazy.py",
        "src/pkg/inner.py",  # not src/pkg/unused.py: an edit there reruns nothing
        "src/plain.py",
        "src/runtime_else.py",
    ]
    assert code_units("stages.run_me") == ["src/dotted.py", "src/pkg/inner.py", "stages/run_me.py"]


def test_a_top_level_package_init_counts_only_where_a_module_imports_from_it_by_name(synthetic_repo):
    # src/__init__.py holds the version: a bump reruns the stage that prints it, not every stage
    (synthetic_repo / "src/__init__.py").write_text('__version__ = "1.0"\n')
    assert "src/__init__.py" in code_files("src.entry")  # from src import plain
    assert code_units("stages.run_me") == ["src/dotted.py", "src/pkg/inner.py", "stages/run_me.py"]
