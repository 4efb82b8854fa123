"""Quota preemption: the preemptable resource calculation (the document's table)."""

from __future__ import annotations

import pytest

from core.resources import Resource
from core.scheduler.partition import quota_plan as quota
from tests.unit.quota_helpers import (
    CPU,
    G,
    M,
)

# 1. Preemptable resource calculation ----------------------------------------------------------

# The document's table for root.a.b: (current max, new max, usage, preemptable). The current max
# plays no part in the calculation; it is kept so that the rows read as in the document.
TABLE = [
    ({M: 100 * G}, {M: 50 * G}, {M: 80 * G}, {M: 30 * G}),
    (None, {M: 50 * G}, {M: 80 * G}, {M: 30 * G}),
    ({M: 100 * G, CPU: 100}, {M: 50 * G, CPU: 50}, {M: 80 * G, CPU: 80}, {M: 30 * G, CPU: 30}),
    ({M: 100 * G, CPU: 100}, {M: 200 * G, CPU: 50}, {M: 100 * G, CPU: 80}, {CPU: 30}),
    ({M: 100 * G}, {M: 100 * G, CPU: 100}, {M: 50 * G, CPU: 500}, {CPU: 400}),
    ({M: 100 * G, CPU: 100}, {M: 50 * G}, {M: 80 * G, CPU: 100}, {M: 30 * G}),
    ({M: 100 * G}, {CPU: 100}, {M: 100 * G, CPU: 500}, {CPU: 400}),
]


@pytest.mark.parametrize(
    ("current_max", "new_max", "usage", "expected"), TABLE, ids=[f"row{i + 1}" for i in range(len(TABLE))]
)
def test_preemptable_resource_table(
    current_max: dict[str, int] | None,
    new_max: dict[str, int],
    usage: dict[str, int],
    expected: dict[str, int],
) -> None:
    result = quota.preemptable(Resource(usage), Resource(new_max))
    # Exactly the types to preempt: no zero or negative entries for the types within the max.
    assert result.as_dict() == expected


def test_no_new_max_means_nothing_to_preempt() -> None:
    assert quota.preemptable(Resource({M: 80 * G, CPU: 500}), None).as_dict() == {}


@pytest.mark.parametrize("usage", [{M: 40 * G, CPU: 10}, {M: 50 * G, CPU: 50}, {}])
def test_usage_within_the_max_means_nothing_to_preempt(usage: dict[str, int]) -> None:
    result = quota.preemptable(Resource(usage), Resource({M: 50 * G, CPU: 50}))
    assert result.as_dict() == {}
    assert result.is_zero()
