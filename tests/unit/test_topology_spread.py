"""Topology spread constraints (DoNotSchedule) with Kubernetes' semantics, on the examples of its
"Pod Topology Spread Constraints" page, and the counts kept as pods and nodes change."""

from __future__ import annotations

import json
from collections import Counter
from typing import Any

import pytest

from core.constraints.topology_spread import DomainCounts
from core.objects.allocation import Allocation
from core.resources import Resource
from core.scheduler.commands import NodeAction, NodeChange, ReleaseRequest, UpdateAllocations, UpdateNodes
from si.v1.tags import LABEL_PREFIX, TAG_NAMESPACE, TAG_NODE_AFFINITY, TAG_TERMINATING, TAG_TOPOLOGY_SPREAD
from tests.unit.domain_helpers import Cluster
from tests.unit.test_pod_affinity import BINPACKING

ZONE = "zone"
HOST = "node"

# The page's cluster: node1 and node2 in zoneA, node3 and node4 in zoneB.
FOUR_NODES = {"node1": "zoneA", "node2": "zoneA", "node3": "zoneB", "node4": "zoneB"}


def _cluster(nodes: dict[str, str]) -> Cluster:
    c = Cluster()
    for name, zone in nodes.items():
        attributes = {LABEL_PREFIX + ZONE: zone, LABEL_PREFIX + HOST: name}
        change = NodeChange(name, NodeAction.CREATE, c.pname(), attributes, Resource({"memory": 1000}))
        c.ctx.apply(UpdateNodes(c.rm_id, (change,)))
    c.app("app")
    c.ctx.drain_results()
    return c


def _spread(key: str, skew: int = 1, **extra: Any) -> dict[str, Any]:
    return {"maxSkew": skew, "topologyKey": key, "whenUnsatisfiable": "DoNotSchedule",
            "labelSelector": {"matchLabels": {"foo": "bar"}}, **extra}  # fmt: skip


def _tags(*constraints: dict[str, Any], labels: dict[str, str] | None = None) -> dict[str, str]:
    tags = {TAG_NAMESPACE: "default", **{LABEL_PREFIX + k: v for k, v in (labels or {"foo": "bar"}).items()}}
    if constraints:
        tags[TAG_TOPOLOGY_SPREAD] = json.dumps(list(constraints))
    return tags


def _running(c: Cluster, key: str, node: str) -> None:
    alloc = Allocation(key, "app", c.pname(), Resource({"memory": 1}), node_id=node, tags=_tags())
    c.ctx.apply(UpdateAllocations(c.rm_id, allocations=(alloc,)))


def _ask(c: Cluster, key: str, tags: dict[str, str]) -> None:
    c.ctx.apply(
        UpdateAllocations(
            c.rm_id, allocations=(Allocation(key, "app", c.pname(), Resource({"memory": 1}), tags=tags),)
        )
    )


def _placed(c: Cluster) -> dict[str, str]:
    c.schedule()
    return {
        a.key: a.node_id for b in c.ctx.drain_results() for a in b.new_allocations if a.key.startswith("new")
    }


def _documented_start() -> Cluster:
    """Three pods labelled foo=bar on node1, node2 and node3, as on the page."""
    c = _cluster(FOUR_NODES)
    for i, node in enumerate(("node1", "node2", "node3")):
        _running(c, f"p{i}", node)
    return c


def test_one_constraint_puts_the_incoming_pod_in_zone_b() -> None:
    c = _documented_start()
    _ask(c, "new", _tags(_spread(ZONE)))
    assert _placed(c)["new"] in ("node3", "node4")  # zoneA would be 3 against 1: skew 2


def test_two_constraints_leave_only_node4() -> None:
    c = _documented_start()
    _ask(c, "new", _tags(_spread(ZONE), _spread(HOST)))
    assert _placed(c) == {"new": "node4"}


