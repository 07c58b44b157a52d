"""The layering rule (README, "Code map"): each package of src/ sits in one layer, and a module
imports only from its own package or from a lower layer. One layer holds two sides, the
training engine and the analysis, which never import each other (they meet only through
src/artefacts); inside a side, a package imports only those listed before it. Every import
counts, those for annotations only included. No circle may form between modules either."""

import ast
from pathlib import Path

import pytest

from src.core.codehash import module_file
from tests.support import REPO

# Lowest first. A layer is a tuple of sides, each side a tuple of packages in order.
LAYERS = (
    (("src/core",),),  # errors, files, seeds, checks, code hashing, downloads, process lifetime
    (("src/stats",),),  # statistics: imports nothing from the project
    (("src/tasks",),),  # task registry, kinds, metrics, span decoding, stored splits, readers
    (("src/schemes",),),  # the reinitialisation schemes and modifiers
    (("src/config",),),  # params.yaml's typed sections (the study section generated from the schemes)
    (("src/conditions",),),  # a condition, its references and seeds; studies expanded into conditions
    (("src/artefacts",),),  # typed files the engine writes and the analysis reads (no torch)
    (("src/data",),),  # tokenising, training subsets, batches
    (("src/model",),),  # families, loading, reinitialisation, the finetuner
    (("src/measures",),),  # per-run measurements on finished weights
    (("src/params",),),  # loading and checking params.yaml; the stage entry point
    # the training engine | the analysis (tables, then figures, then claims)
    (("src/probing", "src/train"), ("src/results", "src/figures", "src/claims")),
    (("stages",),),
    (("bench",),),  # benchmarks and the cost projection: nothing in the library imports them
    (("tools",),),  # offline simulation (tools/prospective prices its designs with bench/cost.py)
)


def unit_of(module: str) -> str:
    """The layering unit of a dotted module: src/<package>, or the top folder (stages, tools, bench)."""
    parts = module.split(".")
    return "/".join(parts[:2]) if parts[0] == "src" else parts[0]


def place(unit: str) -> tuple[int, int, int]:
    """(layer, side, position in the side) of a unit."""
    for layer, sides in enumerate(LAYERS):
        for side, packages in enumerate(sides):
            if unit in packages:
                return layer, side, packages.index(unit)
    raise AssertionError(f"{unit} is in no layer of LAYERS: add it where it belongs")


def project_imports(path: Path, root: Path) -> set[str]:
    """Every project module `path` imports, anywhere in the file (annotation-only imports too)."""
    found = set()
    for node in ast.walk(ast.parse(path.read_text())):
        if isinstance(node, ast.Import):
            found |= {alias.name for alias in node.names}
        elif isinstance(node, ast.ImportFrom) and node.module and node.level == 0:
            # `from a import b`: the module a.b where b is one, else a
            found |= {
                f"{node.module}.{alias.name}" if module_file(f"{node.module}.{alias.name}", root) else node.module
                for alias in node.names
            }
    own = {"src", "stages", "tools", "bench"}
    return {name for name in found if name.split(".")[0] in own and module_file(name, root) is not None}


def modules(root: Path) -> dict[str, Path]:
    found = {}
    for top in ("src", "stages", "tools", "bench"):
        for path in sorted((root / top).rglob("*.py")):
            name = ".".join(path.relative_to(root).with_suffix("").parts)
            found[name.removesuffix(".__init__")] = path
    return found


def violations(root: Path) -> list[str]:
    """Every import that breaks the rule, as 'importer -> imported (why)'."""
    found = []
    for name, path in modules(root).items():
        unit = unit_of(name)
        for target in sorted(project_imports(path, root)):
            other = unit_of(target)
            if other == unit or other == "src":
                continue
            (layer, side, position), (their_layer, their_side, their_position) = place(unit), place(other)
            if their_layer == layer and their_side != side:
                found.append(f"{name} -> {target} (across: {unit} and {other} are the two sides of one layer)")
            elif (their_layer, their_position) > (layer, position):
                found.append(f"{name} -> {target} (upward: {unit} is below {other})")
    return found


def circles(root: Path) -> list[list[str]]:
    """Import cycles between modules (a module importing its own package's __init__ is not one)."""
    graph = {name: set() for name in modules(root)}
    for name, path in modules(root).items():
        graph[name] = {
            t for t in project_imports(path, root) if t in graph and t != name and not name.startswith(t + ".")
        }
    found, state = [], {}

    def visit(node, stack):
        state[node] = "open"
        stack.append(node)
        for nxt in sorted(graph[node]):
            if state.get(nxt) == "open":
                found.append([*stack[stack.index(nxt) :], nxt])
            elif nxt not in state:
                visit(nxt, stack)
        stack.pop()
        state[node] = "done"

    for node in sorted(graph):
        if node not in state:
            visit(node, [])
    return found


def test_every_package_sits_in_one_layer():
    units = {unit_of(name) for name in modules(REPO)} - {"src"}
    for unit in units:
        place(unit)
    named = [unit for sides in LAYERS for packages in sides for unit in packages]
    assert len(named) == len(set(named)) and set(named) <= units, (
        "LAYERS names a package twice or one that does not exist"
    )


def test_no_import_runs_up_the_layers_or_across_engine_and_analysis():
    assert violations(REPO) == []


def test_no_import_circle():
    assert circles(REPO) == []


def test_statistics_import_nothing_from_the_project():
    for name, path in modules(REPO).items():
        if name.startswith("src.stats"):
            assert {t for t in project_imports(path, REPO) if not t.startswith("src.stats")} == set(), name


def _copy(tmp_path: Path) -> Path:
    for top in ("src", "stages", "tools", "bench"):
        for path in (REPO / top).rglob("*.py"):
            target = tmp_path / path.relative_to(REPO)
            target.parent.mkdir(parents=True, exist_ok=True)
            target.write_text(path.read_text())
    return tmp_path


@pytest.mark.parametrize(
    ("file", "line", "expected"),
    [
        ("src/stats/hypothesis.py", "from src.tasks import metrics", "upward"),
        ("src/data/tokens.py", "from src.train.loop import RunSettings", "upward"),
        ("src/results/tables.py", "from src.train import loop", "across"),
        ("src/train/schedule.py", "from src.claims import verdicts", "across"),
        ("src/results/tables.py", "from src.figures import plots", "upward"),
    ],
)
def test_a_planted_upward_or_sideways_import_is_found(tmp_path, file, line, expected):
    root = _copy(tmp_path)
    with open(root / file, "a") as f:
        f.write(f"\n{line}  # planted\n")
    found = violations(root)
    assert len(found) == 1 and expected in found[0] and found[0].startswith(file[:-3].replace("/", "."))


def test_a_planted_circle_is_found(tmp_path):
    root = _copy(tmp_path)
    with open(root / "src/tasks/metrics.py", "a") as f:
        f.write("\nfrom src.tasks import kinds  # planted: kinds already imports metrics\n")
    found = circles(root)
    assert found and {"src.tasks.kinds", "src.tasks.metrics"} <= set(found[0])
