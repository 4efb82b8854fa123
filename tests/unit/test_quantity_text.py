"""Quantities as a person reads them in `pykorn status`, `config diff` and `config validate`
(core/quantity_text.py): exact, in the unit that says it shortest, else the raw number."""

from __future__ import annotations

import pytest
from hypothesis import given
from hypothesis import strategies as st

from core.quantity_text import quantity_text, resource_text, vcore_text
from core.resources import parse_quantity

GI = 2**30


@pytest.mark.parametrize(
    ("kind", "value", "text"),
    [
        ("memory", 8 * GI, "8.0Gi"),
        ("memory", 3 * GI // 2, "1.5Gi"),
        ("memory", 100 * 2**20, "100.0Mi"),
        ("memory", 5 * 10**9, "5.0G"),  # written 5G: decimal reads shorter
        ("memory", 3000, "3.0k"),
        ("memory", GI + 1, str(GI + 1)),  # no unit says it exactly: the bytes
        ("memory", 512, "512"),
        ("memory", 0, "0"),
        ("ephemeral-storage", 20 * GI, "20.0Gi"),
        ("vcore", 2500, "2.5"),
        ("vcore", 4000, "4"),
        ("vcore", 1, "0.001"),
        ("pods", 110, "110"),
        ("nvidia.com/gpu", 2, "2"),
    ],
)
def test_a_quantity_as_a_person_reads_it(kind: str, value: int, text: str) -> None:
    assert quantity_text(kind, value) == text


def test_a_resource_and_a_lone_vcore() -> None:
    assert resource_text({"vcore": 2500, "memory": 4 * GI}) == "{memory: 4.0Gi, vcore: 2.5}"
    assert resource_text({}) == resource_text(None) == "-"
    assert vcore_text(2500) == "2.5 vcore"


@given(st.integers(min_value=0, max_value=2**62))
def test_the_text_reads_back_as_the_same_bytes(count: int) -> None:
    """What is shown is exact: read as a quantity again (the digits before the unit, scaled), it is the
    value, so two different values never show alike."""
    text = quantity_text("memory", count)
    if text.isdigit():
        assert int(text) == count
        return
    number, suffix = text[: len(text.rstrip("EPTGMKik"))], text[len(text.rstrip("EPTGMKik")) :]
    unit = parse_quantity("memory", f"1{suffix}")  # the unit as the core reads it
    whole, tenth = number.split(".")
    assert (int(whole) * 10 + int(tenth)) * unit == count * 10
