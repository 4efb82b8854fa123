"""Resource arithmetic and quantity parsing, read the way a YuniKorn user writes and expects them."""

from __future__ import annotations

import pytest
from hypothesis import given
from hypothesis import strategies as st

from core.resources import (
    INT64_MAX,
    MEMORY,
    VCORE,
    ZERO,
    Resource,
    ResourceError,
    min_limit,
    parse_quantity,
    parse_resource_map,
    sum_resources,
)

GPU = "nvidia.com/gpu"

# Quantity parsing ------------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("text", "expected"),
    [
        ("10Gi", 10 * 2**30),
        ("512Mi", 512 * 2**20),
        ("1Ki", 1024),
        ("2Ti", 2 * 2**40),
        ("1G", 10**9),
        ("1M", 10**6),
        ("1k", 1000),
        ("1 Gi", 2**30),
        ("1000", 1000),
        ("0", 0),
        (" 64 ", 64),
        (123, 123),
    ],
)
def test_memory_is_parsed_in_bytes(text: object, expected: int) -> None:
    assert parse_quantity(MEMORY, text) == expected


@pytest.mark.parametrize(
    ("text", "expected"),
    [
        ("2", 2000),
        (2, 2000),
        ("500m", 500),
        ("1500m", 1500),
        ("0", 0),
        ("1k", 1_000_000),
    ],
)
def test_vcore_is_parsed_in_millicores(text: object, expected: int) -> None:
    assert parse_quantity(VCORE, text) == expected


@pytest.mark.parametrize(
    ("name", "text", "expected"),
    [
        (GPU, "2", 2),
        (GPU, 4, 4),
        ("pods", "110", 110),
        ("ephemeral-storage", "1Gi", 2**30),
        ("hugepages-2Mi", "1k", 1000),
    ],
)
def test_other_types_are_taken_as_given(name: str, text: object, expected: int) -> None:
    assert parse_quantity(name, text) == expected


@pytest.mark.parametrize(
    ("name", "value", "message"),
    [
        (MEMORY, "-1", "negative"),
        (MEMORY, "-1Gi", "negative"),
        (VCORE, "-500m", "negative"),
        (GPU, -2, "negative"),
        (MEMORY, "10Xi", "unknown unit"),
        (MEMORY, "10K", "unknown unit"),
        (MEMORY, "10mi", "unknown unit"),
        (MEMORY, "10gi", "unknown unit"),
        (VCORE, "2cores", "unknown unit"),
        (MEMORY, "0.5", "whole number"),
        (MEMORY, "1.5Gi", "whole number"),
        (MEMORY, "500m", "vcore only"),
        (GPU, "1.5", "whole number"),
        (VCORE, "1.5", "whole number"),
        (VCORE, 1.5, "whole number"),
        (VCORE, "0.0005", "whole number"),
        (MEMORY, "+4", "not a quantity"),
        (MEMORY, True, "boolean"),
        (VCORE, False, "boolean"),
        (MEMORY, "", "not a quantity"),
        (MEMORY, "ten", "not a quantity"),
        (MEMORY, "1 2", "not a quantity"),
        (MEMORY, "1e3", "not a quantity"),
        (MEMORY, str(INT64_MAX + 1), "int64"),
        (MEMORY, "8Ei", "int64"),
        (VCORE, str(INT64_MAX), "int64"),
    ],
)
def test_bad_quantities_are_rejected(name: str, value: object, message: str) -> None:
    with pytest.raises(ResourceError, match=message):
        parse_quantity(name, value)


def test_the_int64_boundary_itself_is_accepted() -> None:
    assert parse_quantity(MEMORY, str(INT64_MAX)) == INT64_MAX
    assert parse_quantity(MEMORY, "7Ei") == 7 * 2**60


def test_resource_error_is_a_value_error_naming_the_type() -> None:
    with pytest.raises(ValueError, match=r"^nvidia\.com/gpu: "):
        parse_quantity(GPU, "-1")


def test_parse_resource_map_parses_each_type_by_its_own_rules() -> None:
    res = parse_resource_map({MEMORY: "1Gi", VCORE: "250m", GPU: "1"})
    assert res.as_dict() == {MEMORY: 2**30, VCORE: 250, GPU: 1}


# Resource --------------------------------------------------------------------------------------


