"""Queue, application and node order: the policies alone, then what a cluster makes of them."""

from __future__ import annotations

import pytest

from core.config.properties import SORT_FAIR, QueueProperties
from core.objects.allocation import Allocation
from core.objects.application import Application
from core.objects.node import Node
from core.objects.partition_key import PartitionKey
from core.objects.queue import Queue, QueueState
from core.policies.node_sort import BINPACKING, FAIR, NodeIndex
from core.policies.queue_sort import fair_max, queue_share, sorted_applications, sorted_children
from core.resources import Resource
from core.scheduler.commands import UpdateAllocations
from tests.unit.domain_helpers import Cluster

PART = PartitionKey("rm", "default")

# Helpers ------------------------------------------------------------------------------------------


def _tree(cluster: dict[str, int]) -> Queue:
    root = Queue("root", None, is_leaf=False)
    root.max = Resource(cluster)
    return root


def _leaf(parent: Queue, name: str, guaranteed: dict[str, int] | None = None) -> Queue:
    leaf = Queue(name, parent, is_leaf=True)
    leaf.guaranteed = Resource(guaranteed) if guaranteed is not None else None
    return leaf


def _use(
    queue: Queue, allocated: dict[str, int] | None = None, pending: dict[str, int] | None = None
) -> None:
    if allocated:
        queue.add_allocated(Resource(allocated))
    if pending:
        queue.add_pending(Resource(pending))


def _names(queues: list[Queue]) -> list[str]:
    return [q.name for q in queues]


def _app(queue: Queue, app_id: str, allocated: dict[str, int], submitted: float = 0.0) -> Application:
    app = Application(app_id, PART, queue, now=submitted)
    app.add_ask(Allocation(f"{app_id}-ask", app_id, PART, Resource({"memory": 1}), create_time=submitted))
    app.allocated = Resource(allocated)
    queue.applications[app_id] = app
    return app


def _node(node_id: str, capacity: dict[str, int], used: dict[str, int] | None = None) -> Node:
    node = Node(node_id, Resource(capacity))
    if used:
        node.add_allocation(Allocation(f"{node_id}-used", "app", PART, Resource(used)))
    return node


def _fill(node: Node, used: dict[str, int]) -> None:
    node.add_allocation(Allocation(f"{node.node_id}-{len(node.allocations)}", "app", PART, Resource(used)))


def _order(index: NodeIndex) -> list[str]:
    return [n.node_id for n in index]


# Queue fair order ---------------------------------------------------------------------------------


def test_queue_share_is_usage_against_guaranteed() -> None:
    root = _tree({"memory": 1000, "vcore": 1000})
    a = _leaf(root, "a", {"memory": 100})
    b = _leaf(root, "b", {"memory": 400})
    _use(a, {"memory": 50}, {"memory": 10})
    _use(b, {"memory": 100}, {"memory": 10})
    assert queue_share(a) == 0.5
    assert queue_share(b) == 0.25
    # b uses twice what a does, but against its guarantee it is further from its share: b first.
    assert _names(sorted_children(root)) == ["b", "a"]


def test_queue_share_takes_the_largest_type() -> None:
    root = _tree({"memory": 1000, "vcore": 1000})
    a = _leaf(root, "a", {"memory": 100, "vcore": 10})
    _use(a, {"memory": 10, "vcore": 8})
    assert queue_share(a) == 0.8


def test_types_without_a_guarantee_count_against_the_fair_max() -> None:
    root = _tree({"memory": 1000, "vcore": 100})
    a = _leaf(root, "a", {"memory": 1000})  # guarantees memory only
    b = _leaf(root, "b", {"memory": 1000})
    _use(a, {"memory": 100, "vcore": 50}, {"memory": 1})  # vcore 50 of the cluster's 100
    _use(b, {"memory": 300, "vcore": 10}, {"memory": 1})
    assert queue_share(a) == 0.5
    assert queue_share(b) == 0.3
    assert _names(sorted_children(root)) == ["b", "a"]


