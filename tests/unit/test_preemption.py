"""Preemption decisions, driven directly through the cluster context with an injected clock."""

from __future__ import annotations

import json

from core.objects.allocation import Allocation
from core.resources import Resource
from core.scheduler.commands import NodeAction, NodeChange, ReleaseRequest, UpdateAllocations, UpdateNodes
from core.scheduler.results import Termination
from core.views.app_views import ask_info
from si.v1.tags import (
    LABEL_PREFIX,
    TAG_NAMESPACE,
    TAG_NODE_SELECTOR,
    TAG_POD_ANTI_AFFINITY,
    TAG_REQUIRED_NODE,
    TAG_TOPOLOGY_SPREAD,
)
from tests.unit.domain_helpers import Cluster

HOST = "kubernetes.io/hostname"
TENANTS = """
partitions:
  - name: default
    queues:
      - name: root
        submitacl: "*"
        queues:
          - name: a
            resources: {guaranteed: {memory: 60}}
            properties: {preemption.delay: 1s}
          - name: b
            resources: {guaranteed: {memory: 40}}
            properties: {preemption.delay: 1s}
          - name: c
          - name: fenced
            properties: {priority.policy: fence, priority.offset: "%(offset)s"}
            queues:
              - name: inner
"""


def _cluster(offset: int = 0) -> Cluster:
    c = Cluster(TENANTS % {"offset": offset})
    c.node("n1", {"memory": 100})
    for app, queue in (("a", "root.a"), ("b", "root.b"), ("c", "root.c"), ("f", "root.fenced.inner")):
        c.app(app, queue)
    return c


def _ask(c: Cluster, app: str, key: str, memory: int, priority: int = 0) -> Allocation:
    ask = Allocation(
        key, app, c.pname(), Resource({"memory": memory}), priority=priority,
        allow_preempt_other=True, allow_preempt_self=True,
    )  # fmt: skip
    c.ctx.apply(UpdateAllocations(c.rm_id, allocations=(ask,)))
    return ask


def _run(c: Cluster, seconds: float = 2.0) -> list[tuple[str, str]]:
    """Let time pass and schedule; returns the (app, key) preempted in that cycle."""
    c.clock.advance(seconds)
    c.schedule()
    return [
        (r.app_id, r.key)
        for b in c.ctx.drain_results()
        for r in b.released
        if r.termination == Termination.PREEMPTED_BY_SCHEDULER
    ]


def _fill(c: Cluster, app: str, count: int, memory: int = 10, priority: int = 0) -> None:
    for i in range(count):
        _ask(c, app, f"{app}{i}", memory, priority)
        c.clock.advance(0.01)  # distinct ages: the youngest is the last
    c.schedule()
    c.ctx.drain_results()


def test_a_queue_at_its_guarantee_is_not_raided_but_one_without_a_guarantee_is() -> None:
    c = _cluster()
    _fill(c, "c", 6)  # c holds 60: it has no guarantee
    _fill(c, "b", 4)  # b holds 40, exactly its guarantee, with the youngest tasks of all
    _ask(c, "a", "want", 10)
    victims = _run(c)
    assert victims == [("c", "c5")]  # youngest first would pick b3, but b keeps its 40


def test_nothing_is_taken_when_every_other_queue_is_within_its_guarantee() -> None:
    c = _cluster()
    _fill(c, "b", 4)  # 40 of 40
    _fill(c, "a", 6)  # 60 of 60: a at its guarantee, cannot ask for more by preemption
    _ask(c, "a", "more", 10)
    assert _run(c) == []


def test_the_victim_queue_never_drops_below_its_guarantee_even_when_the_ask_needs_more() -> None:
    c = _cluster()
    _fill(c, "c", 5, memory=10)  # 50
    _fill(c, "b", 5)  # 50: 10 above its guarantee of 40, and the youngest tasks
    _ask(c, "a", "big", 30)  # needs 30; b can give 10 at most, c all of its 50
    victims = _run(c)
    assert sum(1 for app, _ in victims if app == "b") <= 1
    b = c.partition.find_queue("root.b")
    assert b is not None and b.allocated.get("memory") - b.preempting.get("memory") >= 40


