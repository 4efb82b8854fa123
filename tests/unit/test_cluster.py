"""The cluster context driven directly: what an RM would see, without the transport."""

from __future__ import annotations

from typing import Any

import pytest

from core.config import load_config
from core.objects.allocation import Allocation
from core.objects.partition_key import PartitionKey
from core.resources import Resource
from core.scheduler import cluster as cluster_module
from core.scheduler.cluster import ClusterContext
from core.scheduler.commands import (
    AppAdd,
    AppRemove,
    NodeAction,
    RegisterRM,
    UnregisterRM,
    UpdateAllocations,
    UpdateApplications,
    UpdateConfig,
)
from core.scheduler.early_asks import HOLD_SECONDS
from core.scheduler.partition import Partition
from core.scheduler.results import ResultBatch, Termination
from tests.unit.domain_helpers import ONE_LEAF, Cluster, FakeClock


def _drain(cluster: Cluster) -> ResultBatch:
    batches = [b for b in cluster.ctx.drain_results() if b.rm_id == cluster.rm_id]
    merged = ResultBatch(cluster.rm_id)
    for b in batches:
        for name in vars(merged):
            if name != "rm_id":
                getattr(merged, name).extend(getattr(b, name))
    return merged


def test_asks_are_placed_on_nodes_with_room_and_never_overfill() -> None:
    c = Cluster()
    c.node("n1", {"memory": 10, "vcore": 10})
    c.node("n2", {"memory": 10, "vcore": 10})
    c.app("app-1")
    for i in range(6):
        c.ask("app-1", f"a{i}", {"memory": 4, "vcore": 1})
    c.schedule()
    out = _drain(c)
    assert out.accepted_nodes == ["n1", "n2"]
    assert out.accepted_apps == ["app-1"]
    placed = {a.key: a.node_id for a in out.new_allocations}
    assert len(placed) == 4  # two 4-memory asks per 10-memory node
    assert sorted(placed.values()) == ["n1", "n1", "n2", "n2"]
    for node in c.partition.nodes.values():
        assert node.allocated.get("memory") <= node.capacity.get("memory")
    assert c.partition.root.pending.get("memory") == 8


def test_fair_node_sort_spreads_asks() -> None:
    c = Cluster()
    for n in ("n1", "n2", "n3"):
        c.node(n, {"memory": 30, "vcore": 30})
    c.app("app-1")
    for i in range(3):
        c.ask("app-1", f"a{i}", {"memory": 5, "vcore": 1})
    c.schedule()
    nodes = sorted(a.node_id for a in _drain(c).new_allocations)
    assert nodes == ["n1", "n2", "n3"]


def test_release_gives_room_back_to_pending_asks() -> None:
    c = Cluster()
    c.node("n1", {"memory": 10, "vcore": 10})
    c.app("app-1")
    c.ask("app-1", "a", {"memory": 10})
    c.ask("app-1", "b", {"memory": 10})
    c.schedule()
    first = _drain(c).new_allocations
    assert [a.key for a in first] == ["a"]
    c.release("app-1", "a")
    c.schedule()
    out = _drain(c)
    assert [(r.key, r.termination) for r in out.released] == [("a", Termination.STOPPED_BY_RM)]
    assert [a.key for a in out.new_allocations] == ["b"]
    assert c.partition.root.allocated.get("memory") == 10


def test_queue_max_caps_allocation_and_the_rest_stays_pending() -> None:
    c = Cluster()
    c.node("n1", {"memory": 1000, "vcore": 1000})
    c.app("app-1")
    for i in range(30):
        c.ask("app-1", f"a{i:02d}", {"memory": 10, "vcore": 1})
    c.schedule()
    out = _drain(c)
    assert len(out.new_allocations) == 10  # root.default max memory 100
    leaf = c.partition.find_queue("root.default")
    assert leaf is not None
    assert leaf.allocated.get("memory") == 100
    assert leaf.pending.get("memory") == 200


