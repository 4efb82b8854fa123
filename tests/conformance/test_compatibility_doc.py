"""Every deliberate difference a conformance case cites is written up in docs/compatibility.md."""

from __future__ import annotations

import importlib
import pkgutil
import re
from pathlib import Path

import tests.conformance
from tests.conformance.upstream import COMPATIBILITY_DOC, DELIBERATE

ROOT = Path(__file__).resolve().parents[2]


def _cited() -> set[str]:
    for module in pkgutil.walk_packages(tests.conformance.__path__, "tests.conformance."):
        importlib.import_module(module.name)  # each suite declares its differences when it is read
    return set(DELIBERATE)


def test_every_cited_difference_has_its_entry() -> None:
    headings = set(re.findall(r"^## ([a-z0-9-]+)$", (ROOT / COMPATIBILITY_DOC).read_text(), re.MULTILINE))
    cited = _cited()
    assert cited, "no conformance case cites a deliberate difference: the registry is not being filled"
    assert cited <= headings, f"cited but not written up in {COMPATIBILITY_DOC}: {sorted(cited - headings)}"