def test_a_higher_priority_victim_is_not_taken_and_an_equal_one_may_be() -> None:
    c = _cluster()
    _fill(c, "c", 10, priority=5)
    _ask(c, "a", "low", 10, priority=4)
    assert _run(c) == []
    _ask(c, "a", "equal", 10, priority=5)
    assert len(_run(c)) == 1


def test_priority_is_compared_across_a_fence_by_its_offset() -> None:
    # Inside the fence the tasks have priority 1000, but the fence shows the rest of the tree only its
    # offset: with offset 0 an ask of priority 0 may take them; with offset 5 it may not.
    for offset, expected in ((0, 1), (5, 0)):
        c = _cluster(offset)
        _fill(c, "f", 10, priority=1000)
        _ask(c, "a", "want", 10, priority=0)
        assert len(_run(c)) == expected, offset


def test_the_ask_reserves_the_node_and_gets_it_once_the_rm_confirms() -> None:
    c = _cluster()
    _fill(c, "c", 10)
    _ask(c, "a", "want", 20)
    victims = _run(c)
    assert len(victims) == 2
    part = c.partition
    assert part.reservations == {("a", "want"): "n1"}
    root_c = part.find_queue("root.c")
    assert root_c is not None and root_c.preempting.get("memory") == 20
    assert _run(c) == []  # at most one preemption outstanding per ask
    for app, key in victims:
        c.ctx.apply(UpdateAllocations(c.rm_id, releases=(ReleaseRequest(c.pname(), app, key),)))
    c.schedule()
    new = [a.key for b in c.ctx.drain_results() for a in b.new_allocations]
    assert new == ["want"]
    assert root_c.preempting.is_zero()


def test_no_preemption_when_it_would_not_make_the_ask_fit() -> None:
    c = _cluster()
    _fill(c, "c", 10)
    _ask(c, "a", "huge", 200)  # bigger than the node: no victims would ever be enough
    assert _run(c) == []


def test_an_ordinary_reservation_gives_way_to_a_preempting_ask() -> None:
    c = Cluster(TENANTS % {"offset": 0})
    c.node("n1", {"memory": 50})
    c.node("n2", {"memory": 50})
    for app, queue in (("a", "root.a"), ("c", "root.c")):
        c.app(app, queue)
    _fill(c, "c", 8)  # 40 on each node: 10 free on each, 20 in all
    waiting = _ask(c, "c", "waits", 20)  # fits the cluster, no node: it reserves one (c cannot preempt)
    waiting.allow_preempt_other = False
    c.clock.advance(3)
    c.schedule()
    assert c.partition.reservations == {("c", "waits"): "n1"}
    allocations = c.partition.applications["c"].allocations
    assert (allocations["c6"].node_id, allocations["c7"].node_id) == ("n1", "n2")
    allocations["c7"].allow_preempt_self = False  # the most preferred victim is then c6, on n1
    _ask(c, "a", "want", 20)  # below its guarantee: one victim on n1 or n2 makes room
    assert _run(c) == [("c", "c6")]  # the most preferred victim decides the node: the reserved n1
    # The preempting ask holds n1 and its room in the cluster: once c6 (10) is gone and the ask (20)
    # placed, 10 is left, so the waiting ask (20) reserves no other node meanwhile.
    assert c.partition.reservations == {("a", "want"): "n1"}
    assert c.partition.root.held == Resource({"memory": 20})
    reason = c.partition.applications["c"].asks["waits"].pending_reason
    assert reason == "over the cluster's capacity: asks {'memory': 20}, room left {'memory': 10}"


# (key, priority, allows preemption, originator), oldest first: one node full with five of 20.
MIXED = (("no-preempt", 1, False, False), ("origin", 1, True, True), ("old", 1, True, False),
         ("young", 1, True, False), ("keep-hi", 9, True, False))  # fmt: skip


