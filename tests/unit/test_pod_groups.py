"""Pod groups in the core, driven directly: a gang's minimum placed in one decision or not at all, basic
groups pod by pod, a group's later members on their own, and bad tags refused with the reason."""

from __future__ import annotations

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from core.objects.allocation import Allocation
from core.resources import Resource
from core.scheduler.commands import NodeAction, NodeChange, UpdateAllocations, UpdateNodes
from core.scheduler.results import Termination
from si.v1.tags import TAG_POD_ANTI_AFFINITY, TAG_POD_GROUP, TAG_POD_GROUP_MIN_COUNT
from tests.unit.domain_helpers import ONE_LEAF, Cluster, drained

MEM = {"memory": 2}


def _member(
    c: Cluster,
    key: str,
    group: str = "workers",
    min_count: int | None = 4,
    extra: dict[str, str] | None = None,
) -> Allocation:
    tags = {TAG_POD_GROUP: group, **(extra or {})}
    if min_count is not None:
        tags[TAG_POD_GROUP_MIN_COUNT] = str(min_count)
    return Allocation(key, "job", c.pname(), Resource(MEM), tags=tags)


def _send(c: Cluster, *asks: Allocation) -> list[str]:
    """The asks sent; the keys the core refused."""
    c.ctx.apply(UpdateAllocations(c.rm_id, allocations=asks))
    return [r.key for r in drained(c).rejected_allocations]


def _cluster(nodes: int, memory: int = 2) -> Cluster:
    c = Cluster()
    for i in range(nodes):
        c.node(f"n{i}", {"memory": memory})
    c.app("job", user="u")
    drained(c)
    return c


def _placed(c: Cluster) -> dict[str, str]:
    c.schedule()
    return {a.key: a.node_id for a in drained(c).new_allocations}


def test_a_gang_of_four_on_room_for_three_places_nothing_and_says_why() -> None:
    c = _cluster(nodes=3)
    assert _send(c, *(_member(c, f"w{i}") for i in range(4))) == []
    assert _placed(c) == {}
    app = c.partition.applications["job"]
    reasons = {ask.pending_reason for ask in app.asks.values()}
    assert reasons == {
        "pod group workers: 3 of the 4 pods that must start together can be placed now "
        "(over the cluster's capacity)"
    }
    # Nothing of the plan is left behind: the nodes hold nothing.
    assert all(not n.allocations for n in c.partition.nodes.values())
    assert all(n.available.get("memory") == 2 for n in c.partition.nodes.values())


def test_room_for_the_fourth_places_all_four_in_one_decision() -> None:
    c = _cluster(nodes=3)
    _send(c, *(_member(c, f"w{i}") for i in range(4)))
    assert _placed(c) == {}
    c.node("n3", {"memory": 2})
    placed = _placed(c)
    assert sorted(placed) == ["w0", "w1", "w2", "w3"]
    assert sorted(placed.values()) == ["n0", "n1", "n2", "n3"]


def test_fewer_members_than_the_minimum_wait_and_the_last_one_wakes_them() -> None:
    c = _cluster(nodes=4)
    _send(c, *(_member(c, f"w{i}") for i in range(3)))
    assert _placed(c) == {}
    reason = c.partition.applications["job"].asks["w0"].pending_reason
    assert reason == "pod group workers: 3 of the 4 pods it starts with are known; waiting for the others"
    _send(c, _member(c, "w3"))
    assert sorted(_placed(c)) == ["w0", "w1", "w2", "w3"]


def test_a_started_group_places_later_members_on_their_own() -> None:
    c = _cluster(nodes=5)
    _send(c, *(_member(c, f"w{i}") for i in range(4)))
    assert len(_placed(c)) == 4
    _send(c, _member(c, "w4"))  # a fifth pod (a group larger than its minimum)
    assert _placed(c) == {"w4": "n4"}
    # One member gone and recreated: the three still running and the new one make four.
    c.release("job", "w0")
    _send(c, _member(c, "w0b"))
    assert _placed(c) == {"w0b": "n0"}


def test_members_beyond_the_minimum_that_fit_start_with_it() -> None:
    c = _cluster(nodes=5)
    _send(c, *(_member(c, f"w{i}") for i in range(6)))
    placed = _placed(c)
    assert len(placed) == 5 and "w5" not in placed  # five fit: the minimum and one more
    assert c.partition.applications["job"].asks["w5"].pending_reason != ""


def test_a_basic_group_places_pod_by_pod() -> None:
    c = _cluster(nodes=2)
    _send(c, *(_member(c, f"b{i}", group="basic", min_count=None) for i in range(3)))
    assert len(_placed(c)) == 2  # as many as fit, no waiting for the third


def test_a_replica_key_is_a_group_of_its_own() -> None:
    """The RM names each replica's gang apart (workers/0, workers/1): each starts on its own."""
    c = _cluster(nodes=3)
    _send(c, *(_member(c, f"a{i}", group="workers/0", min_count=2) for i in range(2)))
    _send(c, *(_member(c, f"b{i}", group="workers/1", min_count=2) for i in range(2)))
    placed = _placed(c)
    assert sorted(placed) == ["a0", "a1"]  # the second gang of two finds one node left: it waits whole


