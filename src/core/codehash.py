"""Which of this repository's files a module imports, directly or not.

One answer serves two uses: a result's fingerprint hashes the training recipe, the files its
run function imports (src/train/run.py RECIPE), as normalised code (`code_digest`: comments,
docstrings and formatting do not count), so a change that can change a number retrains and
one that cannot does not; and a contract test checks that each dvc.yaml stage lists exactly
the code its entry point imports.
"""

from __future__ import annotations

import ast
import hashlib
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]
OWN = ("src", "stages", "bench", "tools")


def module_file(module: str, root: Path | None = None) -> Path | None:
    """The file that runs for `module` under `root` (default: this repository; its .py, or its
    package's __init__)."""
    path = (ROOT if root is None else root).joinpath(*module.split("."))
    if path.with_suffix(".py").is_file():
        return path.with_suffix(".py")
    if (path / "__init__.py").is_file():
        return path / "__init__.py"
    return None


def _imported(path: Path) -> set[str]:
    """Modules of this repo that `path` imports (top level or inside functions), with the
    packages Python executes on the way (`a.b.c` also runs a/__init__ and a/b/__init__)."""
    names = set()
    for node in _runtime_nodes(ast.parse(path.read_text())):
        if isinstance(node, ast.Import):
            names.update(alias.name for alias in node.names)
        elif isinstance(node, ast.ImportFrom) and node.module and node.level == 0:
            names.add(node.module)
            names.update(f"{node.module}.{alias.name}" for alias in node.names)  # `from src.x import module`
    found = set()
    for name in names:
        if name.split(".")[0] not in OWN:
            continue
        parts = name.split(".")
        for i in range(1, len(parts) + 1):
            if module_file(".".join(parts[:i])) is not None:
                found.add(".".join(parts[:i]))
    return found


def _runtime_nodes(tree: ast.AST):
    """Every node except those under `if TYPE_CHECKING:` (imports for annotations only, never run)."""
    todo = [tree]
    while todo:
        node = todo.pop()
        yield node
        if isinstance(node, ast.If) and "TYPE_CHECKING" in ast.unparse(node.test):
            todo += node.orelse
            continue
        todo += ast.iter_child_nodes(node)


def code_files(module: str) -> list[str]:
    """Repo-relative paths of `module`'s file and of every repo file it imports, sorted."""
    seen, todo = set(), [module]
    while todo:
        name = todo.pop()
        path = module_file(name)
        if path is None or path in seen:
            continue
        seen.add(path)
        todo += sorted(_imported(path))
    return sorted(
        str(p.relative_to(ROOT)) for p in seen if p.name != "__init__.py" or p.read_text().strip()
    )  # empty package markers run nothing


def code_units(module: str) -> list[str]:
    """`code_files` as dvc.yaml lists them: a package folder under src/ whose every module
    the entry point imports, else each file it imports. A stage that reads one module of a
    package (the focus summary's interval of src/stats) so does not rerun when another
    module of it (the report's validity rule) changes."""
    files = code_files(module)
    units = set()
    for path in files:
        parts = Path(path).parts
        if parts[0] == "src" and len(parts) > 2:
            package = Path(*parts[:2])
            modules = {
                str(p.relative_to(ROOT))
                for p in (ROOT / package).rglob("*.py")
                if p.name != "__init__.py" or p.read_text().strip()
            }
            units.add(str(package) if modules <= set(files) else path)
        else:
            units.add(path)
    return sorted(units)


def normalised_code(path: Path) -> str:
    """What a file's code does, without what only a reader sees: the syntax tree with every
    docstring dropped, printed without line numbers, so that comments, docstrings and
    formatting leave it unchanged and any change to a statement, name or constant does not."""
    tree = ast.parse(Path(path).read_text())
    for node in ast.walk(tree):
        body = getattr(node, "body", None)
        if (
            isinstance(node, (ast.Module, ast.ClassDef, ast.FunctionDef, ast.AsyncFunctionDef))
            and body
            and isinstance(body[0], ast.Expr)
            and isinstance(body[0].value, ast.Constant)
            and isinstance(body[0].value.value, str)
        ):
            node.body = body[1:] or [ast.Pass()]
    return ast.dump(tree, annotate_fields=False, include_attributes=False)


def code_digest(files: list[str], root: Path = ROOT) -> str:
    """One sha256 over the normalised code of `files` (relative to `root`), in order."""
    digest = hashlib.sha256()
    for name in files:
        digest.update(f"{name}\n{normalised_code(root / name)}\n".encode())
    return digest.hexdigest()