def test_add_and_sub_work_per_type_and_keep_types_from_both_sides() -> None:
    a = Resource({MEMORY: 100, VCORE: 10})
    b = Resource({VCORE: 5, GPU: 1})
    assert (a + b).as_dict() == {MEMORY: 100, VCORE: 15, GPU: 1}
    assert (a - b).as_dict() == {MEMORY: 100, VCORE: 5, GPU: -1}
    assert a + {MEMORY: 1} == {MEMORY: 101, VCORE: 10}


def test_arithmetic_does_not_change_its_operands() -> None:
    source = {MEMORY: 1}
    a = Resource(source)
    _ = a + {MEMORY: 5}
    _ = a - {MEMORY: 5}
    source[MEMORY] = 99
    assert a.as_dict() == {MEMORY: 1}


def test_equality_ignores_zero_entries_but_keeps_them() -> None:
    a = Resource({MEMORY: 10, VCORE: 0})
    b = Resource({MEMORY: 10})
    assert a == b
    assert hash(a) == hash(b)
    assert a == {MEMORY: 10, GPU: 0}
    assert a != Resource({MEMORY: 11})
    assert Resource({VCORE: 0}) == ZERO
    assert VCORE in a
    assert VCORE not in b
    assert len(a) == 2


def test_missing_types_read_as_zero() -> None:
    res = Resource({MEMORY: 5})
    assert res.get(VCORE) == 0
    assert res.get(MEMORY) == 5
    with pytest.raises(KeyError):
        res[VCORE]


def test_fits_in_counts_a_type_missing_from_the_capacity_as_zero() -> None:
    capacity = Resource({MEMORY: 100, VCORE: 10})
    assert Resource({MEMORY: 100, VCORE: 10}).fits_in(capacity)
    assert Resource({MEMORY: 50}).fits_in(capacity)
    assert not Resource({MEMORY: 101}).fits_in(capacity)
    assert not Resource({GPU: 1}).fits_in(capacity)
    assert Resource({GPU: 0}).fits_in(capacity)
    assert ZERO.fits_in(ZERO)
    assert Resource({MEMORY: -5}).fits_in(ZERO)


def test_fits_in_limit_counts_a_type_missing_from_the_limit_as_unlimited() -> None:
    limit = Resource({MEMORY: 100})
    assert Resource({MEMORY: 100, VCORE: 10**9, GPU: 8}).fits_in_limit(limit)
    assert not Resource({MEMORY: 101}).fits_in_limit(limit)
    assert Resource({MEMORY: 10**12}).fits_in_limit(None)
    assert Resource({MEMORY: 10**12}).fits_in_limit(ZERO)


def test_fits_in_limit_with_a_zero_limit_allows_none_of_that_type() -> None:
    limit = Resource({GPU: 0})
    assert not Resource({GPU: 1}).fits_in_limit(limit)
    assert Resource({GPU: 0, MEMORY: 5}).fits_in_limit(limit)
    assert Resource({MEMORY: 5}).fits_in_limit(limit)


def test_min_limit_takes_the_smaller_of_each_type_and_treats_missing_as_unlimited() -> None:
    a = Resource({MEMORY: 100, VCORE: 10})
    b = Resource({MEMORY: 50, GPU: 2})
    assert min_limit(a, b) == {MEMORY: 50, VCORE: 10, GPU: 2}
    assert min_limit(b, a) == {MEMORY: 50, VCORE: 10, GPU: 2}
    assert min_limit(a, None) is a
    assert min_limit(None, b) is b
    assert min_limit(None, None) is None


def test_min_limit_keeps_a_zero_limit() -> None:
    result = min_limit(Resource({GPU: 0}), Resource({GPU: 4, MEMORY: 1}))
    assert result is not None
    assert result.as_dict() == {GPU: 0, MEMORY: 1}
    assert not Resource({GPU: 1}).fits_in_limit(result)


def test_sum_resources() -> None:
    total = sum_resources([Resource({MEMORY: 1}), {MEMORY: 2, VCORE: 3}, Resource({GPU: 1})])
    assert total == {MEMORY: 3, VCORE: 3, GPU: 1}
    assert sum_resources([]) == ZERO
    assert isinstance(sum_resources([]), Resource)


