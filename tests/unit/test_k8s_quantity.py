"""Kubernetes quantities exactly as apimachinery parses and prints them.

The facts are apimachinery's own: tests/data/k8s_quantity_facts.json holds the (input, result) pairs of
kubernetes/kubernetes `staging/src/k8s.io/apimachinery/pkg/api/resource/quantity_test.go` (the commit
is in the file's `source`), taken as data; this file checks our parser against every one it can
state."""

from __future__ import annotations

import json
from decimal import Decimal
from pathlib import Path
from typing import Any

import pytest
from hypothesis import given
from hypothesis import strategies as st

from shim_k8s.readers import quantity as q
from shim_k8s.readers.pod_resources import PodResourceError, from_json

FACTS: dict[str, Any] = json.loads(
    (Path(__file__).parent.parent / "data" / "k8s_quantity_facts.json").read_text()
)


def _nanos(decimal: str) -> int | None:
    """A decimal value in nano-units; None when it is finer than 1n (only Go-built values are)."""
    nanos = Decimal(decimal) * q.NANO
    return int(nanos) if nanos == nanos.to_integral_value() else None


def _id(entry: dict[str, Any]) -> str:
    return f"{entry['test']}:{entry.get('input', entry.get('value_decimal'))!r}"


@pytest.mark.parametrize("entry", FACTS["canonical"], ids=_id)
def test_parsed_as_apimachinery_parses_it(entry: dict[str, Any]) -> None:
    parsed = q.parse(entry["input"])
    if "canonical" in entry:  # apimachinery: String() after ParseQuantity
        assert parsed.canonical() == entry["canonical"]
    if "value_decimal" in entry:  # the exact value after its rounding to 1n, and the format
        assert parsed.nanos == _nanos(entry["value_decimal"])
    if "format" in entry:
        assert parsed.format == entry["format"]


@pytest.mark.parametrize("text", FACTS["invalid"])
def test_what_apimachinery_refuses_is_refused(text: str) -> None:
    with pytest.raises(q.QuantityError):
        q.parse(text)


@pytest.mark.parametrize("entry", FACTS["value"], ids=_id)
def test_value_rounds_up_to_whole_units(entry: dict[str, Any]) -> None:
    assert q.parse(entry["input"]).value() == entry["value"]


@pytest.mark.parametrize("entry", FACTS["milli_value"], ids=_id)
def test_milli_value_rounds_up_to_milli_units(entry: dict[str, Any]) -> None:
    assert q.parse(entry["input"]).milli_value() == entry["milli_value"]


FORMATS = (q.DECIMAL_SI, q.BINARY_SI, q.DECIMAL_EXPONENT)
# Values finer than 1n are only built in Go, never parsed (parsing rounds up to 1n); and a format no
# parser makes (apimachinery's "invalid format" case) has nothing to check here.
PRINTABLE = [
    e for e in FACTS["value_to_canonical"]
    if e["format"] in FORMATS and _nanos(e["value_decimal"]) is not None
]  # fmt: skip


@pytest.mark.parametrize("entry", PRINTABLE, ids=_id)
def test_a_value_prints_in_apimachinerys_canonical_form(entry: dict[str, Any]) -> None:
    nanos = _nanos(entry["value_decimal"])
    assert nanos is not None
    assert q.Quantity(nanos, entry["format"]).canonical() == entry["canonical"]


@pytest.mark.parametrize("entry", [e for e in FACTS["json"] if "json" in e], ids=lambda e: repr(e["json"]))
def test_the_apis_json_is_read_as_unmarshal_json_reads_it(entry: dict[str, Any]) -> None:
    """Quoted or a bare number, surrounding blanks trimmed."""
    value = json.loads(entry["json"])
    assert q.Quantity(from_json(value, "x")).canonical() == entry["canonical"]


def test_json_null_is_zero_and_other_types_are_refused_naming_the_field() -> None:
    assert from_json(None, "x") == 0
    for bad in (True, [1], {"a": 1}):
        with pytest.raises(PodResourceError, match=r"spec\.x"):
            from_json(bad, "spec.x")


def test_the_everyday_slips_are_quantities_not_errors() -> None:
    """What the API server accepts, so the shim must: memory 400m is 0.4 bytes (rounded up to 1)."""
    assert q.parse("400m").value() == 1
    assert q.parse("1500u").milli_value() == 2
    assert q.parse("1e3").value() == 1000
    assert q.parse(".5").milli_value() == 500
    assert q.parse("129e6").value() == 129_000_000
    assert q.parse("-1500m").value() == -2  # away from zero


def test_what_pykorn_cannot_count_is_refused_with_a_reason() -> None:
    with pytest.raises(q.QuantityError, match="exponent"):
        q.parse("1e100000")
    with pytest.raises(q.QuantityError, match="characters long"):
        q.parse("1" * 1000)
    assert q.parse("1e-100000").nanos == 1  # as apimachinery: rounded up to 1n


# Round trips ----------------------------------------------------------------------------------------

_digits = st.text("0123456789", min_size=0, max_size=12)
_suffix = st.sampled_from(
    ["", "n", "u", "m", "k", "M", "G", "T", "P", "E", "Ki", "Mi", "Gi", "Ti", "Pi", "Ei"]
)
_exponent = st.builds(lambda e, s: f"{e}{s}", st.sampled_from(["e", "E"]), st.integers(-40, 40))
quantities = st.builds(
    lambda sign, whole, fraction, suffix: f"{sign}{whole}{fraction}{suffix}",
    st.sampled_from(["", "+", "-"]),
    _digits,
    st.one_of(st.just(""), st.builds(lambda d: "." + d, _digits)),
    st.one_of(_suffix, _exponent),
).filter(lambda text: text not in ("", "+", "-"))


@given(quantities)
def test_canonical_text_parses_back_to_the_same_value_and_prints_the_same(text: str) -> None:
    parsed = q.parse(text)
    again = q.parse(parsed.canonical())
    assert again.nanos == parsed.nanos
    assert again.canonical() == parsed.canonical()