def _daemonset_on_a_full_node(memory: int) -> list[tuple[str, str]]:
    """Fill n1 with MIXED, then a DaemonSet ask (priority 5) for n1; returns the victims, in order."""
    c = _cluster()
    for key, prio, self_ok, origin in MIXED:
        alloc = Allocation(key, "c", c.pname(), Resource({"memory": 20}), priority=prio,
                           allow_preempt_self=self_ok, originator=origin)  # fmt: skip
        c.ctx.apply(UpdateAllocations(c.rm_id, allocations=(alloc,)))
        c.clock.advance(0.1)
    c.schedule()
    c.ctx.drain_results()
    ds = Allocation(
        "ds", "b", c.pname(), Resource({"memory": memory}), priority=5, tags={TAG_REQUIRED_NODE: "n1"}
    )
    c.ctx.apply(UpdateAllocations(c.rm_id, allocations=(ds,)))
    return _run(c, 0.0)  # no preemption delay for a required node


def test_required_node_victims_are_the_preferred_ones_and_never_outrank_the_ask() -> None:
    assert _daemonset_on_a_full_node(20) == [("c", "young")]  # the youngest plain one goes first


def test_required_node_preemption_takes_several_in_order_until_the_ask_fits() -> None:
    # 80 needed; keep-hi (priority 9) may never go, so the other four go, preferred ones first.
    assert _daemonset_on_a_full_node(80) == [
        ("c", "young"),
        ("c", "old"),
        ("c", "origin"),
        ("c", "no-preempt"),
    ]


PARENT_MAX = """
partitions:
  - name: default
    queues:
      - name: root
        submitacl: "*"
        queues:
          - name: top
            resources: {max: {vcore: %(top)s}}
            queues:
              - name: parent
%(parent)s                queues:
                  - name: leaf1
                    resources: {guaranteed: {vcore: 5}}
                    properties: {preemption.delay: 1s}
                  - name: leaf2
                    resources: {guaranteed: {vcore: 5}}
                    properties: {preemption.delay: 1s}
"""


CORE = 1000  # vcore in milli-cores, as the configuration's "5" means 5 cores


def _parent_max_shape(spread: bool, parent_max: bool = True, top: int = 100) -> Cluster:
    """YuniKorn's TestPreemption shape on roomy nodes: leaf1 runs 2 x 5 vcore, a max above blocks."""
    parent = "                resources: {max: {vcore: 10}}\n" if parent_max else ""
    c = Cluster(PARENT_MAX % {"parent": parent, "top": top})
    c.node("n1", {"vcore": 20 * CORE})
    c.node("n2", {"vcore": 20 * CORE})
    c.app("one", "root.top.parent.leaf1")
    c.app("two", "root.top.parent.leaf2")
    for i in range(2):
        node = ("n1", "n2")[i] if spread else "n1"
        running = Allocation(f"one{i}", "one", c.pname(), Resource({"vcore": 5 * CORE}), node_id=node)
        c.ctx.apply(UpdateAllocations(c.rm_id, allocations=(running,)))
        c.clock.advance(0.01)
    c.ctx.drain_results()
    return c


def _vcore_ask(c: Cluster, app: str, key: str, vcore: int) -> None:
    ask = Allocation(key, app, c.pname(), Resource({"vcore": vcore * CORE}), allow_preempt_other=True)
    c.ctx.apply(UpdateAllocations(c.rm_id, allocations=(ask,)))


def _confirm_and_place(c: Cluster, victims: list[tuple[str, str]]) -> list[str]:
    for app, key in victims:
        release = ReleaseRequest(c.pname(), app, key, termination=Termination.PREEMPTED_BY_SCHEDULER)
        c.ctx.apply(UpdateAllocations(c.rm_id, releases=(release,)))
    c.schedule()
    return [a.key for b in c.ctx.drain_results() for a in b.new_allocations]