def test_fair_max_is_root_max_overlaid_down_the_path_child_wins() -> None:
    root = _tree({"memory": 1000, "vcore": 100, "gpu": 8})
    parent = Queue("parent", root, is_leaf=False)
    parent.max = Resource({"memory": 200, "vcore": 50})
    leaf = _leaf(parent, "leaf")
    leaf.max = Resource({"memory": 400})  # larger than the parent's: the child's value still wins
    assert fair_max(leaf) == {"memory": 400, "vcore": 50, "gpu": 8}
    assert fair_max(parent) == {"memory": 200, "vcore": 50, "gpu": 8}
    assert fair_max(root) == {"memory": 1000, "vcore": 100, "gpu": 8}
    _use(leaf, {"memory": 100, "vcore": 10, "gpu": 2})
    assert queue_share(leaf) == 0.25  # max of 100/400, 10/50, 2/8
    assert queue_share(parent) == 0.5  # 100/200 against its own fair max


def test_a_type_neither_guaranteed_nor_limited_is_ignored() -> None:
    root = _tree({"memory": 1000})
    a = _leaf(root, "a")
    _use(a, {"memory": 100, "licenses": 7})
    assert queue_share(a) == 0.1


def test_a_zero_guarantee_counts_as_a_full_share_once_used() -> None:
    root = _tree({"memory": 1000})
    a = _leaf(root, "a", {"memory": 0})
    assert queue_share(a) == 0.0
    _use(a, {"memory": 1})
    assert queue_share(a) == 1.0


def test_equal_shares_put_more_pending_first() -> None:
    root = _tree({"memory": 1000, "vcore": 1000})
    little = _leaf(root, "a-little")
    lots = _leaf(root, "b-lots")
    _use(little, pending={"memory": 10})
    _use(lots, pending={"memory": 500})
    assert _names(sorted_children(root)) == ["b-lots", "a-little"]


def test_equal_shares_put_more_pending_first_even_under_a_smaller_max() -> None:
    # YuniKorn compares the pending quantities themselves (l.pending - r.pending > 0), so a queue's
    # own max does not weigh its pending: 100 pending beats 60 pending whatever the limits.
    root = _tree({"memory": 1000})
    capped = _leaf(root, "a-capped")
    capped.max = Resource({"memory": 100})
    open_ = _leaf(root, "b-open")
    _use(capped, pending={"memory": 60})
    _use(open_, pending={"memory": 100})
    assert _names(sorted_children(root)) == ["b-open", "a-capped"]


def test_stopped_queues_and_queues_without_pending_are_skipped() -> None:
    root = _tree({"memory": 1000})
    busy = _leaf(root, "busy")
    idle = _leaf(root, "idle")
    stopped = _leaf(root, "stopped")
    _use(busy, pending={"memory": 10})
    _use(idle, allocated={"memory": 10})
    _use(stopped, pending={"memory": 10})
    stopped.state = QueueState.STOPPED
    assert _names(sorted_children(root)) == ["busy"]
    assert idle.allocated.get("memory") == 10


def test_parents_are_ordered_by_their_own_share() -> None:
    root = _tree({"memory": 1000})
    left = Queue("left", root, is_leaf=False)
    left.guaranteed = Resource({"memory": 100})
    right = Queue("right", root, is_leaf=False)
    right.guaranteed = Resource({"memory": 100})
    _use(_leaf(left, "x"), {"memory": 80}, {"memory": 10})
    _use(_leaf(right, "y"), {"memory": 20}, {"memory": 10})
    assert _names(sorted_children(root)) == ["right", "left"]


# Queue fair order end to end --------------------------------------------------------------------

TWO_QUEUES = """
partitions:
  - name: default
    queues:
      - name: root
        submitacl: "*"
        queues:
          - name: a
            resources: {{guaranteed: {{memory: {a}}}}}
          - name: b
            resources: {{guaranteed: {{memory: {b}}}}}
"""


