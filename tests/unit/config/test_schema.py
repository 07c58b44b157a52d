"""src/config/schema.py: StudyConfig is generated from the scheme registry at run time, so the type checker reads
its fields from the declarations in `_Study` under TYPE_CHECKING; these must be the generated fields, with their
types."""

import ast
import dataclasses

from src.config.schema import StudyConfig
from tests.support import REPO


def declared_for_type_checking() -> dict[str, str]:
    """{field: annotation} as `_Study`'s TYPE_CHECKING block declares them."""
    tree = ast.parse((REPO / "src/config/schema.py").read_text())
    study = next(node for node in tree.body if isinstance(node, ast.ClassDef) and node.name == "_Study")
    block = next(
        node
        for node in study.body
        if isinstance(node, ast.If) and isinstance(node.test, ast.Name) and node.test.id == "TYPE_CHECKING"
    )
    return {
        node.target.id: ast.unparse(node.annotation)
        for node in block.body
        if isinstance(node, ast.AnnAssign) and isinstance(node.target, ast.Name)
    }


def spelled(annotation) -> str:
    return annotation.__name__ if isinstance(annotation, type) else str(annotation)


def test_the_type_checkers_study_fields_are_the_generated_ones():
    generated = {f.name: spelled(f.type) for f in dataclasses.fields(StudyConfig)}
    assert declared_for_type_checking() == generated
