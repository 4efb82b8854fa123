"""kube-scheduler's node Filter plugins' own tables, run through pykorn's Kubernetes shim and core.

Ported from kubernetes/kubernetes, pkg/scheduler/framework/plugins/ (each file at the commit recorded
in tests.conformance.kube_scheduler.upstream.KUBERNETES_COMMIT):

- nodeunschedulable/node_unschedulable_test.go  TestNodeUnschedulable       3 rows, 3 ported
- tainttoleration/taint_toleration_test.go      TestTaintTolerationFilter   9 rows, 9 ported
- nodeaffinity/node_affinity_test.go            TestNodeAffinity           31 rows, 28 ported
- nodename/node_name_test.go                    TestNodeName                3 rows, 3 ported
- nodeports/node_ports_test.go                  TestNodePorts              13 rows, 13 ported
- noderesources/fit_test.go                     TestEnoughRequests         35 rows, 33 ported
                                                TestNotEnoughRequests       4 rows, 4 ported
                                                TestStorageRequests         4 rows, 4 ported
                                                TestRestartableInitContainers 4 rows, 3 ported
                                                                           106 rows, 100 ported

Each row is one pytest case named `Test.../<row name>`. Its Node and Pods are written as the API serves
them and go through the shim's own translation (see kube_case): the node as the shim registers it
(cordoned: CREATE_DRAIN), the pods already on the node as another scheduler's pods (foreign
allocations), then the pod to schedule as an ask of its application. Filter success is the core placing
the pod on the node; failure is the pod still pending once the core has decided (client.barrier()).

Where the upstream row leaves something out that a real cluster has, the case supplies it without
changing what the row decides: a pod gets a plain container when the row has none, a node that the row
gives no resources gets room (kube_case.ROOM), a nameless node a name, and a container port its
containerPort. In TestNodePorts the helper gives the pod to schedule a nodeName too; kube-scheduler's
Filter ignores it, while the shim would send such a pod as already bound: the pod is sent without it.
In TestNodeName the pod's nodeName is what the row is about: such a pod is not scheduled by anyone, the
shim reports it on its node (an existing allocation), and that is what the case asserts.

Known to differ today (the upstream expectation is kept):
- TestNodeUnschedulable/Schedule pod with toleration to unschedulable node: the shim sends a cordoned
  node as draining, and the core never places on it, toleration or not.
- TestNodeAffinity/Pod with an invalid value in Affinity term won't be scheduled onto the node: the core
  compares the value as a plain string; kube-scheduler cannot parse it and the term matches nothing.

Not ported (6):
- TestNodeAffinity/Matches added affinity and Pod's node affinity,
  TestNodeAffinity/Matches added affinity but not Pod's node affinity,
  TestNodeAffinity/Doesn't match added affinity: the plugin's AddedAffinity argument is a scheduler
  profile setting; pykorn has no scheduler profiles to set it in.
- TestEnoughRequests/skip checking ignored extended resource,
  TestEnoughRequests/skip checking ignored extended resource via resource groups: the plugin's
  IgnoredResources / IgnoredResourceGroups arguments, scheduler profile settings pykorn has not.
- TestRestartableInitContainers/not allow pod with restartable init containers if sidecar containers is
  disabled: needs the SidecarContainers feature gate off; pykorn always counts sidecars (the gate is
  locked on since Kubernetes 1.33).
Not in scope: TestPreFilterDisabled (nodeports, noderesources) calls Filter without PreFilter, a
framework-internal situation; the Score, queueing-hint and helper tests of the same files are not
Filter tables.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Any

import pytest

from tests.conformance.core_probe import CoreProbe
from tests.conformance.kube_scheduler import kube_case as k
from tests.conformance.kube_scheduler.upstream import KUBERNETES_COMMIT, PLUGINS, kube_case

# The files ported here, with the commit each was read at (a KeyError here: record it in upstream.py).
SOURCES = {
    path: KUBERNETES_COMMIT[path]
    for path in (
        f"{PLUGINS}/nodeunschedulable/node_unschedulable_test.go",
        f"{PLUGINS}/tainttoleration/taint_toleration_test.go",
        f"{PLUGINS}/nodeaffinity/node_affinity_test.go",
        f"{PLUGINS}/nodename/node_name_test.go",
        f"{PLUGINS}/nodeports/node_ports_test.go",
        f"{PLUGINS}/noderesources/fit_test.go",
    )
}

Obj = dict[str, Any]
NODE = "node1"  # the name given to a node the upstream row leaves nameless


async def expect(probe: CoreProbe, target: Obj, candidate: Obj, running: Sequence[Obj], fits: bool) -> None:
    outcome = await k.filter_case(probe, target, candidate, running)
    name = candidate["metadata"]["name"]
    if fits:
        assert outcome.node == name, f"the pod was not placed on {name}: {outcome}"
    else:  # unschedulable: left pending, not refused
        assert outcome.node != name, f"the pod was placed on {name}, which the Filter refuses"
        assert not outcome.rejected, f"the core refused the pod instead of leaving it pending: {outcome}"


# NodeUnschedulable ------------------------------------------------------------------------------

UNSCHEDULABLE_TAINT = "node.kubernetes.io/unschedulable"


@pytest.mark.parametrize(
    ("tolerations", "unschedulable", "fits"),
    [
        pytest.param(
            (), True, False,
            id=kube_case("TestNodeUnschedulable",
                         "Does not schedule pod to unschedulable node (node.Spec.Unschedulable==true)"),
        ),
        pytest.param((), False, True, id=kube_case("TestNodeUnschedulable", "Schedule pod to normal node")),
        pytest.param(
            ({"key": UNSCHEDULABLE_TAINT, "effect": "NoSchedule"},), True, True,
            id=kube_case(
                "TestNodeUnschedulable",
                "Schedule pod with toleration to unschedulable node (node.Spec.Unschedulable==true)",
            ),
        ),
    ],
)  # fmt: skip
async def test_node_unschedulable(
    probe: CoreProbe, tolerations: Sequence[Mapping[str, str]], unschedulable: bool, fits: bool
) -> None:
    target = k.pod(tolerations=tolerations)
    await expect(probe, target, k.node(NODE, unschedulable=unschedulable), (), fits)


# TaintToleration --------------------------------------------------------------------------------


def taint(key: str, value: str, effect: str) -> dict[str, str]:
    return {"key": key, "value": value, "effect": effect}


def toleration(key: str, operator: str = "", value: str = "", effect: str = "") -> dict[str, str]:
    """A toleration with the fields the row sets (Kubernetes omits empty ones)."""
    fields = {"key": key, "operator": operator, "value": value, "effect": effect}
    return {name: text for name, text in fields.items() if text}


TAINT_CASES = [
    (
        "A pod having no tolerations can't be scheduled onto a node with nonempty taints",
        [], [taint("dedicated", "user1", "NoSchedule")], False,
    ),
    (
        "A pod which can be scheduled on a dedicated node assigned to user1 with effect NoSchedule",
        [toleration("dedicated", value="user1", effect="NoSchedule")],
        [taint("dedicated", "user1", "NoSchedule")], True,
    ),
    (
        "A pod which can't be scheduled on a dedicated node assigned to user2 with effect NoSchedule",
        [toleration("dedicated", "Equal", "user2", "NoSchedule")],
        [taint("dedicated", "user1", "NoSchedule")], False,
    ),
    (
        "A pod can be scheduled onto the node, with a toleration uses operator Exists that tolerates the "
        "taints on the node",
        [toleration("foo", "Exists", effect="NoSchedule")], [taint("foo", "bar", "NoSchedule")], True,
    ),
    (
        "A pod has multiple tolerations, node has multiple taints, all the taints are tolerated, pod can be "
        "scheduled onto the node",
        [
            toleration("dedicated", "Equal", "user2", "NoSchedule"),
            toleration("foo", "Exists", effect="NoSchedule"),
        ],
        [taint("dedicated", "user2", "NoSchedule"), taint("foo", "bar", "NoSchedule")], True,
    ),
    (
        "A pod has a toleration that keys and values match the taint on the node, but (non-empty) effect "
        "doesn't match, can't be scheduled onto the node",
        [toleration("foo", "Equal", "bar", "PreferNoSchedule")], [taint("foo", "bar", "NoSchedule")], False,
    ),
    (
        "The pod has a toleration that keys and values match the taint on the node, the effect of toleration "
        "is empty, and the effect of taint is NoSchedule. Pod can be scheduled onto the node",
        [toleration("foo", "Equal", "bar")], [taint("foo", "bar", "NoSchedule")], True,
    ),
    (
        "The pod has a toleration that key and value don't match the taint on the node, but the effect of "
        "taint on node is PreferNoSchedule. Pod can be scheduled onto the node",
        [toleration("dedicated", "Equal", "user2", "NoSchedule")],
        [taint("dedicated", "user1", "PreferNoSchedule")], True,
    ),
    (
        "The pod has no toleration, but the effect of taint on node is PreferNoSchedule. Pod can be "
        "scheduled onto the node",
        [], [taint("dedicated", "user1", "PreferNoSchedule")], True,
    ),
]  # fmt: skip


@pytest.mark.parametrize(
    ("tolerations", "taints", "fits"),
    [pytest.param(t, n, f, id=kube_case("TestTaintTolerationFilter", name)) for name, t, n, f in TAINT_CASES],
)
async def test_taint_toleration_filter(
    probe: CoreProbe, tolerations: list[dict[str, str]], taints: list[dict[str, str]], fits: bool
) -> None:
    await expect(probe, k.pod("pod1", tolerations=tolerations), k.node("nodeA", taints=taints), (), fits)


# NodeAffinity -----------------------------------------------------------------------------------


def expr(key: str, operator: str, *values: str) -> Obj:
    out: Obj = {"key": key, "operator": operator}
    if values:
        out["values"] = list(values)
    return out


def name_in(*values: str) -> Obj:
    return expr("metadata.name", "In", *values)


def required(*terms: Obj) -> Obj:
    """spec.affinity with required node affinity of these nodeSelectorTerms."""
    return {
        "nodeAffinity": {"requiredDuringSchedulingIgnoredDuringExecution": {"nodeSelectorTerms": list(terms)}}
    }


def term(expressions: Sequence[Obj] | None = None, fields: Sequence[Obj] | None = None) -> Obj:
    out: Obj = {}
    if expressions is not None:
        out["matchExpressions"] = list(expressions)
    if fields is not None:
        out["matchFields"] = list(fields)
    return out


# (row name, nodeSelector, affinity, node labels, node name ("" none), fits)
AFFINITY_CASES: list[tuple[str, dict[str, str] | None, Obj | None, dict[str, str], str, bool]] = [
    ("missing labels", {"foo": "bar"}, None, {}, "", False),
    ("same labels", {"foo": "bar"}, None, {"foo": "bar"}, "", True),
    ("node labels are superset", {"foo": "bar"}, None, {"foo": "bar", "baz": "blah"}, "", True),
    ("node labels are subset", {"foo": "bar", "baz": "blah"}, None, {"foo": "bar"}, "", False),
    (
        "Pod with matchExpressions using In operator that matches the existing node",
        None, required(term([expr("foo", "In", "bar", "value2")])), {"foo": "bar"}, "", True,
    ),
    (
        "Pod with matchExpressions using Gt operator that matches the existing node",
        None, required(term([expr("kernel-version", "Gt", "0204")])), {"kernel-version": "0206"}, "", True,
    ),
    (
        "Pod with matchExpressions using NotIn operator that matches the existing node",
        None, required(term([expr("mem-type", "NotIn", "DDR", "DDR2")])), {"mem-type": "DDR3"}, "", True,
    ),
    (
        "Pod with matchExpressions using Exists operator that matches the existing node",
        None, required(term([expr("GPU", "Exists")])), {"GPU": "NVIDIA-GRID-K1"}, "", True,
    ),
    (
        "Pod with affinity that don't match node's labels won't schedule onto the node",
        None, required(term([expr("foo", "In", "value1", "value2")])), {"foo": "bar"}, "", False,
    ),
    (
        "Pod with empty MatchExpressions is not a valid value will match no objects and won't schedule onto "
        "the node",
        None, required(term([])), {"foo": "bar"}, "", False,
    ),
    ("Pod with no Affinity will schedule onto a node", None, None, {"foo": "bar"}, "", True),
    (
        "Pod with Affinity but nil NodeSelector will schedule onto a node",
        None, {"nodeAffinity": {}}, {"foo": "bar"}, "", True,
    ),
    (
        "Pod with multiple matchExpressions ANDed that matches the existing node",
        None, required(term([expr("GPU", "Exists"), expr("GPU", "NotIn", "AMD", "INTER")])),
        {"GPU": "NVIDIA-GRID-K1"}, "", True,
    ),
    (
        "Pod with multiple matchExpressions ANDed that doesn't match the existing node",
        None, required(term([expr("GPU", "Exists"), expr("GPU", "In", "AMD", "INTER")])),
        {"GPU": "NVIDIA-GRID-K1"}, "", False,
    ),
    (
        "Pod with multiple NodeSelectorTerms ORed in affinity, matches the node's labels and will schedule "
        "onto the node",
        None,
        required(
            term([expr("foo", "In", "bar", "value2")]), term([expr("diffkey", "In", "wrong", "value2")])
        ),
        {"foo": "bar"}, "", True,
    ),
    (
        "Pod with an Affinity and a PodSpec.NodeSelector(the old thing that we are deprecating) both are "
        "satisfied, will schedule onto the node",
        {"foo": "bar"}, required(term([expr("foo", "Exists")])), {"foo": "bar"}, "", True,
    ),
    (
        "Pod with an Affinity matches node's labels but the PodSpec.NodeSelector(the old thing that we are "
        "deprecating) is not satisfied, won't schedule onto the node",
        {"foo": "bar"}, required(term([expr("foo", "Exists")])), {"foo": "barrrrrr"}, "", False,
    ),
    (
        "Pod with an invalid value in Affinity term won't be scheduled onto the node",
        None, required(term([expr("foo", "NotIn", "invalid value: ___@#$%^")])), {"foo": "bar"}, "", False,
    ),
    (
        "Pod with matchFields using In operator that matches the existing node",
        None, required(term(fields=[name_in("node1")])), {}, "node1", True,
    ),
    (
        "Pod with matchFields using In operator that does not match the existing node",
        None, required(term(fields=[name_in("node1")])), {}, "node2", False,
    ),
    (
        "Pod with two terms: matchFields does not match, but matchExpressions matches",
        None,
        required(term(fields=[name_in("node1"), name_in("node2")]), term([expr("foo", "In", "bar")])),
        {"foo": "bar"}, "node2", True,
    ),
    (
        "Pod with one term: matchFields does not match, but matchExpressions matches",
        None, required(term([expr("foo", "In", "bar")], [name_in("node1")])), {"foo": "bar"}, "node2", False,
    ),
    (
        "Pod with one term: both matchFields and matchExpressions match",
        None, required(term([expr("foo", "In", "bar")], [name_in("node1")])), {"foo": "bar"}, "node1", True,
    ),
    (
        "Pod with two terms: both matchFields and matchExpressions do not match",
        None,
        required(term(fields=[name_in("node1")]), term([expr("foo", "In", "not-match-to-bar")])),
        {"foo": "bar"}, "node2", False,
    ),
    (
        "Pod with two terms of node.Name affinity",
        None, required(term(fields=[name_in("node1")]), term(fields=[name_in("node2")])), {}, "node2", True,
    ),
    (
        "Pod with two conflicting mach field requirements",
        None, required(term(fields=[name_in("node1"), name_in("node2")])), {"foo": "bar"}, "node2", False,
    ),
    (
        "Matches node selector correctly even if PreFilter is not called",
        {"foo": "bar"}, None, {"foo": "bar", "baz": "blah"}, "", True,
    ),
    (
        "Matches node affinity correctly even if PreFilter is not called",
        None, required(term([expr("GPU", "Exists"), expr("GPU", "NotIn", "AMD", "INTER")])),
        {"GPU": "NVIDIA-GRID-K1"}, "", True,
    ),
]  # fmt: skip


@pytest.mark.parametrize(
    ("selector", "affinity", "labels", "node_name", "fits"),
    [pytest.param(*row, id=kube_case("TestNodeAffinity", name)) for name, *row in AFFINITY_CASES],
)
async def test_node_affinity(
    probe: CoreProbe,
    selector: dict[str, str] | None,
    affinity: Obj | None,
    labels: dict[str, str],
    node_name: str,
    fits: bool,
) -> None:
    target = k.pod(node_selector=selector, affinity=affinity)
    await expect(probe, target, k.node(node_name or NODE, labels=labels), (), fits)


# NodeName ---------------------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("pod_node", "fits"),
    [
        pytest.param("", True, id=kube_case("TestNodeName", "no host specified")),
        pytest.param("foo", True, id=kube_case("TestNodeName", "host matches")),
        pytest.param("bar", False, id=kube_case("TestNodeName", "host doesn't match")),
    ],
)
async def test_node_name(probe: CoreProbe, pod_node: str, fits: bool) -> None:
    """A pod naming its node is bound already: the shim reports it there (an existing allocation), nobody
    schedules it. On a node the core does not know, the core refuses it and the shim keeps it until
    that node is added (decisions._rejected, pods._adopt_orphans): it is never put on another node."""
    outcome = await k.filter_case(probe, k.pod(node_name=pod_node), k.node("foo"))
    if fits:
        assert outcome.node == "foo", outcome
    else:
        assert outcome.node != "foo", outcome
        assert pod_node in outcome.rejected, outcome


# NodePorts --------------------------------------------------------------------------------------


def with_ports(*specs: str, node_name: str = "", scheduler: str = k.SCHEDULER) -> Obj:
    """A pod with one container using host ports written as upstream's helper takes them:
    "PROTOCOL/hostIP/port"."""
    ports = []
    for spec in specs:
        protocol, host_ip, port = spec.split("/")
        ports.append(
            {"containerPort": int(port), "hostPort": int(port), "protocol": protocol, "hostIP": host_ip}
        )
    return k.pod(containers=[k.container(ports=ports)], node_name=node_name, scheduler=scheduler)


# (row name, the pod's ports, the running pod's ports (None: no pod on the node), fits)
PORT_CASES: list[tuple[str, tuple[str, ...], tuple[str, ...] | None, bool]] = [
    ("skip filter", (), None, True),
    ("other port", ("UDP/127.0.0.1/8080",), ("UDP/127.0.0.1/9090",), True),
    ("same udp port", ("UDP/127.0.0.1/8080",), ("UDP/127.0.0.1/8080",), False),
    ("same tcp port", ("TCP/127.0.0.1/8080",), ("TCP/127.0.0.1/8080",), False),
    ("different host ip", ("TCP/127.0.0.1/8080",), ("TCP/127.0.0.2/8080",), True),
    ("different protocol", ("UDP/127.0.0.1/8080",), ("TCP/127.0.0.1/8080",), True),
    (
        "second udp port conflict",
        ("UDP/127.0.0.1/8000", "UDP/127.0.0.1/8080"), ("UDP/127.0.0.1/8080",), False,
    ),
    (
        "first tcp port conflict",
        ("TCP/127.0.0.1/8001", "UDP/127.0.0.1/8080"), ("TCP/127.0.0.1/8001", "UDP/127.0.0.1/8081"), False,
    ),
    ("first tcp port conflict due to 0.0.0.0 hostIP", ("TCP/0.0.0.0/8001",), ("TCP/127.0.0.1/8001",), False),
    (
        "TCP hostPort conflict due to 0.0.0.0 hostIP",
        ("TCP/10.0.10.10/8001", "TCP/0.0.0.0/8001"), ("TCP/127.0.0.1/8001",), False,
    ),
    ("second tcp port conflict to 0.0.0.0 hostIP", ("TCP/127.0.0.1/8001",), ("TCP/0.0.0.0/8001",), False),
    ("second different protocol", ("UDP/127.0.0.1/8001",), ("TCP/0.0.0.0/8001",), True),
    (
        "UDP hostPort conflict due to 0.0.0.0 hostIP",
        ("UDP/127.0.0.1/8001",), ("TCP/0.0.0.0/8001", "UDP/0.0.0.0/8001"), False,
    ),
]  # fmt: skip


@pytest.mark.parametrize(
    ("wanted", "used", "fits"),
    [pytest.param(*row, id=kube_case("TestNodePorts", name)) for name, *row in PORT_CASES],
)
async def test_node_ports(
    probe: CoreProbe, wanted: tuple[str, ...], used: tuple[str, ...] | None, fits: bool
) -> None:
    running = [] if used is None else [with_ports(*used, node_name="m1", scheduler=k.OTHER_SCHEDULER)]
    target = with_ports(*wanted) if wanted else k.pod()
    await expect(probe, target, k.node("m1"), running, fits)


# NodeResourcesFit -------------------------------------------------------------------------------

EXT_A = "example.com/aaa"
EXT_B = "example.com/bbb"
K8S_IO_A = "kubernetes.io/something"
K8S_IO_B = "subdomain.kubernetes.io/something"
HUGE_A = "hugepages-2Mi"

Use = dict[str, str]  # one container's requests


def use(cpu: int = 0, memory: int = 0, storage: int = 0, **scalars: int) -> Use:
    """A container's requests as upstream's helper writes them: cpu in milli-cores, memory and
    ephemeral storage in bytes (zero included), and the scalar resources given (`ext_a=...` etc.)."""
    names = {"ext_a": EXT_A, "ext_b": EXT_B, "k8s_io_a": K8S_IO_A, "k8s_io_b": K8S_IO_B, "huge_a": HUGE_A}
    out = {"cpu": f"{cpu}m", "memory": str(memory), "ephemeral-storage": str(storage)}
    out.update((names[name], str(value)) for name, value in scalars.items())
    return out


def allocatable(cpu: int, memory: int, pods: int, ext_a: int, storage: int, huge_a: int) -> dict[str, str]:
    return {
        "cpu": f"{cpu}m", "memory": str(memory), "pods": str(pods), EXT_A: str(ext_a),
        "ephemeral-storage": str(storage), HUGE_A: str(huge_a),
    }  # fmt: skip


def resource_pod(
    containers: Sequence[Use] = (),
    inits: Sequence[Use] = (),
    overhead: Mapping[str, str] | None = None,
    node_name: str = "",
) -> Obj:
    """A pod with one container per `containers` entry (none: a plain container, as an empty pod)."""
    return k.pod(
        containers=[k.container(f"c{i}", requests) for i, requests in enumerate(containers)] or None,
        init_containers=[k.container(f"init{i}", requests) for i, requests in enumerate(inits)],
        overhead=overhead,
        node_name=node_name,
        scheduler=k.OTHER_SCHEDULER if node_name else k.SCHEDULER,
    )


FIT_NODE = "fit-node"


async def expect_fit(
    probe: CoreProbe,
    containers: Sequence[Use],
    inits: Sequence[Use],
    running: Use | None,
    node_allocatable: dict[str, str],
    fits: bool,
    overhead: Mapping[str, str] | None = None,
) -> None:
    on_node = [] if running is None else [resource_pod([running], node_name=FIT_NODE)]
    target = resource_pod(containers, inits, overhead)
    await expect(probe, target, k.node(FIT_NODE, allocatable=node_allocatable), on_node, fits)


# (row name, containers, init containers, the running pod's one container, overhead, fits)
ENOUGH_CASES: list[tuple[str, list[Use], list[Use], Use, dict[str, str] | None, bool]] = [
    ("no resources requested always fits", [], [], use(10, 20), None, True),
    ("too many resources fails", [use(1, 1)], [], use(10, 20), None, False),
    ("too many resources fails due to init container cpu", [use(1, 1)], [use(3, 1)], use(8, 19), None, False),
    (
        "too many resources fails due to highest init container cpu",
        [use(1, 1)], [use(3, 1), use(2, 1)], use(8, 19), None, False,
    ),
    (
        "too many resources fails due to init container memory",
        [use(1, 1)], [use(1, 3)], use(9, 19), None, False,
    ),
    (
        "too many resources fails due to highest init container memory",
        [use(1, 1)], [use(1, 3), use(1, 2)], use(9, 19), None, False,
    ),
    (
        "init container fits because it's the max, not sum, of containers and init containers",
        [use(1, 1)], [use(1, 1)], use(9, 19), None, True,
    ),
    (
        "multiple init containers fit because it's the max, not sum, of containers and init containers",
        [use(1, 1)], [use(1, 1), use(1, 1)], use(9, 19), None, True,
    ),
    ("both resources fit", [use(1, 1)], [], use(5, 5), None, True),
    ("one resource memory fits", [use(2, 1)], [], use(9, 5), None, False),
    ("one resource cpu fits", [use(1, 2)], [], use(5, 19), None, False),
    ("equal edge case", [use(5, 1)], [], use(5, 19), None, True),
    ("equal edge case for init container", [use(4, 1)], [use(5, 1)], use(5, 19), None, True),
    ("extended resource fits", [use(ext_a=1)], [], use(), None, True),
    ("extended resource fits for init container", [use()], [use(ext_a=1)], use(), None, True),
    ("extended resource capacity enforced", [use(1, 1, ext_a=10)], [], use(ext_a=0), None, False),
    (
        "extended resource capacity enforced for init container",
        [use()], [use(1, 1, ext_a=10)], use(ext_a=0), None, False,
    ),
    ("extended resource allocatable enforced", [use(1, 1, ext_a=1)], [], use(ext_a=5), None, False),
    (
        "extended resource allocatable enforced for init container",
        [use()], [use(1, 1, ext_a=1)], use(ext_a=5), None, False,
    ),
    (
        "extended resource allocatable enforced for multiple containers",
        [use(1, 1, ext_a=3), use(1, 1, ext_a=3)], [], use(ext_a=2), None, False,
    ),
    (
        "extended resource allocatable admits multiple init containers",
        [use()], [use(1, 1, ext_a=3), use(1, 1, ext_a=3)], use(ext_a=2), None, True,
    ),
    (
        "extended resource allocatable enforced for multiple init containers",
        [use()], [use(1, 1, ext_a=6), use(1, 1, ext_a=3)], use(ext_a=2), None, False,
    ),
    (
        "extended resource allocatable enforced for unknown resource",
        [use(1, 1, ext_b=1)], [], use(), None, False,
    ),
    (
        "extended resource allocatable enforced for unknown resource for init container",
        [use()], [use(1, 1, ext_b=1)], use(), None, False,
    ),
    ("kubernetes.io resource capacity enforced", [use(1, 1, k8s_io_a=10)], [], use(), None, False),
    (
        "kubernetes.io resource capacity enforced for init container",
        [use()], [use(1, 1, k8s_io_b=10)], use(), None, False,
    ),
    ("hugepages resource capacity enforced", [use(1, 1, huge_a=10)], [], use(huge_a=0), None, False),
    (
        "hugepages resource capacity enforced for init container",
        [use()], [use(1, 1, huge_a=10)], use(huge_a=0), None, False,
    ),
    (
        "hugepages resource allocatable enforced for multiple containers",
        [use(1, 1, huge_a=3), use(1, 1, huge_a=3)], [], use(huge_a=2), None, False,
    ),
    ("resources + pod overhead fits", [use(1, 1)], [], use(5, 5), {"cpu": "3m", "memory": "13"}, True),
    (
        "requests + overhead does not fit for memory",
        [use(1, 1)], [], use(5, 5), {"cpu": "1m", "memory": "15"}, False,
    ),
    (
        "skip checking extended resource request with quantity zero via resource groups",
        [use(1, 1, ext_a=0)], [], use(ext_a=6), None, True,
    ),
    (
        "skip checking resource request with quantity zero",
        [use(ext_a=1)], [], use(20, 30, ext_a=1), None, True,
    ),
]  # fmt: skip


@pytest.mark.parametrize(
    ("containers", "inits", "running", "overhead", "fits"),
    [pytest.param(*row, id=kube_case("TestEnoughRequests", name)) for name, *row in ENOUGH_CASES],
)
async def test_enough_requests(
    probe: CoreProbe,
    containers: list[Use],
    inits: list[Use],
    running: Use,
    overhead: dict[str, str] | None,
    fits: bool,
) -> None:
    await expect_fit(probe, containers, inits, running, allocatable(10, 20, 32, 5, 20, 5), fits, overhead)


# (row name, containers, init containers, the running pod's one container): none fits (one pod slot)
NOT_ENOUGH_CASES: list[tuple[str, list[Use], list[Use], Use]] = [
    (
        "even without specified resources, predicate fails when there's no space for additional pod",
        [], [], use(10, 20),
    ),
    (
        "even if both resources fit, predicate fails when there's no space for additional pod",
        [use(1, 1)], [], use(5, 5),
    ),
    (
        "even for equal edge case, predicate fails when there's no space for additional pod",
        [use(5, 1)], [], use(5, 19),
    ),
    (
        "even for equal edge case, predicate fails when there's no space for additional pod due to init "
        "container",
        [use(5, 1)], [use(5, 1)], use(5, 19),
    ),
]  # fmt: skip


@pytest.mark.parametrize(
    ("containers", "inits", "running"),
    [pytest.param(*row, id=kube_case("TestNotEnoughRequests", name)) for name, *row in NOT_ENOUGH_CASES],
)
async def test_not_enough_requests(
    probe: CoreProbe, containers: list[Use], inits: list[Use], running: Use
) -> None:
    await expect_fit(probe, containers, inits, running, allocatable(10, 20, 1, 0, 0, 0), False)


# (row name, containers, init containers, the running pod's one container, fits)
STORAGE_CASES: list[tuple[str, list[Use], list[Use], Use, bool]] = [
    ("empty storage requested, and pod fits", [use(1, 1)], [], use(2, 10), True),
    ("storage ephemeral local storage request exceeds allocatable", [use(storage=25)], [], use(2, 2), False),
    ("ephemeral local storage is sufficient", [use(storage=5)], [], use(2, 2, storage=10), True),
    ("pod fits", [use(storage=10)], [], use(2, 2), True),
]


@pytest.mark.parametrize(
    ("containers", "inits", "running", "fits"),
    [pytest.param(*row, id=kube_case("TestStorageRequests", name)) for name, *row in STORAGE_CASES],
)
async def test_storage_requests(
    probe: CoreProbe, containers: list[Use], inits: list[Use], running: Use, fits: bool
) -> None:
    await expect_fit(probe, containers, inits, running, allocatable(10, 20, 32, 5, 20, 5), fits)


@pytest.mark.parametrize(
    "sidecar",
    [
        pytest.param(
            False,
            id=kube_case(
                "TestRestartableInitContainers",
                "allow pod without restartable init containers if sidecar containers is disabled",
            ),
        ),
        pytest.param(
            False,
            id=kube_case(
                "TestRestartableInitContainers",
                "allow pod without restartable init containers if sidecar containers is enabled",
            ),
        ),
        pytest.param(
            True,
            id=kube_case(
                "TestRestartableInitContainers",
                "allow pod with restartable init containers if sidecar containers is enabled",
            ),
        ),
    ],
)
async def test_restartable_init_containers(probe: CoreProbe, sidecar: bool) -> None:
    inits = [k.container("restartable-init", restart_policy="Always")] if sidecar else []
    target = k.pod(containers=[k.container("regular")], init_containers=inits)
    await expect(probe, target, k.node(FIT_NODE, allocatable=allocatable(0, 0, 1, 0, 0, 0)), (), True)