def _fill_two_queues(guaranteed_a: int, guaranteed_b: int, ask_memory: int, fits: int) -> tuple[int, int]:
    c = Cluster(TWO_QUEUES.format(a=guaranteed_a, b=guaranteed_b))
    c.node("n1", {"memory": ask_memory * fits, "vcore": 100})
    c.app("app-a", "root.a")
    c.app("app-b", "root.b")
    for i in range(fits * 2):
        c.ask("app-a", f"a{i:03d}", {"memory": ask_memory})
        c.ask("app-b", f"b{i:03d}", {"memory": ask_memory})
    assert c.schedule() == fits
    a = c.partition.find_queue("root.a")
    b = c.partition.find_queue("root.b")
    assert a is not None and b is not None
    return a.allocated.get("memory") // ask_memory, b.allocated.get("memory") // ask_memory


def test_two_queues_with_equal_guarantees_split_the_cluster_evenly() -> None:
    in_a, in_b = _fill_two_queues(50, 50, ask_memory=10, fits=20)
    assert in_a + in_b == 20
    assert abs(in_a - 10) <= 1 and abs(in_b - 10) <= 1


def test_guarantees_of_one_to_three_split_the_cluster_one_to_three() -> None:
    in_a, in_b = _fill_two_queues(25, 75, ask_memory=5, fits=40)
    assert in_a + in_b == 40
    assert abs(in_a - 10) <= 1 and abs(in_b - 30) <= 1


def test_what_the_queues_could_not_get_stays_pending() -> None:
    c = Cluster(TWO_QUEUES.format(a=50, b=50))
    c.node("n1", {"memory": 100, "vcore": 100})
    c.app("app-a", "root.a")
    c.app("app-b", "root.b")
    for i in range(10):
        c.ask("app-a", f"a{i}", {"memory": 10})
        c.ask("app-b", f"b{i}", {"memory": 10})
    c.schedule()
    a = c.partition.find_queue("root.a")
    b = c.partition.find_queue("root.b")
    assert a is not None and b is not None
    assert a.allocated.get("memory") + a.pending.get("memory") == 100
    assert b.allocated.get("memory") + b.pending.get("memory") == 100
    assert c.partition.root.pending.get("memory") == 100


# Application order --------------------------------------------------------------------------------

FAIR_LEAF = """
partitions:
  - name: default
    queues:
      - name: root
        submitacl: "*"
        queues:
          - name: shared
            properties:
              application.sort.policy: fair
          - name: queue
"""


def test_two_apps_in_a_fair_leaf_share_evenly() -> None:
    c = Cluster(FAIR_LEAF)
    c.node("n1", {"memory": 100, "vcore": 100})
    c.app("first", "root.shared")
    c.clock.advance(1)
    c.app("second", "root.shared")
    for i in range(20):
        c.ask("first", f"f{i:02d}", {"memory": 10})
        c.ask("second", f"s{i:02d}", {"memory": 10})
    assert c.schedule() == 10
    first = c.partition.applications["first"]
    second = c.partition.applications["second"]
    assert first.allocated.get("memory") == 50
    assert second.allocated.get("memory") == 50
    assert len(first.asks) == 15 and len(second.asks) == 15


def test_the_older_app_in_a_fifo_leaf_gets_everything_first() -> None:
    c = Cluster(FAIR_LEAF)
    c.node("n1", {"memory": 100, "vcore": 100})
    c.app("older", "root.queue")
    c.clock.advance(1)
    c.app("newer", "root.queue")
    for i in range(20):
        c.ask("newer", f"n{i:02d}", {"memory": 10})
        c.ask("older", f"o{i:02d}", {"memory": 10})
    assert c.schedule() == 10
    assert c.partition.applications["older"].allocated.get("memory") == 100
    assert c.partition.applications["newer"].allocated.is_zero()
    assert len(c.partition.applications["newer"].asks) == 20


