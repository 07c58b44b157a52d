"""Which of this repository's files a module imports, directly or not.

One answer serves two uses: a result's fingerprint hashes the training recipe, the files its
run function imports (src/train/run.py RECIPE), and each measurement's digest its own files
(src/measures MEASUREMENTS), as normalised code (`code_digest`), so a change that can change a
number retrains (or re-measures) and one that cannot does not; and a contract test checks
that each dvc.yaml stage lists exactly the code its entry point imports.

Normalised code is the syntax tree less what only a reader sees. It drops docstrings, comments
and formatting, and it blanks text that only describes, found by where it stands, never by
what it says:
- the message of a `raise X(...)` (its call's positional string arguments) and of an `assert`;
- the string arguments of `print(...)` to the terminal (no `file=`, or sys.stdout / sys.stderr)
  and of `warnings.warn(...)`;
- a `help=` keyword's value, and the positional argument that fills the `help` field of a
  dataclass defined in the same file (the scheme, modifier and key registry's help texts).
A blanked string is a string literal, an f-string or a `+` of them; anything else in those
places (a variable, a call) still counts, and so does every other string: a dict key, a
scheme name, a dtype, a message that code reads back. A file's digest so changes when a
statement, a name or a counted constant changes, and not when a help or error text does.
"""

from __future__ import annotations

import ast
import hashlib
from collections.abc import Iterator
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
    packages Python executes on the way (`a.b.c` also runs a/__init__ and a/b/__init__),
    except a top-level package (src, stages, ...): its __init__ holds the project's version
    (src.__version__), which changes no output but the report that prints it, so only a module
    that imports from it by name (`from src import __version__`) depends on it."""
    names: set[str] = set()
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
        for i in range(1 if len(parts) == 1 else 2, len(parts) + 1):
            if module_file(".".join(parts[:i])) is not None:
                found.add(".".join(parts[:i]))
    return found


def _runtime_nodes(tree: ast.AST) -> Iterator[ast.AST]:
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
    """What a file's code does, without what only a reader sees (the module's docstring): the
    syntax tree with every docstring dropped and every describing text blanked, printed
    without line numbers."""
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
    _BlankText(_help_positions(tree)).visit(tree)
    return ast.dump(tree, annotate_fields=False, include_attributes=False)


def _help_positions(tree: ast.Module) -> dict[str, int]:
    """Dataclass name -> the position of its `help` field, for the dataclasses `tree` defines."""
    positions = {}
    for node in tree.body:
        if isinstance(node, ast.ClassDef) and any(
            "dataclass" in ast.unparse(decorator) for decorator in node.decorator_list
        ):
            fields = [
                item.target.id
                for item in node.body
                if isinstance(item, ast.AnnAssign) and isinstance(item.target, ast.Name)
            ]
            if "help" in fields:
                positions[node.name] = fields.index("help")
    return positions


def _is_text(node: ast.expr) -> bool:
    """A string literal, an f-string, or a `+` of them."""
    if isinstance(node, ast.BinOp) and isinstance(node.op, ast.Add):
        return _is_text(node.left) and _is_text(node.right)
    return isinstance(node, ast.JoinedStr) or (isinstance(node, ast.Constant) and isinstance(node.value, str))


def _blank(node: ast.expr) -> ast.expr:
    return ast.Constant("") if _is_text(node) else node


class _BlankText(ast.NodeTransformer):
    """Blanks help, error and warning text (the places this module's docstring lists)."""

    def __init__(self, help_positions: dict[str, int]):
        self.help_positions = help_positions

    def visit_Raise(self, node: ast.Raise) -> ast.Raise:
        self.generic_visit(node)
        if isinstance(node.exc, ast.Call):
            node.exc.args = [_blank(arg) for arg in node.exc.args]
        return node

    def visit_Assert(self, node: ast.Assert) -> ast.Assert:
        self.generic_visit(node)
        if node.msg is not None:
            node.msg = _blank(node.msg)
        return node

    def visit_Call(self, node: ast.Call) -> ast.Call:
        self.generic_visit(node)
        called = ast.unparse(node.func)
        to = next((keyword.value for keyword in node.keywords if keyword.arg == "file"), None)
        if (called == "print" and (to is None or ast.unparse(to) in ("sys.stdout", "sys.stderr"))) or (
            called == "warnings.warn"
        ):
            node.args = [_blank(arg) for arg in node.args]
        position = self.help_positions.get(called)
        if position is not None and position < len(node.args):
            node.args[position] = _blank(node.args[position])
        for keyword in node.keywords:
            if keyword.arg == "help":
                keyword.value = _blank(keyword.value)
        return node


def code_digest(files: list[str], root: Path = ROOT) -> str:
    """One sha256 over the normalised code of `files` (relative to `root`), in order."""
    digest = hashlib.sha256()
    for name in files:
        digest.update(f"{name}\n{normalised_code(root / name)}\n".encode())
    return digest.hexdigest()