def test_replicas_spread_evenly_and_the_counts_follow_releases() -> None:
    c = _cluster({f"n{i}": f"z{i % 3}" for i in range(6)})
    for i in range(9):
        _ask(c, f"new-{i}", _tags(_spread(ZONE)))
    placed = _placed(c)
    zone_of = {f"n{i}": f"z{i % 3}" for i in range(6)}
    assert Counter(zone_of[n] for n in placed.values()) == {"z0": 3, "z1": 3, "z2": 3}
    in_z0 = [k for k, n in placed.items() if zone_of[n] == "z0"]
    c.ctx.apply(
        UpdateAllocations(c.rm_id, releases=tuple(ReleaseRequest(c.pname(), "app", k) for k in in_z0[:2]))
    )
    for i in range(9, 12):
        _ask(c, f"new-{i}", _tags(_spread(ZONE)))
    later = Counter(zone_of[n] for n in _placed(c).values())
    assert later["z0"] >= 2 and sum(later.values()) == 3  # z0 back to 3 first; then any zone


def test_min_domains_counts_missing_domains_as_empty() -> None:
    c = _cluster({"a1": "A", "b1": "B"})
    for i in range(4):
        _ask(c, f"new-{i}", _tags(_spread(ZONE, minDomains=3)))
    # Two zones of the three wanted: the minimum is 0, so a zone may hold at most maxSkew (1).
    assert sorted(_placed(c).values()) == ["a1", "b1"]
    reasons = {a.pending_reason for a in c.partition.applications["app"].asks.values()}
    assert reasons == {
        "no node has room for it that it may run on (0/2 nodes are available: 2 topology spread constraints)"
    }


def test_node_affinity_policy_decides_which_domains_count() -> None:
    only_ab = {"requiredDuringSchedulingIgnoredDuringExecution": {"nodeSelectorTerms": [
        {"matchExpressions": [{"key": ZONE, "operator": "In", "values": ["A", "B"]}]}]}}  # fmt: skip
    for policy, placed_count in (("Honor", 4), ("Ignore", 2)):
        c = _cluster({"a1": "A", "b1": "B", "c1": "C"})
        for i in range(4):
            tags = _tags(_spread(ZONE, nodeAffinityPolicy=policy))
            tags[TAG_NODE_AFFINITY] = json.dumps(only_ab)
            _ask(c, f"new-{i}", tags)
        # Honor: zone C is not counted, so A and B take two each. Ignore: C (empty, never usable)
        # keeps the minimum at 0, so A and B take one each.
        assert len(_placed(c)) == placed_count, policy


def test_a_pod_that_does_not_match_its_own_selector_does_not_count_itself() -> None:
    c = _documented_start()
    _ask(c, "new", _tags(_spread(ZONE), labels={"other": "x"}))
    assert _placed(c)["new"] in FOUR_NODES  # skew counts only pods it selects: zoneA's 2 - 1 = 1 is fine


def test_a_node_without_the_topology_key_is_not_a_candidate() -> None:
    c = _cluster({"a1": "A"})
    change = NodeChange("bare", NodeAction.CREATE, c.pname(), {}, Resource({"memory": 1000}))
    c.ctx.apply(UpdateNodes(c.rm_id, (change,)))
    for i in range(3):
        _ask(c, f"new-{i}", _tags(_spread(ZONE)))
    assert set(_placed(c).values()) == {"a1"}


@pytest.mark.parametrize(
    ("constraint", "message"),
    [
        ({"maxSkew": 0, "topologyKey": ZONE, "whenUnsatisfiable": "DoNotSchedule"}, "maxSkew"),
        ({"maxSkew": 1, "topologyKey": ZONE, "whenUnsatisfiable": "Sometimes"}, "whenUnsatisfiable"),
        (
            {"maxSkew": 1, "topologyKey": ZONE, "whenUnsatisfiable": "ScheduleAnyway", "minDomains": 2},
            "minDomains",
        ),
        (_spread(ZONE, nodeTaintsPolicy="Maybe"), "nodeTaintsPolicy"),
    ],
)
def test_invalid_constraints_are_refused_with_why(constraint: dict[str, Any], message: str) -> None:
    c = _cluster({"a1": "A"})
    _ask(c, "bad", _tags(constraint))
    c.schedule()
    rejected = [r.reason for b in c.ctx.drain_results() for r in b.rejected_allocations]
    assert len(rejected) == 1 and message in rejected[0]