def test_an_ask_blocked_only_by_a_parents_max_preempts_exactly_one_victim_on_one_node_or_two() -> None:
    for spread in (False, True):
        c = _parent_max_shape(spread)
        _vcore_ask(c, "two", "want", 5)
        victims = _run(c)
        assert len(victims) == 1 and victims[0][0] == "one", (spread, victims)
        assert _confirm_and_place(c, victims) == ["want"]
        leaf1 = c.partition.find_queue("root.top.parent.leaf1")
        assert leaf1 is not None and leaf1.allocated.get("vcore") == 5 * CORE  # back at its guarantee


def test_an_ask_blocked_by_a_grandparents_max_preempts_below_it() -> None:
    c = _parent_max_shape(spread=True, parent_max=False, top=10)
    _vcore_ask(c, "two", "want", 5)
    victims = _run(c)
    assert len(victims) == 1 and victims[0][0] == "one"
    assert _confirm_and_place(c, victims) == ["want"]


HELD = """
partitions:
  - name: default
    queues:
      - name: root
        submitacl: "*"
        queues:
          - name: p
            resources: {max: {memory: 100}}
            queues:
              - name: a
                resources: {guaranteed: {memory: 60}}
                properties: {preemption.delay: 1s}
              - name: c
"""


def _held_shape() -> tuple[Cluster, list[tuple[str, str]]]:
    """root.c runs 90 of root.p's 100 on roomy nodes; root.a's ask of 20 preempts one task of 10."""
    c = Cluster(HELD)
    c.node("n1", {"memory": 200})  # roomy: only root.p's max blocks, and the node the ask reserves
    c.node("n2", {"memory": 200})  # is not the only one with room
    c.app("a", "root.p.a")
    c.app("c", "root.p.c")
    _fill(c, "c", 9)
    c.schedule()
    c.ctx.drain_results()
    _ask(c, "a", "want", 20)
    victims = _run(c)
    assert victims == [("c", "c8")]  # 10 freed makes room for 20
    return c, victims


def test_the_room_a_preemption_frees_under_a_max_is_held_for_its_ask() -> None:
    c, victims = _held_shape()
    p = c.partition.find_queue("root.p")
    assert p is not None and p.held == Resource({"memory": 20})
    # Another ask under root.p fits now (90 + 10), but not once the victim is gone and the held ask
    # placed (80 + 20 + 10): it waits, and says how much room is really left.
    sibling = _ask(c, "c", "sibling", 10)
    sibling.allow_preempt_other = False
    assert _run(c) == []
    assert sibling.pending_reason == "over queue root.p's max: asks {'memory': 10}, room left {'memory': 0}"
    assert _confirm_and_place(c, victims) == ["want"]
    assert p.held == Resource() and p.allocated == Resource({"memory": 100})
    assert "sibling" in c.partition.applications["c"].asks  # still pending: root.p is full


def test_a_hold_goes_with_its_ask_when_the_ask_is_removed() -> None:
    c, _ = _held_shape()
    c.ctx.apply(UpdateAllocations(c.rm_id, releases=(ReleaseRequest(c.pname(), "a", "want"),)))
    p = c.partition.find_queue("root.p")
    assert p is not None and p.held == Resource()
    sibling = _ask(c, "c", "sibling", 10)
    c.schedule()
    assert sibling.is_allocated  # the room is nobody's again


USER_LIMIT = """
partitions:
  - name: default
    queues:
      - name: root
        submitacl: "*"
        queues:
          - name: tenants
            limits:
              - limit: alice's share
                users: [alice]
                maxresources: {memory: 50}
            queues:
              - name: prod
                resources: {guaranteed: {memory: 60}}
                properties: {preemption.delay: 1s}
              - name: batch
"""


