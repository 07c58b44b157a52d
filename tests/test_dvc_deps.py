"""dvc.yaml's code deps cannot drift from the code: each stage lists exactly the Python files
its entry point imports inside src/ and stages/, transitively. A file missing from the list
would let `dvc repro` say "up to date" over results the new code would not produce."""

import ast
from pathlib import Path

import yaml

REPO = Path(__file__).resolve().parents[1]


def local_imports(path: Path) -> set[str]:
    """The src/ and stages/ modules a file imports (`from src import a`, `from src.b import x`, `import src.c`)."""
    found = set()
    for node in ast.walk(ast.parse(path.read_text())):
        names = []
        if isinstance(node, ast.ImportFrom) and node.module in ("src", "stages"):
            names = [f"{node.module}.{alias.name}" for alias in node.names]
        elif isinstance(node, ast.ImportFrom) and node.module and node.module.split(".")[0] in ("src", "stages"):
            names = [node.module]
        elif isinstance(node, ast.Import):
            names = [alias.name for alias in node.names if alias.name.split(".")[0] in ("src", "stages")]
        found |= {"/".join(name.split(".")[:2]) + ".py" for name in names if len(name.split(".")) >= 2}
    return {f for f in found if (REPO / f).is_file()}


def python_deps(entry: str) -> set[str]:
    """`entry` and every local module it imports, transitively."""
    seen, todo = {entry}, [entry]
    while todo:
        for imported in local_imports(REPO / todo.pop()) - seen:
            seen.add(imported)
            todo.append(imported)
    return seen


def stage_entries() -> dict[str, tuple[str, list[str]]]:
    """stage name -> (entry point file, the .py deps dvc.yaml lists)."""
    stages = yaml.safe_load((REPO / "dvc.yaml").read_text())["stages"]
    entries = {}
    for name, stage in stages.items():
        body = stage.get("do", stage)
        module = body["cmd"].split("python -m ", 1)[1].split()[0]
        entries[name] = (module.replace(".", "/") + ".py", [d for d in body["deps"] if d.endswith(".py")])
    return entries


def test_every_stage_lists_exactly_the_python_files_it_imports():
    for name, (entry, listed) in stage_entries().items():
        expected = python_deps(entry)
        assert sorted(listed) == sorted(expected), f"dvc.yaml stage {name}: missing {sorted(expected - set(listed))}, not imported {sorted(set(listed) - expected)}"


def test_the_import_walk_follows_every_import_form(tmp_path):
    assert {"src/training.py", "src/data.py", "src/metrics.py"} <= python_deps("src/training.py")
    assert "src/params.py" in python_deps("stages/finetune.py")
