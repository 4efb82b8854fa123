"""yunikorn-core's resource arithmetic tables, run against pykorn's core.resources where it has the same
operation.

Upstream: pkg/common/resources/resources_test.go at YUNIKORN_CORE_COMMIT (tests/conformance/upstream.py).
The rows whose function reaches a user (configuration, gRPC, REST, placement) are in test_resources.py;
this module holds the helpers with no user-visible effect of their own, each run against pykorn's
counterpart:

  NewResourceFromMap -> Resource(mapping)        Clone -> Resource.copy()
  Equals, EqualsOrEmpty -> Resource ==           IsZero -> Resource.is_zero()
  MatchAny -> Resource.shares_type_with()        ComponentWiseMin -> min_limit()
  Add / AddTo -> + / add_in_place()              Sub / SubFrom -> - / sub_in_place()
  subVal (TestWrapSafe) -> -                     HasNegativeValue -> Resource.has_negative()
  IsEmpty -> len(resource) == 0

(MatchAny and shares_type_with are used at the same decision points: whether an allocation can help an
ask as a preemption victim, queue.go / quota_preemptor.go / required_node_preemptor.go upstream,
core/scheduler/preemption/ in pykorn.)

Ported (rows upstream -> cases): TestNewResourceFromMap 5 -> 5; TestClone 3 -> 3; TestEquals 8 -> 6;
TestIsZero 7 -> 6; TestMatchAnyOnlyExisting 13 rows + 1 check -> 11; TestComponentWiseMin 5 -> 5;
TestWrapSafe 16 checks -> 2 here (7 in test_resources.py); TestAdd 4 checks -> 2; TestAddTo 3 -> 2;
TestSub 4 -> 2; TestSubFrom 3 -> 2; TestEqualsOrEmpty 7 -> 2; TestHasNegativeValue 4 -> 3;
TestIsEmpty 4 -> 3. Total 54 cases.

Not ported (pykorn has no nil Resource: None means "no resource" and is never handed to these
operations; Go's nil-receiver and nil-argument checks have nothing to run against):
  - TestCloneNil; TestEquals "simple cases (nil checks)" (nil, nil) and ({}, nil); TestIsZero "nil
    checks"; TestMatchAnyOnlyExisting "nil resource should not match", "positive resource and nil
    resource should not match", "nil resource and positive resource should not match"; TestAdd nil/nil
    and Zero/nil; TestAddToNil; TestAddTo AddTo(nil); TestSub nil/nil and empty/nil; TestSubFromNil;
    TestSubFrom SubFrom(nil); TestEqualsOrEmpty the 5 rows with a nil side; TestHasNegativeValue "Nil
    resource"; TestIsEmpty "Nil resource". (22)
Not ported (pykorn has no equivalent operation):
  - TestStrictlyGreaterThan (11), TestStrictlyGreaterThanOnlyExisting (22),
    TestStrictlyGreaterThanOrEqualsOnlyExisting (22), TestStrictlyGreaterThanOrEquals (7): no
    strict-order comparison of two resources in core.resources.
  - TestComponentWiseMinOnlyExisting (12), TestMergeIfNotPresent (12), TestComponentWiseMax (8).
  - TestMultiplyBy, TestMultiply, TestMultiplyToNil, TestMultiplyTo (sequences of checks): no multiply.
  - TestSubEliminateNegative (1), TestSubOnlyExisting (9), TestAddOnlyExisting (8),
    TestSubErrorNegative (4 checks).
  - TestDeepEquals (11): unused by YuniKorn's scheduler; pykorn's == ignores zero entries as Equals does.
  - TestFitInScoreNil (2 checks), TestFitInScore (7): the score picks the node to reserve for an ask
    that has waited past the reservation delay; pykorn has no score function.
  - TestResource_DominantResource (9): DominantResourceType is not called by YuniKorn's scheduler.
  - TestTypeMatching (8), TestCompUsageRatioSpecificTypes (21): preemption victim ordering internals.
  - TestGetFairShare (18), TestGetShares (10), TestCompUsageRatio (12), TestCompareShares (12),
    TestFairnessRatio (9): share arithmetic behind queue and application sorting; only the resulting
    order reaches a user, which test_resources.py checks for queues (TestCompUsageRatioSeparately) and
    the sorter tables check in full.
Not ported (Go internals): TestToString (1), TestString (3): the text of logs and error messages.
"""