def test_fifo_follows_the_task_creation_time_not_the_order_apps_arrived() -> None:
    # An ask created before its application reached the core (creationTime tag) makes the app older.
    c = Cluster(FAIR_LEAF)
    c.node("n1", {"memory": 100, "vcore": 100})
    c.app("arrived-first", "root.queue")
    c.clock.advance(5)
    c.app("created-first", "root.queue")
    asks = []
    for i in range(10):
        asks.append(Allocation(f"a{i}", "arrived-first", c.pname(), Resource({"memory": 10})))
        asks.append(
            Allocation(f"c{i}", "created-first", c.pname(), Resource({"memory": 10}), create_time=500.0)
        )
    c.ctx.apply(UpdateAllocations(c.rm_id, allocations=tuple(asks)))
    assert c.partition.applications["created-first"].submission_time == 500.0
    c.schedule()
    assert c.partition.applications["created-first"].allocated.get("memory") == 100
    assert c.partition.applications["arrived-first"].allocated.is_zero()


def test_fair_app_order_uses_the_leafs_guarantee() -> None:
    root = _tree({"memory": 1000, "vcore": 1000})
    leaf = _leaf(root, "leaf", {"memory": 100, "vcore": 2})
    leaf.props = QueueProperties(sort_policy=SORT_FAIR)
    _app(leaf, "a", {"memory": 60, "vcore": 1})  # shares 0.6, 0.5
    _app(leaf, "b", {"memory": 10, "vcore": 2})  # shares 0.1, 1.0: dominant 1.0
    assert [a.app_id for a in sorted_applications(leaf)] == ["a", "b"]


def test_fair_app_order_without_a_guarantee_uses_raw_quantities() -> None:
    root = _tree({"memory": 1000, "vcore": 1000})
    leaf = _leaf(root, "leaf")
    leaf.props = QueueProperties(sort_policy=SORT_FAIR)
    _app(leaf, "a", {"memory": 60, "vcore": 1})  # dominant 60
    _app(leaf, "b", {"memory": 10, "vcore": 2})  # dominant 10
    assert [a.app_id for a in sorted_applications(leaf)] == ["b", "a"]


def test_fair_app_order_mixes_guaranteed_shares_and_raw_quantities() -> None:
    root = _tree({"memory": 1000, "vcore": 1000})
    leaf = _leaf(root, "leaf", {"memory": 100})
    leaf.props = QueueProperties(sort_policy=SORT_FAIR)
    _app(leaf, "a", {"memory": 50, "vcore": 1})  # 0.5 and a raw 1.0 for vcore
    _app(leaf, "b", {"memory": 90})  # 0.9
    assert [a.app_id for a in sorted_applications(leaf)] == ["b", "a"]


def test_fair_app_order_compares_the_next_share_on_a_tie() -> None:
    root = _tree({"memory": 1000, "vcore": 1000})
    leaf = _leaf(root, "leaf", {"memory": 100, "vcore": 100})
    leaf.props = QueueProperties(sort_policy=SORT_FAIR)
    _app(leaf, "a", {"memory": 50, "vcore": 40})
    _app(leaf, "b", {"memory": 50, "vcore": 10})
    _app(leaf, "c", {"memory": 50})
    assert [a.app_id for a in sorted_applications(leaf)] == ["c", "b", "a"]


def test_fifo_app_order_is_submission_time_and_skips_apps_without_asks() -> None:
    root = _tree({"memory": 1000})
    leaf = _leaf(root, "leaf")
    _app(leaf, "late", {"memory": 0}, submitted=30.0)
    _app(leaf, "early", {"memory": 500}, submitted=10.0)
    idle = Application("idle", PART, leaf, now=0.0)
    leaf.applications["idle"] = idle
    assert [a.app_id for a in sorted_applications(leaf)] == ["early", "late"]


# Node order -------------------------------------------------------------------------------------


def test_fair_puts_the_least_used_node_first_and_binpacking_the_most_used() -> None:
    nodes = [
        _node("n1", {"memory": 100, "vcore": 100}, {"memory": 50, "vcore": 50}),
        _node("n2", {"memory": 100, "vcore": 100}, {"memory": 10, "vcore": 10}),
        _node("n3", {"memory": 100, "vcore": 100}, {"memory": 90, "vcore": 90}),
    ]
    fair = NodeIndex(FAIR)
    packing = NodeIndex(BINPACKING)
    for node in nodes:
        fair.add(node)
        packing.add(node)
    assert _order(fair) == ["n2", "n1", "n3"]
    assert _order(packing) == ["n3", "n1", "n2"]


