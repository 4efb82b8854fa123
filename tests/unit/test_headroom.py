"""Queue limits: headroom, effective max and fits_headroom over a tree, then through a cluster."""

from __future__ import annotations

from core.objects.queue import Queue
from core.resources import Resource
from core.scheduler.commands import NodeAction
from tests.unit.domain_helpers import Cluster


def _room(queue: Queue) -> dict[str, int]:
    """The headroom with its zero entries: a 0 there means none left, unlike a missing type."""
    headroom = queue.headroom()
    assert headroom is not None
    return headroom.as_dict()


# A three-level tree built by hand ----------------------------------------------------------------


def _three_levels() -> tuple[Queue, Queue, Queue, Queue]:
    """root (the cluster: memory 1000, vcore 100) -> parent (memory 300) -> leaf (vcore 20), sibling."""
    root = Queue("root", None, is_leaf=False)
    root.max = Resource({"memory": 1000, "vcore": 100})
    parent = Queue("parent", root, is_leaf=False)
    parent.max = Resource({"memory": 300})
    leaf = Queue("leaf", parent)
    leaf.max = Resource({"vcore": 20})
    sibling = Queue("sibling", parent)
    return root, parent, leaf, sibling


def test_effective_max_is_the_tightest_limit_per_type_along_the_path() -> None:
    root, parent, leaf, sibling = _three_levels()
    assert leaf.effective_max() == {"memory": 300, "vcore": 20}
    assert sibling.effective_max() == {"memory": 300, "vcore": 100}
    assert parent.effective_max() == {"memory": 300, "vcore": 100}
    assert root.effective_max() == {"memory": 1000, "vcore": 100}


def test_headroom_is_the_least_room_left_on_the_path() -> None:
    root, parent, leaf, sibling = _three_levels()
    assert leaf.headroom() == {"memory": 300, "vcore": 20}
    leaf.add_allocated(Resource({"memory": 100, "vcore": 5}))
    sibling.add_allocated(Resource({"memory": 150, "vcore": 60}))
    # memory: the parent has 300 - 250 left; vcore: the leaf has 15, the cluster only 35.
    assert leaf.headroom() == {"memory": 50, "vcore": 15}
    assert sibling.headroom() == {"memory": 50, "vcore": 35}
    assert parent.headroom() == {"memory": 50, "vcore": 35}
    assert root.headroom() == {"memory": 750, "vcore": 35}
    assert root.allocated == {"memory": 250, "vcore": 65}


def test_types_no_max_mentions_are_unlimited() -> None:
    _, _, leaf, _ = _three_levels()
    headroom = leaf.headroom()
    assert headroom is not None and "gpu" not in headroom
    assert leaf.fits_headroom(Resource({"gpu": 10**12}))
    leaf.add_allocated(Resource({"gpu": 10**12}))
    assert leaf.fits_headroom(Resource({"gpu": 1, "memory": 300, "vcore": 20}))


def test_without_any_max_on_the_path_there_is_no_limit() -> None:
    root = Queue("root", None, is_leaf=False)
    leaf = Queue("leaf", root)
    leaf.add_allocated(Resource({"memory": 10**9}))
    assert leaf.headroom() is None
    assert leaf.effective_max() is None
    assert leaf.fits_headroom(Resource({"memory": 10**15}))


def test_fits_headroom_checks_every_level() -> None:
    root, _, leaf, sibling = _three_levels()
    assert leaf.fits_headroom(Resource({"memory": 300, "vcore": 20}))
    assert not leaf.fits_headroom(Resource({"vcore": 21}))  # the leaf's own max
    assert not leaf.fits_headroom(Resource({"memory": 301}))  # the parent's max
    sibling.add_allocated(Resource({"vcore": 90}))
    assert not leaf.fits_headroom(Resource({"vcore": 11}))  # the cluster (root) is nearly full
    assert leaf.fits_headroom(Resource({"vcore": 10}))
    assert not root.fits_headroom(Resource({"memory": 1001}))


def test_a_zero_max_admits_nothing_of_that_type() -> None:
    _, _, leaf, _ = _three_levels()
    leaf.max = Resource({"vcore": 0})
    assert not leaf.fits_headroom(Resource({"vcore": 1}))
    assert leaf.fits_headroom(Resource({"memory": 1}))
    assert _room(leaf) == {"memory": 300, "vcore": 0}  # 0, not unlimited


def test_being_over_max_in_one_type_does_not_block_asks_for_other_types() -> None:
    _, parent, leaf, _ = _three_levels()
    leaf.add_allocated(Resource({"memory": 250, "vcore": 5}))
    parent.max = Resource({"memory": 200})  # lowered below what already runs (a config reload)
    headroom = leaf.headroom()
    assert headroom == {"memory": -50, "vcore": 15}
    ask = Resource({"vcore": 1})
    assert ask.fits_in_limit(headroom)
    assert leaf.fits_headroom(ask)


# Through a cluster ----------------------------------------------------------------------------------

TREE = """
partitions:
  - name: default
    queues:
      - name: root
        submitacl: "*"
        queues:
          - name: parent
            resources: {max: {memory: 100}}
            queues:
              - name: leaf
                resources: {max: {memory: 60, pods: 5}}
              - name: other
"""


def _queue(c: Cluster, name: str) -> Queue:
    queue = c.partition.find_queue(name)
    assert queue is not None
    return queue