def _user_limit_shape() -> Cluster:
    """alice runs 40 in batch, bob 40: alice's limit of 50 under root.tenants blocks her ask in prod."""
    c = Cluster(USER_LIMIT)
    c.node("n1", {"memory": 200})  # roomy: only alice's limit blocks
    c.app("alice-batch", "root.tenants.batch", user="alice")
    c.app("bob-batch", "root.tenants.batch", user="bob")
    c.app("alice-prod", "root.tenants.prod", user="alice")
    _fill(c, "alice-batch", 4)
    _fill(c, "bob-batch", 4)  # the youngest: the preferred victims, were they any use
    c.schedule()
    c.ctx.drain_results()
    return c


def test_an_ask_over_its_users_limit_preempts_only_that_users_allocations() -> None:
    c = _user_limit_shape()
    _ask(c, "alice-prod", "want", 30)  # 40 + 30 is 20 over alice's 50; bob's tasks free none of it
    victims = _run(c)
    assert victims == [("alice-batch", "alice-batch3"), ("alice-batch", "alice-batch2")]  # youngest first
    assert _confirm_and_place(c, victims) == ["want"]
    tenants = c.partition.user_groups.counters
    assert {key[1]: usage.resource for key, usage in tenants.items()} == {"alice": Resource({"memory": 50})}


def test_no_preemption_for_a_users_limit_when_only_other_users_could_give_way() -> None:
    c = _user_limit_shape()
    c.app("alice-more", "root.tenants.prod", user="alice")
    _fill(c, "alice-more", 1)  # alice's 10 more in prod, where no victim is taken for prod's own ask
    c.ctx.apply(UpdateAllocations(c.rm_id, releases=tuple(
        ReleaseRequest(c.pname(), "alice-batch", f"alice-batch{i}") for i in range(4)
    )))  # fmt: skip
    _ask(c, "alice-prod", "want", 45)  # 10 + 45: over her 50, with only bob's tasks elsewhere
    assert _run(c) == []
    ask = c.partition.applications["alice-prod"].asks["want"]
    assert ask.pending_reason.startswith("over user alice's limit in queue root.tenants")
    assert ask.preemption_reason.startswith("preemption tried, none possible: no plan")
    assert "user or group limit" in ask.preemption_reason


def test_no_preemption_for_a_max_when_no_node_would_admit_the_ask() -> None:
    c = _parent_max_shape(spread=True)
    ask = Allocation(
        "want", "two", c.pname(), Resource({"vcore": 5 * CORE}), allow_preempt_other=True,
        tags={TAG_REQUIRED_NODE: "n3"},  # a node that does not exist: nowhere it could then run
    )  # fmt: skip
    c.ctx.apply(UpdateAllocations(c.rm_id, allocations=(ask,)))
    assert _run(c) == []


def test_when_preemption_finds_no_plan_the_ask_says_why_and_one_event_records_it() -> None:
    c = _cluster()
    _fill(c, "c", 10)
    picky = Allocation(
        "picky", "a", c.pname(), Resource({"memory": 20}), allow_preempt_other=True,
        tags={TAG_NODE_SELECTOR: '{"zone": "nowhere"}'},  # no node would take it, victims or not
    )  # fmt: skip
    c.ctx.apply(UpdateAllocations(c.rm_id, allocations=(picky,)))
    for _ in range(3):
        assert _run(c) == []
    ask = c.partition.applications["a"].asks["picky"]
    assert ask.preemption_reason.startswith("preemption tried, none possible: no plan")
    assert ask.preemption_count == 1  # parked: nothing changed that could give it a plan
    c.release("c", "c0")  # victims change: it looks again
    assert _run(c) == []
    assert ask.preemption_count == 2
    events = [e for e in c.ctx.events if e.object_id == "picky" and "preemption tried" in e.message]
    assert len(events) == 1  # once per reason, not per cycle
    log = [entry["message"] for entry in ask_info(c.partition, ask).get("allocationLog", [])]
    assert len(log) == 2 and log[1] == ask.preemption_reason  # beside why it is pending


def test_an_ask_that_would_pass_its_guarantee_says_so() -> None:
    c = _cluster()
    _fill(c, "c", 10)
    _ask(c, "a", "huge", 80)  # root.a is guaranteed 60
    assert _run(c) == []
    reason = c.partition.applications["a"].asks["huge"].preemption_reason
    assert reason.endswith("no queue on its path is below a guarantee it would stay within")