def test_domain_counts_keep_the_minimum_through_any_moves() -> None:
    counts = DomainCounts()
    for domain in "abc":
        counts.add_node(domain)
    expected = {"a": 0, "b": 0, "c": 0}
    for domain, step in [("a", 1), ("b", 1), ("c", 1), ("a", 1), ("b", -1), ("b", 1), ("c", -1), ("c", 1)]:
        counts.move(domain, step)
        expected[domain] += step
        assert counts.minimum(1) == min(expected.values())
    counts.remove_node("c")
    del expected["c"]
    assert counts.minimum(1) == min(expected.values())
    assert counts.minimum(3) == 0  # fewer domains than wanted


def test_schedule_anyway_spreads_when_it_can_and_places_when_it_cannot() -> None:
    c = Cluster(BINPACKING)
    for name, zone in {"a1": "A", "b1": "B", "c1": "C"}.items():
        attributes = {LABEL_PREFIX + ZONE: zone, LABEL_PREFIX + HOST: name}
        change = NodeChange(name, NodeAction.CREATE, c.pname(), attributes, Resource({"memory": 1000}))
        c.ctx.apply(UpdateNodes(c.rm_id, (change,)))
    c.app("app", "root.default")
    c.ctx.drain_results()
    soft = _spread(ZONE, whenUnsatisfiable="ScheduleAnyway", minDomains=1)
    for i in range(6):
        _ask(c, f"new-{i}", _tags(soft))
    placed = _placed(c)
    assert sorted(Counter(placed.values()).values()) == [2, 2, 2]  # binpacking alone would stack them


def _terminating(c: Cluster, key: str, node: str) -> None:
    """The RM sends a running pod again as its deletion begins (the Kubernetes shim does, on the
    MODIFIED event that sets metadata.deletionTimestamp)."""
    tags = {**_tags(), TAG_TERMINATING: "true"}
    alloc = Allocation(key, "app", c.pname(), Resource({"memory": 1}), node_id=node, tags=tags)
    alloc.terminating = True  # as si_inbound reads the tag
    c.ctx.apply(UpdateAllocations(c.rm_id, allocations=(alloc,)))


def test_a_terminating_pod_leaves_the_spread_counts_but_keeps_its_room() -> None:
    # kube-scheduler's TestSingleConstraint "terminating Pods should be excluded", with the counts kept
    # before the deletion begins: one pod in zoneA and one in zoneB; the first new pod evens zoneC.
    c = _cluster({"a1": "zoneA", "b1": "zoneB", "c1": "zoneC"})
    _running(c, "p-a", "a1")
    _running(c, "p-b", "b1")
    _ask(c, "new-1", _tags(_spread(ZONE)))
    assert _placed(c) == {"new-1": "c1"}
    _terminating(c, "p-a", "a1")  # zoneA now counts 0: the next pod may only go there
    _ask(c, "new-2", _tags(_spread(ZONE)))
    assert _placed(c) == {"new-2": "a1"}
    assert c.partition.nodes["a1"].allocated.get("memory") == 2  # the terminating pod still holds its room


def test_a_pod_that_arrives_terminating_is_never_counted() -> None:
    c = _cluster({"a1": "zoneA", "b1": "zoneB"})
    _terminating(c, "p-a", "a1")
    _running(c, "p-b", "b1")
    _ask(c, "new", _tags(_spread(ZONE)))
    assert _placed(c) == {"new": "a1"}


def test_a_node_missing_any_hard_constraints_key_counts_for_none() -> None:
    # kube-scheduler's nodeLabelsMatchSpreadConstraints: node x (zone2, no "node" label) holds a pod, but
    # with constraints on zone and node it counts in no domain; so zone2 holds 0 pods and zone1's node
    # b would make zone1 2 against 0.
    c = Cluster()
    layout = {"a": ("zone1", "a"), "b": ("zone1", "b"), "x": ("zone2", None), "y": ("zone2", "y")}
    for name, (zone, host) in layout.items():
        attributes = {LABEL_PREFIX + ZONE: zone}
        if host is not None:
            attributes[LABEL_PREFIX + HOST] = host
        change = NodeChange(name, NodeAction.CREATE, c.pname(), attributes, Resource({"memory": 1000}))
        c.ctx.apply(UpdateNodes(c.rm_id, (change,)))
    c.app("app")
    _running(c, "p-a", "a")
    _running(c, "p-x", "x")
    _ask(c, "new", _tags(_spread(ZONE), _spread(HOST)))
    assert _placed(c) == {"new": "y"}
