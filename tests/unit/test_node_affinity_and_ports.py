"""Node affinity and host ports, with Kubernetes' semantics: the rules against its documented examples,
what Kubernetes' validation refuses, and where a cluster then places asks."""

from __future__ import annotations

import json
from typing import Any

import pytest

from core.constraints.ask import ConstraintError
from core.constraints.host_ports import HostPort, PortsInUse
from core.constraints.node_affinity import AffinityError, parse_node_affinity
from core.objects.allocation import Allocation
from core.resources import Resource
from core.scheduler.commands import NodeAction, NodeChange, UpdateAllocations, UpdateNodes
from si.v1.tags import LABEL_PREFIX, TAG_FOREIGN, TAG_HOST_PORTS, TAG_NODE_AFFINITY
from tests.unit.domain_helpers import Cluster

ZONE = "topology.kubernetes.io/zone"

# The example of Kubernetes' "Assigning Pods to Nodes" page (node affinity): required zone in
# antarctica-east1 or antarctica-west1, preferred another-node-label-key=another-node-label-value.
DOC_EXAMPLE = {
    "requiredDuringSchedulingIgnoredDuringExecution": {
        "nodeSelectorTerms": [
            {
                "matchExpressions": [
                    {"key": ZONE, "operator": "In", "values": ["antarctica-east1", "antarctica-west1"]}
                ]
            }
        ]
    },
    "preferredDuringSchedulingIgnoredDuringExecution": [
        {
            "weight": 1,
            "preference": {
                "matchExpressions": [
                    {
                        "key": "another-node-label-key",
                        "operator": "In",
                        "values": ["another-node-label-value"],
                    }
                ]
            },
        }
    ],
}


def _required(*terms: dict[str, Any]) -> dict[str, Any]:
    return {"requiredDuringSchedulingIgnoredDuringExecution": {"nodeSelectorTerms": list(terms)}}


def _expr(key: str, operator: str, *values: str) -> dict[str, Any]:
    return {"matchExpressions": [{"key": key, "operator": operator, "values": list(values)}]}


def test_the_documented_example_requires_the_zone_and_prefers_the_other_label() -> None:
    affinity = parse_node_affinity(DOC_EXAMPLE, "t")
    assert affinity.admits("n", {ZONE: "antarctica-east1"})
    assert affinity.admits("n", {ZONE: "antarctica-west1", "other": "x"})
    assert not affinity.admits("n", {ZONE: "africa-north1"})
    assert not affinity.admits("n", {})
    assert (
        affinity.score("n", {ZONE: "antarctica-east1", "another-node-label-key": "another-node-label-value"})
        == 1
    )
    assert affinity.score("n", {ZONE: "antarctica-east1"}) == 0


@pytest.mark.parametrize(
    ("operator", "values", "labels", "admitted"),
    [
        ("In", ["a", "b"], {"k": "b"}, True),
        ("In", ["a"], {}, False),
        ("NotIn", ["a"], {"k": "b"}, True),
        ("NotIn", ["a"], {}, True),  # as Kubernetes: a node without the label is not in the set
        ("NotIn", ["a"], {"k": "a"}, False),
        ("Exists", [], {"k": ""}, True),
        ("Exists", [], {}, False),
        ("DoesNotExist", [], {}, True),
        ("DoesNotExist", [], {"k": "x"}, False),
        ("Gt", ["5"], {"k": "6"}, True),
        ("Gt", ["5"], {"k": "5"}, False),
        ("Gt", ["5"], {"k": "six"}, False),  # not an integer: no match
        ("Gt", ["5"], {}, False),
        ("Lt", ["5"], {"k": "-1"}, True),
        ("Lt", ["5"], {"k": "5"}, False),
    ],
)
def test_each_operator_matches_as_kubernetes_does(
    operator: str, values: list[str], labels: dict[str, str], admitted: bool
) -> None:
    affinity = parse_node_affinity(_required(_expr("k", operator, *values)), "t")
    assert affinity.admits("n", labels) is admitted


def test_terms_are_ored_and_requirements_inside_a_term_anded() -> None:
    both = {"matchExpressions": [{"key": "a", "operator": "Exists"}, {"key": "b", "operator": "Exists"}]}
    affinity = parse_node_affinity(_required(both, _expr("c", "In", "1")), "t")
    assert affinity.admits("n", {"a": "", "b": ""})
    assert not affinity.admits("n", {"a": ""})
    assert affinity.admits("n", {"c": "1"})


