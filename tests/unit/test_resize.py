"""An allocation resized in place (Kubernetes' in-place pod resize): the RM sends a running allocation
again, on its node, at its new size; the core takes it, as YuniKorn does, and every holder of the old
size follows: the node, the application, each queue up to root, the user's and group's usage."""

from __future__ import annotations

from core.objects.allocation import Allocation
from core.resources import Resource
from core.scheduler.commands import UpdateAllocations
from tests.limits_config import limits_config
from tests.unit.domain_helpers import Cluster

CONFIG = limits_config(
    leaf_limits="""
- limit: one user
  users: [alice]
  maxresources: {memory: 100}
""",
    leaf_extra="resources: {max: {memory: 120}}",
)


def _running(c: Cluster, key: str, memory: int) -> None:
    c.ask("app", key, {"memory": memory})
    c.schedule()
    c.ctx.drain_results()


def _cluster() -> Cluster:
    c = Cluster(CONFIG)
    c.node("n1", {"memory": 1000})
    c.app("app", "root.parent.a", user="alice")
    return c


def test_a_grown_allocation_is_counted_everywhere_even_past_the_queues_max() -> None:
    c = _cluster()
    _running(c, "web", 60)
    c.ask("app", "web", {"memory": 150}, node_id="n1")  # the kubelet resized it: it runs at 150 now
    assert not [r for b in c.ctx.drain_results() for r in b.rejected_allocations]
    part = c.partition
    assert part.applications["app"].allocations["web"].resource == Resource({"memory": 150})
    assert part.nodes["n1"].allocated == Resource({"memory": 150})
    assert part.nodes["n1"].available == Resource({"memory": 850})
    for queue in ("root.parent.a", "root.parent", "root"):
        assert part.queues[queue].allocated == Resource({"memory": 150}), queue
    assert part.applications["app"].allocated == Resource({"memory": 150})
    # Over the queue's max (120) and the user's limit (100): nothing new is placed there.
    c.ask("app", "more", {"memory": 1})
    c.schedule()
    assert "more" in part.applications["app"].asks


def test_a_shrunk_allocation_gives_its_room_back_to_the_user_and_the_queue() -> None:
    c = _cluster()
    _running(c, "web", 90)
    c.ask("app", "next", {"memory": 20})
    c.schedule()
    assert "next" in c.partition.applications["app"].asks  # alice's 90 + 20 is over her 100
    c.ask("app", "web", {"memory": 50}, node_id="n1")
    c.schedule()
    assert "next" in c.partition.applications["app"].allocations  # 50 + 20 fits now
    assert c.partition.queues["root.parent.a"].allocated == Resource({"memory": 70})


def test_a_foreign_allocation_resized_changes_only_its_nodes_room() -> None:
    c = _cluster()
    stranger = Allocation("dns", "", c.pname(), Resource({"memory": 40}), node_id="n1", foreign=True)
    c.ctx.apply(UpdateAllocations(c.rm_id, allocations=(stranger,)))
    grown = Allocation("dns", "", c.pname(), Resource({"memory": 400}), node_id="n1", foreign=True)
    c.ctx.apply(UpdateAllocations(c.rm_id, allocations=(grown,)))
    part = c.partition
    assert part.nodes["n1"].occupied == Resource({"memory": 400})
    assert part.nodes["n1"].available == Resource({"memory": 600})
    assert part.root.allocated == Resource()
    assert part.root.max == Resource({"memory": 600})  # root's max is the room not taken by strangers


def test_an_allocation_sent_again_on_another_node_is_refused_and_the_same_size_changes_nothing() -> None:
    c = _cluster()
    c.node("n2", {"memory": 1000})
    _running(c, "web", 60)
    node = c.partition.applications["app"].allocations["web"].node_id
    other = "n2" if node == "n1" else "n1"
    c.ask("app", "web", {"memory": 80}, node_id=other)
    (rejected,) = [r for b in c.ctx.drain_results() for r in b.rejected_allocations]
    assert f"runs on node {node}, not on {other}" in rejected.reason
    c.ask("app", "web", {"memory": 60}, node_id=node)  # a resend at the same size: nothing to do
    batches = c.ctx.drain_results()
    assert not [r for b in batches for r in b.rejected_allocations]
    assert not [a for b in batches for a in b.new_allocations]
    assert c.partition.queues["root.parent.a"].allocated == Resource({"memory": 60})


def test_a_placeholder_is_not_resized_its_size_is_its_task_groups() -> None:
    c = _cluster()
    placeholder = Allocation("ph", "app", c.pname(), Resource({"memory": 10}), node_id="n1",
                             task_group="workers", placeholder=True)  # fmt: skip
    c.ctx.apply(UpdateAllocations(c.rm_id, allocations=(placeholder,)))
    c.ctx.drain_results()
    grown = Allocation("ph", "app", c.pname(), Resource({"memory": 40}), node_id="n1",
                       task_group="workers", placeholder=True)  # fmt: skip
    c.ctx.apply(UpdateAllocations(c.rm_id, allocations=(grown,)))
    (rejected,) = [r for b in c.ctx.drain_results() for r in b.rejected_allocations]
    assert "is a placeholder" in rejected.reason
    assert c.partition.queues["root.parent.a"].allocated == Resource({"memory": 10})