from __future__ import annotations

from typing import Any

import pytest

from core.resources import Resource, int64_values, min_limit
from tests.conformance.upstream import YUNIKORN_CORE_COMMIT, deliberate, yunikorn_case

assert YUNIKORN_CORE_COMMIT  # the commit the tables below were read at

INT64_MAX = 2**63 - 1
INT64_MIN = -(2**63)

Res = dict[str, int]


def case(test: str, name: str, *values: Any) -> Any:
    return pytest.param(*values, id=yunikorn_case(test, name))


# TestNewResourceFromMap ---------------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("values", "expected"),
    [
        case("TestNewResourceFromMap", "nil", None, {}),
        case("TestNewResourceFromMap", "empty", {}, {}),
        case("TestNewResourceFromMap", "one resource", {"first": 1}, {"first": 1}),
        case(
            "TestNewResourceFromMap", "two resource", {"first": 0, "second": -1}, {"first": 0, "second": -1}
        ),
        case(
            "TestNewResourceFromMap",
            "three resource",
            {"first": 1, "second": 2, "third": 0},
            {"first": 1, "second": 2, "third": 0},
        ),
    ],
)
def test_new_resource_from_map(values: Res | None, expected: Res) -> None:
    res = Resource(values)
    assert len(res) == len(expected)
    assert res.as_dict() == expected


# TestClone ----------------------------------------------------------------------------------------------


@pytest.mark.parametrize(
    "values",
    [
        case("TestClone", "resource without any resource mappings", {}),
        case("TestClone", "resource mappings", {"first": 1, "second": -2, "third": 3}),
        case("TestClone", "set a resource value to 0", {"first": 1, "zero": 0, "third": 3}),
    ],
)
def test_clone(values: Res) -> None:
    original = Resource(values)
    cloned = original.copy()
    assert cloned is not original
    assert cloned.as_dict() == original.as_dict()


# TestEquals ---------------------------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("base", "compare", "equal"),
    [
        case("TestEquals", "simple cases (nil checks)#02", {}, {"zero": 0}, True),
        case(
            "TestEquals", "Empty mapping and resource containing zero value are same", {}, {"zero": 0}, True
        ),
        case("TestEquals", "Same key and different resource value", {"first": 10}, {"first": 0}, False),
        case("TestEquals", "Different key and same resource value", {"first": 10}, {"second": 10}, False),
        case("TestEquals", "Same key and same resource value", {"first": 10}, {"first": 10}, True),
        case("TestEquals", "Different types of keys", {"first": 1}, {"first": 1, "second": 1}, False),
    ],
)
def test_equals(base: Res, compare: Res, equal: bool) -> None:
    assert (Resource(base) == Resource(compare)) is equal
    assert (Resource(compare) == Resource(base)) is equal


# TestIsZero ---------------------------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("values", "zero"),
    [
        case("TestIsZero", "Empty resource value", {}, True),
        case("TestIsZero", "Zero resource value", {"zero": 0}, True),
        case("TestIsZero", "Resource value", {"first": 10}, False),
        case(
            "TestIsZero",
            "Multiple resource values including zero",
            {"first": 10, "second": 2, "third": 0},
            False,
        ),
        case("TestIsZero", "Multiple resource values are zero", {"first": 0, "second": 0, "third": 0}, True),
        case("TestIsZero", "Multiple resource values", {"first": 10, "second": 2, "third": 4}, False),
    ],
)
def test_is_zero(values: Res, zero: bool) -> None:
    assert Resource(values).is_zero() is zero