def test_decommission_releases_the_nodes_allocations() -> None:
    c = Cluster()
    c.node("n1", {"memory": 10, "vcore": 10})
    c.node("n2", {"memory": 10, "vcore": 10})
    c.app("app-1")
    for i in range(4):
        c.ask("app-1", f"a{i}", {"memory": 5})
    c.schedule()
    placed = {a.key: a.node_id for a in _drain(c).new_allocations}
    c.node_action("n1", NodeAction.DECOMMISSION)
    out = _drain(c)
    on_n1 = sorted(k for k, n in placed.items() if n == "n1")
    assert sorted(r.key for r in out.released) == on_n1
    assert all(r.message == "Node n1 Removed" for r in out.released)
    assert "n1" not in c.partition.nodes
    assert c.partition.root.allocated.get("memory") == 10
    assert c.partition.total_capacity.get("memory") == 10


def test_draining_node_takes_no_new_asks_until_schedulable_again() -> None:
    c = Cluster()
    c.node("n1", {"memory": 10})
    c.node_action("n1", NodeAction.DRAIN)
    c.app("app-1")
    c.ask("app-1", "a", {"memory": 1})
    c.schedule()
    assert _drain(c).new_allocations == []
    c.node_action("n1", NodeAction.DRAIN_TO_SCHEDULABLE)
    c.schedule()
    assert [a.node_id for a in _drain(c).new_allocations] == ["n1"]


def test_create_drain_then_schedulable() -> None:
    c = Cluster()
    c.node("n1", {"memory": 10}, action=NodeAction.CREATE_DRAIN)
    c.app("app-1")
    c.ask("app-1", "a", {"memory": 1})
    c.schedule()
    assert _drain(c).new_allocations == []
    c.node_action("n1", NodeAction.DRAIN_TO_SCHEDULABLE)
    c.schedule()
    assert len(_drain(c).new_allocations) == 1


def test_node_update_changes_capacity_and_root_max() -> None:
    c = Cluster()
    c.node("n1", {"memory": 10})
    c.node_action("n1", NodeAction.UPDATE, {"memory": 50})
    _drain(c)
    assert c.partition.root.max is not None and c.partition.root.max.get("memory") == 50


NO_DEFAULT_QUEUE = """
partitions:
  - name: default
    queues:
      - name: root
        submitacl: "*"
        queues:
          - name: work
"""


def test_bad_items_are_rejected_with_reasons_and_good_ones_still_work() -> None:
    c = Cluster(NO_DEFAULT_QUEUE)
    c.node("n1", {"memory": 10})
    c.node("n1", {"memory": 10})  # duplicate node
    c.node_action("ghost", NodeAction.UPDATE, {"memory": 1})  # unknown node
    c.node_action("n1", NodeAction.DRAIN_TO_SCHEDULABLE)  # not draining
    c.app("app-1", queue="root.work")
    c.app("app-1", queue="root.work")  # duplicate application
    c.app("app-2", queue="root.nope")  # unknown queue
    c.app("app-3", queue="root")  # parent queue
    c.ask("ghost-app", "x", {"memory": 1})  # unknown application
    c.ask("app-1", "a", {"memory": 1})
    c.ask("app-1", "a", {"memory": 1})  # duplicate key
    c.ask("app-1", "b", {"memory": 1}, node_id="ghost")  # existing allocation on an unknown node
    c.release("app-1", "no-such-key")
    c.schedule()
    c.clock.advance(HOLD_SECONDS)  # the unknown application's ask is held that long for it
    c.ctx.tick()
    out = _drain(c)
    node_reasons = [r.reason for r in out.rejected_nodes]
    assert any("already registered" in r for r in node_reasons)
    assert any("ghost is not registered" in r for r in node_reasons)
    assert any("not draining" in r for r in node_reasons)
    app_reasons = {r.app_id: r.reason for r in out.rejected_apps}
    assert "already exists" in app_reasons["app-1"]
    assert "root.nope does not exist" in app_reasons["app-2"]
    assert "parent queue" in app_reasons["app-3"]
    alloc_reasons = [(r.key, r.reason) for r in out.rejected_allocations]
    assert any(k == "x" and "not known" in r for k, r in alloc_reasons)
    assert any(k == "a" and "already exists" in r for k, r in alloc_reasons)
    assert any(k == "b" and "ghost is not registered" in r for k, r in alloc_reasons)
    assert any(k == "no-such-key" and "no ask or allocation" in r for k, r in alloc_reasons)
    assert [a.key for a in out.new_allocations] == ["a"]