def test_root_max_is_the_sum_of_node_capacities_and_follows_the_nodes() -> None:
    c = Cluster(TREE)
    root = c.partition.root
    c.node("n1", {"memory": 80, "vcore": 8000, "pods": 10})
    c.node("n2", {"memory": 40, "vcore": 4000, "pods": 10})
    assert root.max == {"memory": 120, "vcore": 12000, "pods": 20}
    c.node("n3", {"memory": 200, "gpu": 2})
    assert root.max == {"memory": 320, "vcore": 12000, "pods": 20, "gpu": 2}
    c.node_action("n2", NodeAction.UPDATE, {"memory": 10, "vcore": 1000, "pods": 10})
    assert root.max == {"memory": 290, "vcore": 9000, "pods": 20, "gpu": 2}
    c.node_action("n3", NodeAction.DECOMMISSION)
    assert root.max == {"memory": 90, "vcore": 9000, "pods": 20}
    assert root.max == c.partition.total_capacity


def test_headroom_in_a_cluster_combines_configured_maxes_and_the_nodes() -> None:
    c = Cluster(TREE)
    c.node("n1", {"memory": 80, "vcore": 8000, "pods": 10})
    c.node("n2", {"memory": 40, "vcore": 4000, "pods": 10})
    leaf, other, parent = (_queue(c, f"root.parent{n}") for n in (".leaf", ".other", ""))
    assert leaf.effective_max() == {"memory": 60, "pods": 5, "vcore": 12000}
    assert leaf.headroom() == {"memory": 60, "pods": 5, "vcore": 12000}
    assert other.headroom() == {"memory": 100, "vcore": 12000, "pods": 20}
    assert parent.headroom() == {"memory": 100, "vcore": 12000, "pods": 20}
    # The cluster shrinks below the parent's max: now the nodes are the limit.
    c.node_action("n1", NodeAction.DECOMMISSION)
    assert other.headroom() == {"memory": 40, "vcore": 4000, "pods": 10}
    assert leaf.headroom() == {"memory": 40, "pods": 5, "vcore": 4000}
    # And grows again.
    c.node_action("n2", NodeAction.UPDATE, {"memory": 500, "vcore": 4000, "pods": 10})
    assert other.headroom() == {"memory": 100, "vcore": 4000, "pods": 10}


def test_a_leaf_max_caps_allocation_and_the_rest_stays_pending() -> None:
    c = Cluster(TREE)
    c.node("n1", {"memory": 1000, "pods": 100})
    c.app("app-1", "root.parent.leaf")
    for i in range(10):
        c.ask("app-1", f"a{i}", {"memory": 10, "pods": 1})
    assert c.schedule() == 5  # pods 5 is the tighter limit
    leaf = _queue(c, "root.parent.leaf")
    assert leaf.allocated == {"memory": 50, "pods": 5}
    assert leaf.pending == {"memory": 50, "pods": 5}
    assert _room(leaf) == {"memory": 10, "pods": 0}
    assert len(c.partition.applications["app-1"].asks) == 5
    # Nothing more fits however often the scheduler looks.
    assert c.schedule() == 0
    # Releasing one frees room for exactly one more.
    c.release("app-1", "a0")
    assert c.schedule() == 1
    assert leaf.allocated == {"memory": 50, "pods": 5}
    assert leaf.pending == {"memory": 40, "pods": 4}


def test_a_leaf_memory_max_caps_big_asks_but_lets_small_ones_through() -> None:
    c = Cluster(TREE)
    c.node("n1", {"memory": 1000, "pods": 100})
    c.app("app-1", "root.parent.leaf")
    c.ask("app-1", "big", {"memory": 45})
    c.ask("app-1", "too-big", {"memory": 20})
    c.ask("app-1", "small", {"memory": 15})
    c.schedule()
    leaf = _queue(c, "root.parent.leaf")
    assert sorted(c.partition.applications["app-1"].allocations) == ["big", "small"]
    assert leaf.allocated == {"memory": 60}
    assert leaf.pending == {"memory": 20}


def test_a_parent_max_caps_the_sum_of_its_children() -> None:
    c = Cluster(TREE)
    c.node("n1", {"memory": 1000, "pods": 100})
    c.app("in-leaf", "root.parent.leaf")
    c.app("in-other", "root.parent.other")
    for i in range(10):
        c.ask("in-leaf", f"l{i}", {"memory": 10})
        c.ask("in-other", f"o{i}", {"memory": 10})
    assert c.schedule() == 10
    leaf, other, parent = (_queue(c, f"root.parent{n}") for n in (".leaf", ".other", ""))
    assert parent.allocated == {"memory": 100}
    assert leaf.allocated.get("memory") + other.allocated.get("memory") == 100
    assert leaf.allocated.get("memory") <= 60
    assert parent.pending == {"memory": 100}
    assert c.partition.root.allocated == {"memory": 100}
    assert c.partition.nodes["n1"].available.get("memory") == 900


def test_the_cluster_is_the_limit_when_no_queue_sets_one() -> None:
    c = Cluster(TREE)
    c.node("n1", {"memory": 30, "pods": 100})
    c.node("n2", {"memory": 30, "pods": 100})
    c.app("app-1", "root.parent.other")
    for i in range(10):
        c.ask("app-1", f"a{i}", {"memory": 10})
    assert c.schedule() == 6
    other = _queue(c, "root.parent.other")
    assert other.allocated == {"memory": 60}
    assert _room(other) == {"memory": 0, "pods": 200}
    # A new node raises the cluster, and with it the root's max: more is allocated.
    c.node("n3", {"memory": 20, "pods": 100})
    assert c.schedule() == 2
    assert other.allocated == {"memory": 80}
    assert other.pending == {"memory": 20}