def test_the_queue_headroom_counts_the_whole_gang() -> None:
    c = Cluster(ONE_LEAF.replace("max: {memory: 100, vcore: 100}", "max: {memory: 6}"))
    for i in range(4):
        c.node(f"n{i}", {"memory": 2})
    c.app("job", user="u")
    _send(c, *(_member(c, f"w{i}") for i in range(4)))
    assert _placed(c) == {}
    reason = c.partition.applications["job"].asks["w0"].pending_reason
    assert "3 of the 4 pods" in reason and "over queue root.default's max" in reason


def test_anti_affinity_between_members_counts_the_planned_ones() -> None:
    """One member per node (required anti-affinity on their own label): planned members keep each
    other off their nodes, as kube-scheduler's assumed pods do."""
    c = _cluster(nodes=0)
    for i in range(3):
        hostname = {"kubernetes.io/label/kubernetes.io/hostname": f"n{i}"}
        change = NodeChange(f"n{i}", NodeAction.CREATE, c.pname(), hostname, Resource({"memory": 8}))
        c.ctx.apply(UpdateNodes(c.rm_id, (change,)))
    term = (
        '{"requiredDuringSchedulingIgnoredDuringExecution": [{"labelSelector": {"matchLabels": '
        '{"app": "w"}}, "topologyKey": "kubernetes.io/hostname"}]}'
    )
    extra = {
        TAG_POD_ANTI_AFFINITY: term,
        "kubernetes.io/meta/namespace": "default",
        "kubernetes.io/label/app": "w",
    }
    _send(c, *(_member(c, f"w{i}", extra=extra) for i in range(4)))
    assert _placed(c) == {}  # three nodes, four members that may not share one
    _send(c, *(_member(c, f"v{i}", group="three", min_count=3, extra=extra) for i in range(3)))
    # A gang of three alike fits: one member on each node.
    assert sorted(_placed(c).values()) == ["n0", "n1", "n2"]


@pytest.mark.parametrize(
    ("tags", "why"),
    [
        ({TAG_POD_GROUP: ""}, "must be a name of 1 to 512 characters"),
        ({TAG_POD_GROUP: "g", TAG_POD_GROUP_MIN_COUNT: "0"}, "must be a whole number of at least 1"),
        ({TAG_POD_GROUP: "g", TAG_POD_GROUP_MIN_COUNT: "four"}, "must be a whole number of at least 1"),
        ({TAG_POD_GROUP_MIN_COUNT: "2"}, f"without {TAG_POD_GROUP}"),
    ],
)
def test_bad_pod_group_tags_refuse_that_ask_with_the_reason(tags: dict[str, str], why: str) -> None:
    c = _cluster(nodes=1)
    c.ctx.apply(
        UpdateAllocations(c.rm_id, allocations=(Allocation("x", "job", c.pname(), Resource(MEM), tags=tags),))
    )
    rejected = drained(c).rejected_allocations
    assert [r.key for r in rejected] == ["x"]
    assert why in rejected[0].reason


def test_a_member_disagreeing_on_the_minimum_is_refused() -> None:
    c = _cluster(nodes=4)
    assert _send(c, _member(c, "w0")) == []
    assert _send(c, _member(c, "w1", min_count=3)) == ["w1"]


def test_a_pod_group_with_a_task_group_is_refused() -> None:
    c = _cluster(nodes=1)
    ask = _member(c, "w0")
    ask.task_group = "tg"
    assert _send(c, ask) == ["w0"]


def test_the_group_is_forgotten_with_its_last_member() -> None:
    c = _cluster(nodes=4)
    _send(c, *(_member(c, f"w{i}") for i in range(2)))
    app = c.partition.applications["job"]
    assert app.pod_groups["workers"].pending == 2
    c.release("job", "w0")
    c.release("job", "w1")
    assert "workers" not in app.pod_groups


@settings(max_examples=60, deadline=None)
@given(
    nodes=st.lists(st.integers(min_value=1, max_value=6), min_size=1, max_size=5),
    groups=st.lists(
        st.tuples(st.integers(min_value=1, max_value=5), st.integers(min_value=0, max_value=3)),
        min_size=1,
        max_size=4,
    ),
)
def test_a_group_runs_its_minimum_or_nothing(nodes: list[int], groups: list[tuple[int, int]]) -> None:
    """Whatever the nodes and groups (minimum, members beyond it): after a cycle each group runs none
    or at least its minimum, no node holds more than its capacity, and plans leave nothing behind."""
    c = _cluster(nodes=0)
    for i, memory in enumerate(nodes):
        c.node(f"n{i}", {"memory": memory})
    for g, (min_count, extra) in enumerate(groups):
        asks = [_member(c, f"g{g}-{m}", group=f"g{g}", min_count=min_count) for m in range(min_count + extra)]
        for m, ask in enumerate(asks):
            ask.resource = Resource({"memory": 1 + m % 2})
        _send(c, *asks)
    placed = _placed(c)
    for g, (min_count, _) in enumerate(groups):
        running = [k for k in placed if k.startswith(f"g{g}-")]
        assert not running or len(running) >= min_count
    for node in c.partition.nodes.values():
        held = sum(a.resource.get("memory") for a in node.allocations.values())
        assert held <= node.capacity.get("memory")
        assert node.available.get("memory") == node.capacity.get("memory") - held
        assert set(node.allocations) == {k for k, n in placed.items() if n == node.node_id}