def test_unknown_partition_is_rejected() -> None:
    c = Cluster()
    c.ctx.apply(UpdateApplications(c.rm_id, adds=(AppAdd("app-1", c.pname("gpu"), "root.default"),)))
    out = _drain(c)
    assert "partition gpu does not exist" in out.rejected_apps[0].reason


def test_application_states_follow_yunikorn() -> None:
    c = Cluster()
    c.node("n1", {"memory": 10})
    c.app("app-1")
    c.ask("app-1", "a", {"memory": 1})
    c.schedule()
    c.release("app-1", "a")
    states = [u.state for u in _drain(c).updated_apps if u.app_id == "app-1"]
    assert states == ["Accepted", "Running", "Completing"]


def test_existing_allocation_is_counted_and_confirmed() -> None:
    c = Cluster()
    c.node("n1", {"memory": 10})
    c.app("app-1")
    c.ask("app-1", "running", {"memory": 6}, node_id="n1")
    c.ask("app-1", "too-big", {"memory": 6}, node_id="n1")
    out = _drain(c)
    assert [a.key for a in out.new_allocations] == ["running"]
    assert "has only" in out.rejected_allocations[0].reason
    assert c.partition.nodes["n1"].available.get("memory") == 4


def test_remove_application_releases_everything() -> None:
    c = Cluster()
    c.node("n1", {"memory": 10})
    c.app("app-1")
    c.ask("app-1", "a", {"memory": 5})
    c.ask("app-1", "b", {"memory": 50})
    c.schedule()
    _drain(c)
    c.ctx.apply(UpdateApplications(c.rm_id, removes=(AppRemove("app-1", c.pname()),)))
    out = _drain(c)
    assert [(r.key, r.message) for r in out.released] == [("a", "Application app-1 Removed")]
    assert c.partition.root.pending.is_zero()
    assert c.partition.root.allocated.is_zero()


def test_asks_are_served_by_priority_then_age() -> None:
    c = Cluster()
    c.node("n1", {"memory": 2})
    c.app("app-1")
    c.ask("app-1", "old-low", {"memory": 1}, priority=0)
    c.clock.advance(1)
    c.ask("app-1", "new-high", {"memory": 1}, priority=10)
    c.clock.advance(1)
    c.ask("app-1", "newer-low", {"memory": 1}, priority=0)
    c.schedule()
    assert [a.key for a in _drain(c).new_allocations] == ["new-high", "old-low"]


def test_two_rms_share_a_core_without_seeing_each_other() -> None:
    ctx = ClusterContext(FakeClock())
    a = Cluster(rm_id="rm-a", ctx=ctx)
    b = Cluster(rm_id="rm-b", ctx=ctx)
    a.node("n1", {"memory": 10})
    b.node("n1", {"memory": 10})  # same node ID, other RM: a different node
    a.app("app")
    b.app("app")
    a.ask("app", "k", {"memory": 10})
    b.ask("app", "k", {"memory": 10})
    ctx.schedule(100)
    batches = {x.rm_id: x for x in ctx.drain_results()}
    assert [x.key for x in batches["rm-a"].new_allocations] == ["k"]
    assert [x.key for x in batches["rm-b"].new_allocations] == ["k"]
    # rm-b releasing its app touches nothing of rm-a's.
    b.release("app")
    ctx.drain_results()
    assert a.partition.nodes["n1"].allocated.get("memory") == 10
    assert b.partition.nodes["n1"].allocated.get("memory") == 0


def test_reregistration_replaces_everything_the_rm_had() -> None:
    c = Cluster()
    c.node("n1", {"memory": 10})
    c.app("app-1")
    c.ask("app-1", "a", {"memory": 5})
    c.schedule()
    c.ctx.apply(RegisterRM(c.rm_id, load_config("").config))
    assert c.partition.nodes == {}
    assert c.partition.applications == {}
    assert c.partition.find_queue("root.default") is not None