# TestMatchAnyOnlyExisting -------------------------------------------------------------------------------

EXTRA = "positive resource should match even though extra resource type is there"


@pytest.mark.parametrize(
    ("left", "right", "match"),
    [
        case("TestMatchAnyOnlyExisting", "empty resource should not match", {}, {}, False),
        case(
            "TestMatchAnyOnlyExisting",
            "equal positive resources should match",
            {"first": 1},
            {"first": 1},
            True,
        ),
        case(
            "TestMatchAnyOnlyExisting",
            "equal positive resources with different values should match",
            {"first": 1},
            {"first": 2},
            True,
        ),
        case(
            "TestMatchAnyOnlyExisting",
            "positive resource and empty resource should not match",
            {"first": 1},
            {},
            False,
        ),
        case(
            "TestMatchAnyOnlyExisting",
            "empty resource and positive resource should not match",
            {},
            {"first": 1},
            False,
        ),
        case(
            "TestMatchAnyOnlyExisting",
            "positive resource should match even though value is zero",
            {"zero": 0},
            {"zero": 0},
            True,
        ),
        case("TestMatchAnyOnlyExisting", EXTRA, {"first": 10}, {"first": 10, "second": 1}, True),
        case("TestMatchAnyOnlyExisting", EXTRA + "#01", {"first": 10, "second": 1}, {"first": 10}, True),
        case("TestMatchAnyOnlyExisting", "resource should not match", {"first": 10}, {"second": 10}, False),
        case(
            "TestMatchAnyOnlyExisting", "resource should not match#01", {"second": 10}, {"first": 10}, False
        ),
    ],
)
def test_match_any(left: Res, right: Res, match: bool) -> None:
    assert Resource(left).shares_type_with(Resource(right)) is match


@pytest.mark.parametrize("values", [case("TestMatchAnyOnlyExisting", "same instance", {"first": 1})])
def test_match_any_same_instance(values: Res) -> None:
    res = Resource(values)
    assert res.shares_type_with(res)


# TestComponentWiseMin -----------------------------------------------------------------------------------

SMALLER = {"first": 5, "second": 15, "third": 6}
HIGHER = {"first": 7, "second": 10, "forth": 6}
BOTH = {"first": 5, "second": 10, "third": 6, "forth": 6}


@pytest.mark.parametrize(
    ("left", "right", "expected"),
    [
        case("TestComponentWiseMin", "Both resources nil", None, None, None),
        case("TestComponentWiseMin", "First resource nil", None, SMALLER, SMALLER),
        case("TestComponentWiseMin", "Second resource nil", SMALLER, None, SMALLER),
        case("TestComponentWiseMin", "First resource smaller than the second", SMALLER, HIGHER, BOTH),
        case("TestComponentWiseMin", "Second resource smaller than the first", HIGHER, SMALLER, BOTH),
    ],
)
def test_component_wise_min(left: Res | None, right: Res | None, expected: Res | None) -> None:
    result = min_limit(
        Resource(left) if left is not None else None, Resource(right) if right is not None else None
    )
    assert (result.as_dict() if result is not None else None) == expected


# TestWrapSafe (subVal) ----------------------------------------------------------------------------------


SATURATION = deliberate("int64-saturation")


@pytest.mark.parametrize(
    ("left", "right", "expected"),
    [
        case("TestWrapSafe", "subVal(MinInt64, 1) is MinInt64", INT64_MIN, 1, INT64_MIN),
        case("TestWrapSafe", "subVal(MaxInt64, -1) is MaxInt64", INT64_MAX, -1, INT64_MAX),
    ],
)
def test_wrap_safe_sub(left: int, right: int, expected: int) -> None:
    # Exact inside the core, saturated where a value leaves it (gRPC, REST): what a reader sees.
    assert int64_values(Resource({"a": left}) - Resource({"a": right})) == {"a": expected}


