"""How each pending ask waits, as the core tells its RM (si UpdateContainerSchedulingStateRequest):
FAILED when more nodes would help, SKIPPED when its own queue, limits, gang or required node hold it."""

from __future__ import annotations

from core.objects.allocation import Allocation
from core.resources import Resource
from core.scheduler.commands import UpdateAllocations
from core.scheduler.results import Waiting
from si.v1.tags import TAG_REQUIRED_NODE
from tests.limits_config import limits_config
from tests.unit.domain_helpers import Cluster

CONFIG = limits_config(
    leaf_limits="""
- limit: one user
  users: [bob]
  maxresources: {memory: 10}
""",
    leaf_extra="resources: {max: {memory: 50}}",
)


def _states(c: Cluster) -> dict[str, tuple[Waiting, str]]:
    c.schedule()
    return {s.key: (s.waiting, s.reason) for b in c.ctx.drain_results() for s in b.scheduling_states}


def test_each_kind_of_waiting_is_sent_once_when_it_changes() -> None:
    c = Cluster(CONFIG)
    c.node("n1", {"memory": 100})
    c.app("a", "root.parent.a")
    c.app("b", "root.parent.b")
    c.app("bob-app", "root.parent.a", user="bob")
    c.ask("a", "in-max", {"memory": 40})
    c.ask("a", "over-max", {"memory": 20})  # root.parent.a's max is 50
    c.ask("b", "too-big", {"memory": 200})  # over the cluster's capacity: more nodes would help
    c.ask("bob-app", "over-limit", {"memory": 20})  # bob may use 10
    pinned = Allocation("pinned", "b", c.pname(), Resource({"memory": 1}), tags={TAG_REQUIRED_NODE: "n9"})
    c.ctx.apply(UpdateAllocations(c.rm_id, allocations=(pinned,)))
    states = _states(c)
    assert {key: waiting for key, (waiting, _) in states.items()} == {
        "over-max": Waiting.HELD, "too-big": Waiting.NO_NODE, "over-limit": Waiting.HELD,
        "pinned": Waiting.HELD,
    }  # fmt: skip
    assert "over queue root.parent.a's max" in states["over-max"][1]
    _states(c)  # the room left changed once in-max was placed: that reason is sent again
    assert _states(c) == {}  # nothing changed since: nothing sent
    asks = c.partition.applications["b"].asks
    assert asks["too-big"].triggered_scale_up and not asks["pinned"].triggered_scale_up