def test_usage_is_relative_to_each_nodes_capacity() -> None:
    index = NodeIndex(FAIR)
    index.add(_node("big", {"memory": 1000, "vcore": 1000}, {"memory": 100, "vcore": 100}))  # 10%
    index.add(_node("small", {"memory": 100, "vcore": 100}, {"memory": 50, "vcore": 50}))  # 50%
    assert _order(index) == ["big", "small"]


def test_equal_usage_is_ordered_by_node_id() -> None:
    for policy in (FAIR, BINPACKING):
        index = NodeIndex(policy)
        for node_id in ("c", "a", "b"):
            index.add(_node(node_id, {"memory": 10, "vcore": 10}))
        assert _order(index) == ["a", "b", "c"]


def test_weights_change_the_order() -> None:
    memory_heavy = _node("mem-used", {"memory": 100, "vcore": 100}, {"memory": 60, "vcore": 10})
    vcore_heavy = _node("cpu-used", {"memory": 100, "vcore": 100}, {"memory": 10, "vcore": 40})
    even = NodeIndex(FAIR)
    by_memory = NodeIndex(FAIR, {"memory": 4.0, "vcore": 1.0})
    by_vcore = NodeIndex(FAIR, {"memory": 1.0, "vcore": 4.0})
    for index in (even, by_memory, by_vcore):
        index.add(memory_heavy)
        index.add(vcore_heavy)
    assert _order(even) == ["cpu-used", "mem-used"]  # 0.25 vs 0.35
    assert _order(by_memory) == ["cpu-used", "mem-used"]  # 0.16 vs 0.50
    assert _order(by_vcore) == ["mem-used", "cpu-used"]  # 0.20 vs 0.34


def test_only_weighted_types_count() -> None:
    gpu_full = _node(
        "gpu-full", {"memory": 100, "vcore": 100, "gpu": 4}, {"memory": 20, "vcore": 20, "gpu": 4}
    )
    gpu_free = _node("gpu-free", {"memory": 100, "vcore": 100, "gpu": 4}, {"memory": 30, "vcore": 30})
    default = NodeIndex(FAIR)  # vcore and memory only: the gpu usage is invisible
    gpus = NodeIndex(FAIR, {"gpu": 1.0})
    for index in (default, gpus):
        index.add(gpu_full)
        index.add(gpu_free)
    assert _order(default) == ["gpu-full", "gpu-free"]
    assert _order(gpus) == ["gpu-free", "gpu-full"]
    assert gpu_full.usage_share() == pytest.approx(0.2)
    assert gpu_full.usage_share({"gpu": 1.0}) == 1.0


def test_a_node_without_any_weighted_type_counts_as_empty() -> None:
    node = _node("odd", {"licenses": 10}, {"licenses": 10})
    assert node.usage_share() == 0.0
    assert node.usage_share({"memory": 1.0, "licenses": 0.0}) == 0.0


def test_update_rekeys_a_node_after_its_usage_changed() -> None:
    n1 = _node("n1", {"memory": 100, "vcore": 100})
    n2 = _node("n2", {"memory": 100, "vcore": 100})
    index = NodeIndex(FAIR)
    index.add(n1)
    index.add(n2)
    assert _order(index) == ["n1", "n2"]
    _fill(n1, {"memory": 50, "vcore": 50})
    index.update(n1)
    assert _order(index) == ["n2", "n1"]
    _fill(n2, {"memory": 80, "vcore": 80})
    index.update(n2)
    assert _order(index) == ["n1", "n2"]
    n2.remove_allocation("n2-0")
    index.update(n2)
    assert _order(index) == ["n2", "n1"]
    assert len(index) == 2


def test_update_after_a_capacity_change_and_remove() -> None:
    n1 = _node("n1", {"memory": 100, "vcore": 100}, {"memory": 50, "vcore": 50})
    n2 = _node("n2", {"memory": 100, "vcore": 100}, {"memory": 40, "vcore": 40})
    index = NodeIndex(FAIR)
    index.add(n1)
    index.add(n2)
    assert _order(index) == ["n2", "n1"]
    n1.set_capacity(Resource({"memory": 1000, "vcore": 1000}))  # now 5% used
    index.update(n1)
    assert _order(index) == ["n1", "n2"]
    index.remove("n1")
    assert _order(index) == ["n2"]
    index.update(n1)  # a node no longer indexed is ignored
    assert _order(index) == ["n2"]