def test_no_victim_inside_a_fence_is_named_as_such() -> None:
    c = Cluster(FENCED)
    c.node("n1", {"memory": 100})
    for app, queue in (("big", "root.big"), ("in", "root.fenced.inside")):
        c.app(app, queue)
    _fill(c, "big", 10)  # root.big holds the node; the ask inside the fence may not look outside it
    _ask(c, "in", "inside", 20)
    assert _run(c) == []
    reason = c.partition.applications["in"].asks["inside"].preemption_reason
    assert "no victim below root.fenced (a preemption fence)" in reason


FENCED = """
partitions:
  - name: default
    queues:
      - name: root
        submitacl: "*"
        queues:
          - name: big
          - name: fenced
            properties: {preemption.policy: fence}
            resources: {guaranteed: {memory: 50}}
            queues:
              - name: inside
                resources: {guaranteed: {memory: 50}}
                properties: {preemption.delay: 1s}
"""


AWAY_FROM_WEB = json.dumps({"requiredDuringSchedulingIgnoredDuringExecution": [
    {"labelSelector": {"matchLabels": {"app": "web"}}, "topologyKey": HOST}]})  # fmt: skip


def _web_on(nodes: tuple[str, ...], priority: int = 0) -> Cluster:
    """A web pod of root.c on each of `nodes` (roomy), and root.a's ask that keeps away from web pods."""
    c = Cluster(TENANTS % {"offset": 0})
    for node in nodes:
        change = NodeChange(
            node, NodeAction.CREATE, c.pname(), {LABEL_PREFIX + HOST: node}, Resource({"memory": 100})
        )
        c.ctx.apply(UpdateNodes(c.rm_id, (change,)))
    c.app("a", "root.a")
    c.app("c", "root.c")
    web = {TAG_NAMESPACE: "shop", LABEL_PREFIX + "app": "web"}
    for i, node in enumerate(nodes):
        running = Allocation(f"web-{i}", "c", c.pname(), Resource({"memory": 10}), node_id=node, tags=web,
                             priority=priority, allow_preempt_self=True)  # fmt: skip
        c.ctx.apply(UpdateAllocations(c.rm_id, allocations=(running,)))
    ask = Allocation("loner", "a", c.pname(), Resource({"memory": 20}), allow_preempt_other=True,
                     tags={TAG_NAMESPACE: "shop", TAG_POD_ANTI_AFFINITY: AWAY_FROM_WEB})  # fmt: skip
    c.ctx.apply(UpdateAllocations(c.rm_id, allocations=(ask,)))
    c.ctx.drain_results()
    return c


def test_pods_behind_an_anti_affinity_rule_are_preempted_when_that_is_what_keeps_the_ask_off() -> None:
    c = _web_on(("n1", "n2"))  # roomy: only the anti-affinity keeps the ask off both
    victims = _run(c)
    assert len(victims) == 1 and victims[0][0] == "c"  # one node's web pod: that node then admits it
    freed = c.partition.applications["c"].allocations[victims[0][1]].node_id
    assert _confirm_and_place(c, victims) == ["loner"]
    assert c.partition.applications["a"].allocations["loner"].node_id == freed


def test_no_preemption_when_a_pod_behind_the_rule_may_not_be_taken() -> None:
    c = _web_on(("n1",), priority=9)  # the web pod outranks the ask: never a victim
    assert _run(c) == []


ZONE = "topology.kubernetes.io/zone"
SPREAD_WEB = json.dumps([{"maxSkew": 1, "topologyKey": ZONE, "whenUnsatisfiable": "DoNotSchedule",
                          "labelSelector": {"matchLabels": {"app": "web"}}}])  # fmt: skip


