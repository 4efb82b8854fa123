"""The wire's tag and attribute names are defined once, in si.v1.tags, and every side imports them."""

from __future__ import annotations

import ast
from pathlib import Path

from si.v1 import tags

ROOT = Path(__file__).resolve().parents[2]
SOURCES = ("core", "rmclient", "shim_fake", "shim_k8s", "pykorn_cli")
VALUES = {value for name, value in vars(tags).items() if name.isupper() and isinstance(value, str)}


def _string_constants(path: Path) -> list[tuple[str, str]]:
    """Every `NAME = "literal"` at a module's top level."""
    found = []
    for node in ast.parse(path.read_text()).body:
        target = node.targets[0] if isinstance(node, ast.Assign) else getattr(node, "target", None)
        value = getattr(node, "value", None)
        if isinstance(target, ast.Name) and isinstance(value, ast.Constant) and isinstance(value.value, str):
            found.append((target.id, value.value))
    return found


def test_no_module_outside_the_tag_module_defines_a_tag_name_again() -> None:
    copies = [
        f"{path.relative_to(ROOT)}: {name} = {value!r}"
        for package in SOURCES
        for path in sorted((ROOT / package).rglob("*.py"))
        for name, value in _string_constants(path)
        if value in VALUES
    ]
    assert copies == []


def _spelled(path: Path) -> list[tuple[int, str]]:
    """Every string literal that is a whole tag name (not one inside a docstring or message)."""
    return [
        (node.lineno, node.value)
        for node in ast.walk(ast.parse(path.read_text()))
        if isinstance(node, ast.Constant) and isinstance(node.value, str) and node.value in VALUES
    ]


def test_no_module_spells_a_tag_name_instead_of_importing_it() -> None:
    spelled = [
        f"{path.relative_to(ROOT)}:{line}: {value!r}"
        for package in SOURCES
        for path in sorted((ROOT / package).rglob("*.py"))
        for line, value in _spelled(path)
    ]
    assert spelled == []


def test_every_name_has_its_own_value() -> None:
    names = [name for name in vars(tags) if name.isupper()]
    assert len({getattr(tags, name) for name in names}) == len(names)


def test_the_interface_document_cites_the_tag_module_and_every_name() -> None:
    text = (ROOT / "docs" / "interface.md").read_text()
    assert "proto/si/v1/tags.py" in text
    missing = [value for value in VALUES if value not in text]
    assert missing == []