# TestAdd / TestAddTo / TestSub / TestSubFrom ------------------------------------------------------------

MERGE_LEFT = {"a": 0, "b": 1}
MERGE_RIGHT = {"a": 1, "c": 0, "d": -1}


@pytest.mark.parametrize(
    ("left", "right", "expected"),
    [
        case("TestAdd", "empty plus a resource", {}, {"a": 5}, {"a": 5}),
        case("TestAdd", "merge of types", MERGE_LEFT, MERGE_RIGHT, {"a": 1, "b": 1, "c": 0, "d": -1}),
    ],
)
def test_add(left: Res, right: Res, expected: Res) -> None:
    result = Resource(left) + Resource(right)
    assert result.as_dict() == expected
    assert Resource(left).as_dict() == left  # the operands are unchanged


@pytest.mark.parametrize(
    ("base", "delta", "expected"),
    [
        case("TestAddTo", "empty plus a resource", {}, {"a": 5}, {"a": 5}),
        case("TestAddTo", "merge of types", MERGE_LEFT, MERGE_RIGHT, {"a": 1, "b": 1, "c": 0, "d": -1}),
    ],
)
def test_add_to(base: Res, delta: Res, expected: Res) -> None:
    res = Resource(base)
    res.add_in_place(Resource(delta))
    assert res.as_dict() == expected


@pytest.mark.parametrize(
    ("left", "right", "expected"),
    [
        case("TestSub", "empty minus a resource", {}, {"a": 5}, {"a": -5}),
        case("TestSub", "merge of types", MERGE_LEFT, MERGE_RIGHT, {"a": -1, "b": 1, "c": 0, "d": 1}),
    ],
)
def test_sub(left: Res, right: Res, expected: Res) -> None:
    assert (Resource(left) - Resource(right)).as_dict() == expected


@pytest.mark.parametrize(
    ("base", "delta", "expected"),
    [
        case("TestSubFrom", "empty minus a resource", {}, {"a": 5}, {"a": -5}),
        case("TestSubFrom", "merge of types", MERGE_LEFT, MERGE_RIGHT, {"a": -1, "b": 1, "c": 0, "d": 1}),
    ],
)
def test_sub_from(base: Res, delta: Res, expected: Res) -> None:
    res = Resource(base)
    res.sub_in_place(Resource(delta))
    assert res.as_dict() == expected


# TestEqualsOrEmpty --------------------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("left", "right", "equal"),
    [
        case("TestEqualsOrEmpty", "same types and values", {"a": 0, "b": 1}, {"a": 0, "b": 1}, True),
        case("TestEqualsOrEmpty", "different types", {"a": 0, "c": 1}, {"a": 0, "d": 3}, False),
    ],
)
def test_equals_or_empty(left: Res, right: Res, equal: bool) -> None:
    assert (Resource(left) == Resource(right)) is equal


# TestHasNegativeValue / TestIsEmpty ---------------------------------------------------------------------


@pytest.mark.parametrize(
    ("values", "negative"),
    [
        case("TestHasNegativeValue", "Empty resource", {}, False),
        case("TestHasNegativeValue", "Only positive values", {"memory": 100}, False),
        case("TestHasNegativeValue", "Negative value", {"memory": -100}, True),
    ],
)
def test_has_negative_value(values: Res, negative: bool) -> None:
    assert Resource(values).has_negative() is negative


@pytest.mark.parametrize(
    ("values", "empty"),
    [
        case("TestIsEmpty", "Empty resource", {}, True),
        case("TestIsEmpty", "Positive value", {"memory": 100}, False),
        case("TestIsEmpty", "Negative value", {"memory": -100}, False),
    ],
)
def test_is_empty(values: Res, empty: bool) -> None:
    assert (len(Resource(values)) == 0) is empty