def _zones_with_web_in_one(web_priority: int = 0) -> Cluster:
    """z1: n1, roomy, with two web pods of root.c; z2: n2, full with root.b at its guarantee (never a
    victim). root.a's web pod spreads over the zones with maxSkew 1: only n1 has room, and z1 is
    already two ahead."""
    c = Cluster(TENANTS % {"offset": 0})
    for node, zone, memory in (("n1", "z1", 100), ("n2", "z2", 40)):
        labels = {LABEL_PREFIX + HOST: node, LABEL_PREFIX + ZONE: zone}
        c.ctx.apply(UpdateNodes(c.rm_id, (NodeChange(node, NodeAction.CREATE, c.pname(), labels,
                                                       Resource({"memory": memory})),)))  # fmt: skip
    for app, queue in (("a", "root.a"), ("b", "root.b"), ("c", "root.c")):
        c.app(app, queue)
    web = {TAG_NAMESPACE: "shop", LABEL_PREFIX + "app": "web"}
    running = [
        Allocation(f"web-{i}", "c", c.pname(), Resource({"memory": 10}), node_id="n1", tags=web,
                   priority=web_priority, allow_preempt_self=True)
        for i in range(2)
    ] + [
        Allocation(f"b-{i}", "b", c.pname(), Resource({"memory": 10}), node_id="n2", allow_preempt_self=True)
        for i in range(4)
    ]  # fmt: skip
    c.ctx.apply(UpdateAllocations(c.rm_id, allocations=tuple(running)))
    ask = Allocation("spread", "a", c.pname(), Resource({"memory": 20}), allow_preempt_other=True,
                     tags={**web, TAG_TOPOLOGY_SPREAD: SPREAD_WEB})  # fmt: skip
    c.ctx.apply(UpdateAllocations(c.rm_id, allocations=(ask,)))
    c.ctx.drain_results()
    return c


def test_pods_a_spread_counts_are_preempted_when_that_brings_the_domain_within_max_skew() -> None:
    c = _zones_with_web_in_one()
    c.schedule()
    assert [a.key for b in c.ctx.drain_results() for a in b.new_allocations] == []  # z1 is 2 ahead of z2
    victims = _run(c)
    # With the ask, z1 may hold at most 1 more than z2 (0): both web pods go, and nothing of root.b.
    assert sorted(victims) == [("c", "web-0"), ("c", "web-1")]
    assert _confirm_and_place(c, victims) == ["spread"]
    assert c.partition.applications["a"].allocations["spread"].node_id == "n1"


def test_no_preemption_for_a_spread_when_its_pods_may_not_be_taken() -> None:
    c = _zones_with_web_in_one(web_priority=9)  # the web pods outrank the ask
    assert _run(c) == []
    reason = c.partition.applications["a"].asks["spread"].preemption_reason
    assert reason.startswith("preemption tried, none possible")


def test_asks_that_fit_the_guarantee_only_one_at_a_time_do_not_all_preempt() -> None:
    """a (guaranteed 60) runs 40 and asks for 10 and then 20 under a full parent max: each alone stays
    within 60, both do not. Only the first may preempt; had both, a would end at 70, above its
    guarantee, and another queue below its own would preempt a's new room straight back (found by
    tests/property/test_preemption_invariants)."""
    c = Cluster(HELD)
    for node in ("n1", "n2"):
        c.node(node, {"memory": 100})  # roomy: the parent's max is what blocks
    for app, queue in (("a", "root.p.a"), ("c", "root.p.c")):
        c.app(app, queue)
    _fill(c, "a", 4)  # 40
    _fill(c, "c", 6)  # 60: p is at its max, c has no guarantee
    _ask(c, "a", "ten", 10)
    c.clock.advance(0.01)
    _ask(c, "a", "twenty", 20)
    taken = [c.partition.applications[app].allocations[key] for app, key in _run(c)]
    assert sum(victim.resource["memory"] for victim in taken) == 10
    assert c.partition.queues["root.p.a"].held == Resource({"memory": 10})  # for "ten" only
    assert "guarantee" in c.partition.applications["a"].asks["twenty"].preemption_reason