def test_match_fields_on_the_node_name_and_an_empty_term_matching_nothing() -> None:
    by_name = {"matchFields": [{"key": "metadata.name", "operator": "In", "values": ["n7"]}]}
    affinity = parse_node_affinity(_required(by_name), "t")
    assert affinity.admits("n7", {}) and not affinity.admits("n8", {})
    assert not parse_node_affinity(_required({}), "t").admits("n7", {"any": "x"})


def test_preferred_weights_add_up_per_matching_term() -> None:
    affinity = parse_node_affinity(
        {
            "preferredDuringSchedulingIgnoredDuringExecution": [
                {"weight": 80, "preference": _expr("disk", "In", "ssd")},
                {"weight": 20, "preference": _expr(ZONE, "In", "a")},
            ]
        },
        "t",
    )
    assert affinity.admits("n", {})  # no requirement
    assert affinity.score("n", {"disk": "ssd", ZONE: "a"}) == 100
    assert affinity.score("n", {ZONE: "a"}) == 20


@pytest.mark.parametrize(
    ("raw", "message"),
    [
        ({"requiredDuringSchedulingIgnoredDuringExecution": {"nodeSelectorTerms": []}}, "at least one"),
        (_required(_expr("k", "In")), "needs at least one value"),
        (_required(_expr("k", "Exists", "x")), "takes no values"),
        (_required(_expr("k", "Gt", "1", "2")), "exactly one value"),
        (_required(_expr("k", "Near", "x")), "operator must be one of"),
        (
            _required({"matchFields": [{"key": "metadata.uid", "operator": "In", "values": ["x"]}]}),
            "only key",
        ),
        ({"preferredDuringSchedulingIgnoredDuringExecution": [{"weight": 0, "preference": {}}]}, "1 to 100"),
        ([], "must be a JSON object"),
    ],
)
def test_what_kubernetes_validation_refuses_is_refused_with_why(raw: object, message: str) -> None:
    with pytest.raises(AffinityError, match=message):
        parse_node_affinity(raw, "t")


def test_host_ports_conflict_by_protocol_port_and_overlapping_addresses() -> None:
    used = PortsInUse()
    used.add((HostPort(8080, "TCP", "127.0.0.1"),))
    assert used.conflict((HostPort(8080, "TCP", "0.0.0.0"),)) is not None  # every address includes it
    assert used.conflict((HostPort(8080, "TCP", "127.0.0.1"),)) is not None
    assert used.conflict((HostPort(8080, "TCP", "127.0.0.2"),)) is None
    assert used.conflict((HostPort(8080, "UDP", "127.0.0.1"),)) is None
    used.remove((HostPort(8080, "TCP", "127.0.0.1"),))
    assert used.conflict((HostPort(8080, "TCP", "0.0.0.0"),)) is None and not used


# In a cluster --------------------------------------------------------------------------------------


def _node(c: Cluster, node_id: str, labels: dict[str, str]) -> None:
    attributes = {LABEL_PREFIX + k: v for k, v in labels.items()}
    change = NodeChange(node_id, NodeAction.CREATE, c.pname(), attributes, Resource({"memory": 100}))
    c.ctx.apply(UpdateNodes(c.rm_id, (change,)))


def _ask(c: Cluster, key: str, tags: dict[str, str], app: str = "app") -> None:
    alloc = Allocation(key, app, c.pname(), Resource({"memory": 10}), tags=tags)
    c.ctx.apply(UpdateAllocations(c.rm_id, allocations=(alloc,)))


def _placed(c: Cluster) -> dict[str, str]:
    return {a.key: a.node_id for b in c.ctx.drain_results() for a in b.new_allocations}


def _zones_cluster() -> Cluster:
    c = Cluster()
    _node(c, "east", {ZONE: "antarctica-east1"})
    _node(c, "north", {ZONE: "africa-north1"})
    _node(c, "west", {ZONE: "antarctica-west1", "another-node-label-key": "another-node-label-value"})
    c.app("app")
    c.ctx.drain_results()
    return c