def test_set_policy_rebuilds_the_order() -> None:
    index = NodeIndex(FAIR)
    index.add(_node("mem-used", {"memory": 100, "vcore": 100}, {"memory": 60, "vcore": 10}))
    index.add(_node("cpu-used", {"memory": 100, "vcore": 100}, {"memory": 10, "vcore": 40}))
    index.add(_node("empty", {"memory": 100, "vcore": 100}))
    assert _order(index) == ["empty", "cpu-used", "mem-used"]
    index.set_policy(BINPACKING, None)
    assert index.policy == BINPACKING
    assert _order(index) == ["mem-used", "cpu-used", "empty"]
    index.set_policy(BINPACKING, {"vcore": 1.0})
    assert _order(index) == ["cpu-used", "mem-used", "empty"]
    assert len(index) == 3


BINPACKING_CONFIG = """
partitions:
  - name: default
    nodesortpolicy:
      type: binpacking
    queues:
      - name: root
        submitacl: "*"
        queues:
          - name: default
"""

FAIR_CONFIG = BINPACKING_CONFIG.replace("binpacking", "fair")


def _per_node(c: Cluster) -> dict[str, int]:
    return {node_id: len(node.allocations) for node_id, node in c.partition.nodes.items()}


def test_binpacking_fills_one_node_before_the_next() -> None:
    c = Cluster(BINPACKING_CONFIG)
    for node_id in ("n1", "n2", "n3"):
        c.node(node_id, {"memory": 100, "vcore": 100})
    c.app("app-1")
    for i in range(15):
        c.ask("app-1", f"a{i:02d}", {"memory": 10, "vcore": 10})
    assert c.schedule() == 15
    assert _per_node(c) == {"n1": 10, "n2": 5, "n3": 0}


def test_fair_node_sort_spreads_evenly() -> None:
    c = Cluster(FAIR_CONFIG)
    for node_id in ("n1", "n2", "n3"):
        c.node(node_id, {"memory": 100, "vcore": 100})
    c.app("app-1")
    for i in range(15):
        c.ask("app-1", f"a{i:02d}", {"memory": 10, "vcore": 10})
    assert c.schedule() == 15
    assert _per_node(c) == {"n1": 5, "n2": 5, "n3": 5}


def test_binpacking_prefers_the_node_already_in_use() -> None:
    c = Cluster(BINPACKING_CONFIG)
    c.node("n1", {"memory": 100, "vcore": 100})
    c.node("n2", {"memory": 100, "vcore": 100})
    c.app("app-1")
    c.ask("app-1", "running", {"memory": 30, "vcore": 30}, node_id="n2")
    for i in range(3):
        c.ask("app-1", f"a{i}", {"memory": 10, "vcore": 10})
    c.schedule()
    assert _per_node(c) == {"n1": 0, "n2": 4}


def test_configured_weights_reach_the_partition_index() -> None:
    config = FAIR_CONFIG.replace("type: fair", "type: fair\n      resourceweights: {memory: 0, vcore: 1}")
    c = Cluster(config)
    c.node("n1", {"memory": 100, "vcore": 100})
    c.node("n2", {"memory": 100, "vcore": 100})
    c.app("app-1")
    # n1 runs a memory hog, n2 a vcore hog: with memory weighed 0 only vcore usage counts.
    c.ask("app-1", "mem-hog", {"memory": 90, "vcore": 10}, node_id="n1")
    c.ask("app-1", "cpu-hog", {"memory": 1, "vcore": 50}, node_id="n2")
    c.ask("app-1", "new", {"memory": 1, "vcore": 1})
    c.schedule()
    assert "new" in c.partition.nodes["n1"].allocations
    assert [n.node_id for n in c.partition.node_index] == ["n1", "n2"]
