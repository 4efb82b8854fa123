"""One item of an RM's request never costs the items beside it: a malformed one is refused with its
reason, and a fault of the core's own while handling one refuses that one alone (and is logged with its
trace). Found by the hostile-object test: a spread constraint whose labelSelector.matchLabels was a
number failed the whole UpdateAllocations, every ask in it."""

from __future__ import annotations

import json

import pytest

from core.objects.allocation import Allocation
from core.resources import Resource
from core.scheduler.commands import UpdateAllocations
from core.scheduler.partition import Partition
from si.v1.tags import TAG_TOPOLOGY_SPREAD
from tests.unit.domain_helpers import Cluster


def _ask(c: Cluster, key: str, tags: dict[str, str] | None = None) -> Allocation:
    return Allocation(key, "app", c.pname(), Resource({"memory": 1}), tags=tags or {})


def _cluster() -> Cluster:
    c = Cluster()
    c.node("n1", {"memory": 100})
    c.app("app", "root.default")
    c.ctx.drain_results()
    return c


@pytest.mark.parametrize(
    "selector",
    [{"matchLabels": 4.5}, {"matchExpressions": "x"},
     {"matchExpressions": [{"key": "a", "values": 5, "operator": "In"}]}],
)  # fmt: skip
def test_a_malformed_placement_tag_refuses_that_ask_only(selector: dict[str, object]) -> None:
    c = _cluster()
    spread = [
        {"maxSkew": 1, "topologyKey": "zone", "whenUnsatisfiable": "DoNotSchedule", "labelSelector": selector}
    ]
    bad = _ask(c, "bad", {TAG_TOPOLOGY_SPREAD: json.dumps(spread)})
    c.ctx.apply(UpdateAllocations(c.rm_id, allocations=(_ask(c, "before"), bad, _ask(c, "after"))))
    c.schedule()
    batches = c.ctx.drain_results()
    (rejected,) = [r for b in batches for r in b.rejected_allocations]
    assert rejected.key == "bad" and TAG_TOPOLOGY_SPREAD in rejected.reason
    assert {a.key for b in batches for a in b.new_allocations} == {"before", "after"}


def test_a_fault_of_the_core_on_one_item_refuses_it_alone(monkeypatch: pytest.MonkeyPatch) -> None:
    c = _cluster()
    add_ask = Partition.add_ask

    def faulty(self: Partition, ask: Allocation, now: float) -> None:
        if ask.key == "unlucky":
            raise KeyError("a defect")
        add_ask(self, ask, now)

    monkeypatch.setattr(Partition, "add_ask", faulty)
    c.ctx.apply(UpdateAllocations(c.rm_id, allocations=(_ask(c, "unlucky"), _ask(c, "fine"))))
    c.schedule()
    batches = c.ctx.drain_results()
    (rejected,) = [r for b in batches for r in b.rejected_allocations]
    assert (
        rejected.key == "unlucky" and "the core failed handling it: KeyError('a defect')" in rejected.reason
    )
    assert [a.key for b in batches for a in b.new_allocations] == ["fine"]
