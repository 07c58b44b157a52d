"""How the test modules stand to each other: pytest imports them by basename (rootdir import mode, no
__init__.py under tests/), so two test modules of one name in different folders stop the whole run at
collection; and none imports another (README: shared helpers are in tests/support.py)."""

import ast
from collections import Counter

from tests.support import REPO


def test_no_two_test_modules_share_a_file_name():
    names = Counter(path.name for path in (REPO / "tests").rglob("test_*.py"))
    assert not [name for name, count in names.items() if count > 1]


def imported_test_modules(path) -> list[str]:
    """The test modules and conftests that the module at `path` imports (anywhere in it, relative imports too)."""
    names = []
    for node in ast.walk(ast.parse(path.read_text())):
        if isinstance(node, ast.Import):
            names += [alias.name for alias in node.names]
        elif isinstance(node, ast.ImportFrom):
            module = "." * node.level + (node.module or "")
            names += [module, *(f"{module}.{alias.name}" for alias in node.names)]
    return sorted(
        {
            name
            for name in names
            if (name.startswith("tests.") or name.startswith("."))
            and any(part.startswith("test_") or part == "conftest" for part in name.split("."))
        }
    )


def test_no_test_module_imports_another_test_module():
    # README: what two test modules share is in tests/support.py; a test module imported by another also runs
    # its tests' module-level code there, and ties the two together
    imports = {str(path.relative_to(REPO)): imported_test_modules(path) for path in (REPO / "tests").rglob("test_*.py")}
    assert {module: names for module, names in imports.items() if names} == {}