def _tenants(guaranteed: int, nodes: dict[str, int], fillers: int, filler_memory: int) -> Cluster:
    """Queue a (guaranteed `guaranteed` memory, preemption after 1 s) for application job; queue c,
    with nothing guaranteed, whose application fill runs `fillers` allocations of `filler_memory`."""
    tenants = ONE_LEAF.replace(
        """          - name: default
            resources:
              max: {memory: 100, vcore: 100}""",
        f"""          - name: a
            resources: {{guaranteed: {{memory: {guaranteed}}}}}
            properties: {{preemption.delay: 1s}}
          - name: c""",
    )
    c = Cluster(tenants)
    for name, memory in nodes.items():
        c.node(name, {"memory": memory})
    c.app("fill", "root.c")
    c.app("job", "root.a")
    for i in range(fillers):
        ask = Allocation(
            f"c{i}", "fill", c.pname(), Resource({"memory": filler_memory}), allow_preempt_self=True
        )
        c.ctx.apply(UpdateAllocations(c.rm_id, allocations=(ask,)))
    c.schedule()
    drained(c)
    return c


def test_a_gang_below_its_guarantee_preempts_room_for_all_of_it_then_starts_whole() -> None:
    """Queue a, guaranteed 60 of the node's 100, asks a gang of three of 20 while queue c fills the
    node: victims are chosen member by member, each beside the room of the members before it, and the
    gang starts whole once the victims are gone; no member starts alone meanwhile."""
    c = _tenants(60, {"n1": 100}, fillers=10, filler_memory=10)
    members = [_member(c, f"g{i}", min_count=3) for i in range(3)]
    for member in members:
        member.resource = Resource({"memory": 20})
        member.allow_preempt_other = True
    _send(c, *members)
    preempted: set[str] = set()
    for _ in range(12):  # each cycle: victims for one more member; the RM confirms each release
        c.clock.advance(2.0)
        c.schedule()
        batch = drained(c)
        placed = [a.key for a in batch.new_allocations]
        assert placed in ([], ["g0", "g1", "g2"]), placed  # never part of the gang
        if placed:
            break
        for released in batch.released:
            if released.termination == Termination.PREEMPTED_BY_SCHEDULER and released.key not in preempted:
                preempted.add(released.key)
                c.release("fill", released.key)
    else:
        raise AssertionError(f"the gang never started; preempted {preempted}")
    assert len(preempted) == 6  # 60 freed: exactly the gang's room
    assert sum(n.allocated.get("memory") for n in c.partition.nodes.values()) == 100


def test_members_parked_apart_by_their_own_timers_are_parked_again_together() -> None:
    """Members made half a second apart are parked with their own reservation-delay timers; the first
    timer wakes one while the other stays parked, and the group's next attempt parks both afresh
    (review of a97b825: parking a parked member crashed the cycle)."""
    c = _cluster(nodes=1)
    _send(c, _member(c, "m0", min_count=2))
    c.schedule()
    drained(c)
    c.clock.advance(0.5)
    _send(c, _member(c, "m1", min_count=2))
    c.schedule()
    drained(c)
    app = c.partition.applications["job"]
    for _ in range(6):
        c.clock.advance(0.5)
        assert _placed(c) == {}  # room for one of two: never placed, and the cycle runs
    c.node("n1", {"memory": 2})
    assert sorted(_placed(c)) == ["m0", "m1"]
    assert not app.parked


def test_a_member_holding_headroom_after_preemption_does_not_count_twice() -> None:
    """A member keeps headroom on its queue after looking for victims (its hold); planning the group
    counts each member's hold once, so two free nodes take the gang of two (review of a97b825)."""
    c = _tenants(4, {"n0": 2, "n1": 2}, fillers=2, filler_memory=2)
    members = [_member(c, f"g{i}", min_count=2) for i in range(2)]
    for member in members:
        member.allow_preempt_other = True
    _send(c, *members)
    c.clock.advance(2)
    c.schedule()
    drained(c)
    c.release("fill", "c0")  # both fillers go: one a victim, the other finished on its own
    c.release("fill", "c1")
    for _ in range(5):
        c.clock.advance(2)
        placed = _placed(c)
        if placed:
            break
    assert sorted(placed) == ["g0", "g1"]