def test_required_affinity_keeps_asks_off_other_nodes_and_says_so_when_none_admits() -> None:
    c = _zones_cluster()
    only_north = _required(_expr(ZONE, "In", "africa-north1"))
    for i in range(3):
        _ask(c, f"north-{i}", {TAG_NODE_AFFINITY: json.dumps(only_north)})
    _ask(c, "mars", {TAG_NODE_AFFINITY: json.dumps(_required(_expr(ZONE, "In", "mars")))})
    c.schedule()
    assert _placed(c) == {"north-0": "north", "north-1": "north", "north-2": "north"}
    reason = c.partition.applications["app"].asks["mars"].pending_reason
    assert reason.endswith("(0/3 nodes are available: 3 didn't match node affinity)")


def test_preferred_affinity_wins_over_the_node_sort_order() -> None:
    c = _zones_cluster()
    c.ask("app", "busy", {"memory": 50}, node_id="west")  # fair policy: west, the busiest, comes last
    c.ctx.drain_results()
    _ask(c, "plain", {})
    _ask(c, "doc", {TAG_NODE_AFFINITY: json.dumps(DOC_EXAMPLE)})
    c.schedule()
    assert _placed(c) == {"plain": "east", "doc": "west"}


def test_a_host_port_is_used_once_per_node_and_a_foreign_pod_holds_its_port() -> None:
    c = Cluster()
    for n in ("n1", "n2", "n3"):
        c.node(n, {"memory": 100})
    c.app("app")
    port = json.dumps([{"hostPort": 9100, "protocol": "TCP", "hostIP": "0.0.0.0"}])
    foreign = Allocation("other", "", c.pname(), Resource({"memory": 1}), node_id="n3",
                         tags={TAG_FOREIGN: "default", TAG_HOST_PORTS: port}, foreign=True)  # fmt: skip
    c.ctx.apply(UpdateAllocations(c.rm_id, allocations=(foreign,)))
    for i in range(3):
        _ask(c, f"exporter-{i}", {TAG_HOST_PORTS: port})
    c.schedule()
    placed = _placed(c)
    assert sorted(placed.values()) == ["n1", "n2"]  # one per node, none on n3 (the foreign pod's port)
    c.release("app", next(k for k, n in placed.items() if n == "n1"))
    c.schedule()
    assert list(_placed(c).values()) == ["n1"]  # the port is free again once its pod is gone


def test_malformed_affinity_or_ports_are_refused_with_the_reason() -> None:
    c = Cluster()
    c.node("n1", {"memory": 100})
    c.app("app")
    _ask(c, "bad-affinity", {TAG_NODE_AFFINITY: json.dumps(_required(_expr("k", "Gt", "1", "2")))})
    _ask(c, "bad-port", {TAG_HOST_PORTS: json.dumps([{"hostPort": 70000}])})
    c.schedule()
    rejected = {r.key: r.reason for b in c.ctx.drain_results() for r in b.rejected_allocations}
    assert "exactly one value" in rejected["bad-affinity"]
    assert "port number" in rejected["bad-port"]
    with pytest.raises(ConstraintError):
        from core.constraints.ask import parse_ask_constraints

        parse_ask_constraints({TAG_HOST_PORTS: "{"}, "x")


@pytest.mark.parametrize(
    "expression",
    [_expr("zone", "In", "not a label value"), _expr("zone", "NotIn", "x" * 64), _expr("size", "Gt", "ten")],
)
def test_a_term_kube_scheduler_cannot_read_matches_no_node_while_the_others_count(
    expression: dict[str, Any],
) -> None:
    # The API server takes these; kube-scheduler's node selector drops the term (it matches nothing).
    unreadable, readable = expression, _expr("zone", "In", "b")
    affinity = parse_node_affinity(
        {"requiredDuringSchedulingIgnoredDuringExecution": {"nodeSelectorTerms": [unreadable]}}, "t"
    )
    assert not affinity.admits("n1", {"zone": "a", "size": "5"})
    both = parse_node_affinity(
        {"requiredDuringSchedulingIgnoredDuringExecution": {"nodeSelectorTerms": [unreadable, readable]}}, "t"
    )
    assert both.admits("n1", {"zone": "b"}) and not both.admits("n2", {"zone": "c"})