def test_every_drop_of_an_rms_state_is_announced_after_the_state_went() -> None:
    """So that the daemon gives memory back each time: an RM leaving, an RM registering again, the
    last RM leaving; a first registration drops nothing and is not announced."""
    ctx = ClusterContext(FakeClock())
    dropped: list[tuple[str, int]] = []
    ctx.on_state_dropped = lambda reason: dropped.append((reason, len(ctx.partitions)))
    for rm_id in ("rm-a", "rm-b"):
        ctx.apply(RegisterRM(rm_id, load_config("").config))
    assert dropped == []
    ctx.apply(RegisterRM("rm-a", load_config("").config))
    ctx.apply(UnregisterRM("rm-a"))
    ctx.apply(UnregisterRM("rm-b"))
    assert dropped == [
        ("resource manager registered again", 2),
        ("resource manager removed", 1),  # rm-b is still served
        ("no resource manager left", 0),
    ]


TWO_PARTITIONS = """
partitions:
  - name: default
    queues:
      - name: root
        submitacl: "*"
        queues:
          - name: default
  - name: gpu
    queues:
      - name: root
        submitacl: "*"
"""


def test_reload_adds_a_partition_and_drains_a_removed_one() -> None:
    c = Cluster()
    c.ctx.apply(UpdateConfig(c.rm_id, load_config(TWO_PARTITIONS).config))
    gpu = c.ctx.partitions[c.pname("gpu")]
    assert gpu.find_queue("root") is not None
    c.app("app-1")
    c.ctx.apply(UpdateConfig(c.rm_id, load_config(ONE_LEAF.replace("default", "other", 1)).config))
    c.ctx.apply(UpdateApplications(c.rm_id, adds=(AppAdd("app-2", c.pname(), "root.default"),)))
    out = _drain(c)
    assert out.accepted_apps == ["app-1"]
    assert "removed from the configuration" in out.rejected_apps[0].reason
    assert "app-1" in c.partition.applications  # what was there keeps running


def test_an_update_that_cannot_be_built_everywhere_changes_nothing(monkeypatch: pytest.MonkeyPatch) -> None:
    # The configuration checks refuse what cannot be built; should one slip through, the update must
    # still leave every partition, and /ws/v1/config's text, as they were (all or nothing).
    c = Cluster()
    before = c.ctx.configs[c.rm_id]
    real = Partition

    def partition(key: PartitionKey, *args: Any) -> Partition:
        if key.name == "gpu":
            raise ValueError("cannot build gpu")
        return real(key, *args)

    monkeypatch.setattr(cluster_module, "Partition", partition)
    changed = TWO_PARTITIONS.replace(
        "          - name: default", "          - name: default\n          - name: extra"
    )
    errors: list[Exception | None] = []
    with pytest.raises(ValueError, match="cannot build gpu"):
        c.ctx.apply(UpdateConfig(c.rm_id, load_config(changed).config, errors.append))
    assert c.ctx.configs[c.rm_id] is before
    assert c.partition.find_queue("root.extra") is None  # the default partition was not reloaded
    assert c.pname("gpu") not in c.ctx.partitions


def test_roots_max_is_the_cluster_less_what_other_schedulers_occupy() -> None:
    c = Cluster()
    c.node("n1", {"memory": 10})
    foreign = Allocation("dns", "", c.pname(), Resource({"memory": 4}), node_id="n1", foreign=True)
    c.ctx.apply(UpdateAllocations(c.rm_id, allocations=(foreign,)))
    assert c.partition.root.max == {"memory": 6}
    c.release("", "dns")
    assert c.partition.root.max == {"memory": 10}


def test_a_foreign_allocation_with_the_key_of_one_of_ours_is_refused_and_changes_nothing() -> None:
    c = Cluster()
    c.node("n1", {"memory": 10})
    c.app("app-1")
    c.ask("app-1", "web-1", {"memory": 4})
    c.schedule()
    _drain(c)
    stranger = Allocation("web-1", "", c.pname(), Resource({"memory": 4}), node_id="n1", foreign=True)
    c.ctx.apply(UpdateAllocations(c.rm_id, allocations=(stranger,)))
    out = _drain(c)
    assert [r.key for r in out.rejected_allocations] == ["web-1"]
    assert "already allocated on node n1" in out.rejected_allocations[0].reason
    node = c.partition.nodes["n1"]
    assert node.allocations["web-1"].application_id == "app-1" and node.occupied.is_zero()
    c.release("app-1", "web-1")
    assert node.allocated.is_zero() and not node.allocations