def test_has_negative_and_is_zero() -> None:
    assert Resource({MEMORY: 1}).has_negative() is False
    assert (Resource({MEMORY: 1}) - {MEMORY: 2}).has_negative() is True
    assert ZERO.is_zero()
    assert Resource({MEMORY: 0, VCORE: 0}).is_zero()
    assert not Resource({MEMORY: 0, VCORE: 1}).is_zero()
    assert not Resource({MEMORY: -1}).is_zero()


def test_shares_type_with_looks_at_the_types_named_as_yunikorns_match_any() -> None:
    assert Resource({MEMORY: 1, VCORE: 1}).shares_type_with({VCORE: 2})
    assert not Resource({MEMORY: 1}).shares_type_with({VCORE: 2})
    assert Resource({MEMORY: 0, VCORE: 1}).shares_type_with({MEMORY: 5})
    assert Resource({MEMORY: 1}).shares_type_with({MEMORY: 0})
    assert not ZERO.shares_type_with(ZERO)


def test_repr_is_sorted_and_readable() -> None:
    assert repr(Resource({VCORE: 2, MEMORY: 1})) == "Resource(memory=1, vcore=2)"


# Properties ------------------------------------------------------------------------------------

_TYPES = st.sampled_from([MEMORY, VCORE, GPU, "pods"])
_QUANTITY = st.integers(min_value=0, max_value=2**40)
_RESOURCES = st.dictionaries(_TYPES, _QUANTITY, max_size=4).map(Resource)
_SIGNED = st.dictionaries(_TYPES, st.integers(min_value=-(2**40), max_value=2**40), max_size=4).map(Resource)


@given(_SIGNED, _SIGNED)
def test_adding_then_subtracting_gives_back_the_original(a: Resource, b: Resource) -> None:
    assert (a + b) - b == a
    assert a + b == b + a


@given(_RESOURCES, _RESOURCES, _RESOURCES)
def test_fits_in_is_monotone_in_the_capacity(ask: Resource, capacity: Resource, extra: Resource) -> None:
    if ask.fits_in(capacity):
        assert ask.fits_in(capacity + extra)
    assert ask.fits_in(ask)
    assert ask.fits_in(ask + extra)


@given(_RESOURCES, _RESOURCES, _RESOURCES)
def test_fits_in_limit_is_monotone_and_never_stricter_than_fits_in(
    ask: Resource, limit: Resource, extra: Resource
) -> None:
    if ask.fits_in(limit):
        assert ask.fits_in_limit(limit)
    if ask.fits_in_limit(limit):
        # A looser limit: raised on the types it has, or with a type dropped (missing is unlimited).
        # Adding a new type, even at zero, would tighten it instead.
        raised = Resource({k: v + extra.get(k) for k, v in limit.items()})
        assert ask.fits_in_limit(raised)
        assert ask.fits_in_limit(Resource({k: v for k, v in limit.items() if k != MEMORY}))
        smaller = Resource({k: v for k, v in ask.items() if k in limit})
        assert smaller.fits_in(limit)


@given(_RESOURCES, _RESOURCES, _RESOURCES)
def test_fitting_both_limits_is_fitting_their_minimum(ask: Resource, a: Resource, b: Resource) -> None:
    both = ask.fits_in_limit(a) and ask.fits_in_limit(b)
    assert ask.fits_in_limit(min_limit(a, b)) == both


@given(st.integers(min_value=0, max_value=INT64_MAX // 1000))
def test_vcore_cores_and_millicores_agree(cores: int) -> None:
    assert parse_quantity(VCORE, str(cores)) == parse_quantity(VCORE, f"{cores * 1000}m") == cores * 1000


def test_exceeds_with_counts_only_the_types_the_extra_needs_and_the_limit_names() -> None:
    used = Resource({"memory": 8, "vcore": 50})
    limit = Resource({"memory": 10})
    assert not used.exceeds_with(Resource({"memory": 2}), limit)  # exactly at the limit
    assert used.exceeds_with(Resource({"memory": 3}), limit)
    assert not used.exceeds_with(Resource({"vcore": 1000}), limit)  # vcore is not limited
    assert not Resource({"memory": 99}).exceeds_with(Resource({"vcore": 1}), limit)  # over, but not asked
    assert not used.exceeds_with(Resource({"memory": 0, "vcore": 1}), limit)
