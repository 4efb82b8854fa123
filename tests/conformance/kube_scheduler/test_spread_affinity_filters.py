"""kube-scheduler's PodTopologySpread, InterPodAffinity and VolumeRestrictions filter rows, run through
the Kubernetes shim's translation and the pykorn core.

Upstream (kubernetes/kubernetes, files and commits in upstream.py's KUBERNETES_COMMIT):
- podtopologyspread/filtering_test.go: TestSingleConstraint (23 rows, 23 ported), TestMultipleConstraints
  (13 rows, 13 ported), TestPreFilterState (36 rows, 31 ported: its expected PreFilter state decides
  Filter, see below);
- interpodaffinity/filtering_test.go: TestRequiredAffinitySingleNode (26 rows, 26 ported),
  TestRequiredAffinityMultipleNodes (18 rows, 18 ported);
- volumerestrictions/volume_restrictions_test.go: TestGCEDiskConflicts (5, 5), TestAWSDiskConflicts (4, 4),
  TestRBDDiskConflicts (4, 4), TestISCSIDiskConflicts (4, 4), TestAccessModeConflicts (5, 5).
In all 133 rows ported, 5 not ported (and the tables of internal state listed below).

How a row is checked (spread_case.py): the row's Nodes and Pods are built as the API serves them; for
each node of the row, the core is registered afresh with every node (so every domain and pod counts),
only that node having room for one more pod, the pods already there sent as another scheduler's
(foreign) allocations and the incoming pod as our ask, all made with the shim's own translation. The
case asserts, node by node, whether the pod was placed there: upstream's Success is "placed", any other
code "not placed".

Upstream's unit rows run one plugin alone. Where the row's pod has a nodeSelector, a required node
affinity or a node an untolerated NoSchedule taint, the whole scheduler's NodeAffinity and
TaintToleration filters refuse nodes the plugin passes (upstream's rows say so in comments: "in real
case, it's false"); the expectation is the whole scheduler's: the plugin's verdict and those filters'
(spread_case.kube_filters_admit).

TestPreFilterState's rows expect a PreFilter state: per DoNotSchedule constraint, the matching pods per
domain. The per-node verdict is what upstream's Filter (filtering.go) makes of that state
(spread_case.spread_filter_by_state), with the other filters as above; the state is transcribed from
the row's `want`.

Adaptations, each because the row cannot be expressed as written through the shim:
- pods on a node the row does not list (interpodaffinity rows with a pod on "node2") are not sent: the
  shim holds such a pod back until its node exists, as upstream's snapshot has no node for it;
- the incoming pod of "Test incoming pod's anti-affinity: even if labelSelector matches, we still check if
  topologyKey matches" names a node (spec.nodeName): that is a bound pod, never asked for; it is sent
  without it;
- the VolumeRestrictions claims are bound to volumes (bound claim, bound network volume): the shim does
  not ask for a pod whose claim is unbound or missing (VolumeBinding's rule), and VolumeRestrictions
  does not look at binding; "failed to get PVC" is then a pod the shim does not ask for (not placed,
  as upstream).
- a volume with no source ("pod with a volume that doesn't have restrictions") is sent as the API server
  defaults it: an emptyDir.
Notes on rows ported as they are:
- the taint `node.kubernetes.io/unschedulable` is sent as written (a taint without spec.unschedulable);
  the TaintToleration and NodeTaintsPolicy rows hold only if the shim sends it on as a taint;
- the pods already on the nodes name no scheduler upstream; they are another scheduler's here (foreign
  allocations), which pykorn counts in pod rules as its own;
- TestPreFilterState's "feature gate disabled with NodeAffinityPolicy" / "... NodeTaintsPolicy" and "no
  pod is matched when LabelSelector is nil when feature gate disabled" expect the same state with the
  gates on (the pods set no inclusion policy, and do not carry the matchLabelKeys key): ported;
- two TestRequiredAffinitySingleNode rows have a term without topologyKey (which the API server would
  refuse): the core refuses the ask, so the pod is not placed, as upstream expects.

Known difference expected: a terminating pod (metadata.deletionTimestamp) still counts in pykorn's
topology spread counts; kube-scheduler leaves it out ("terminating Pods should be excluded").

Not ported (5 rows):
- TestPreFilterState/default constraints and a service, .../default constraints and a service that
  doesn't match, .../default constraints and a service, but pod has constraints, .../default soft
  constraints and a service (4): cluster-level default constraints (PodTopologySpreadArgs) with selectors
  from Services, and no nodes in the row: nothing to place onto;
- TestPreFilterState/matchLabelKeys ignored when feature gate disabled (1): behaviour with the
  MatchLabelKeysInPodTopologySpread gate off; pykorn follows the gate's default (on).
Not ported, whole tests of internal state no interface shows: TestPreFilterStateAddPod (16 rows),
TestPreFilterStateRemovePod (9), TestPreFilterDisabled (both plugins), TestPodTopoSignatures,
BenchmarkFilter (podtopologyspread); TestPreFilterStateAddRemovePod (3), TestPreFilterStateClone,
TestGetTPMapMatchingIncomingAffinityAntiAffinity (8) (interpodaffinity): preemption's AddPod/RemovePod
bookkeeping, state cloning and signatures are Go-internal.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Any

import pytest

from tests.conformance.core_probe import CoreProbe
from tests.conformance.kube_scheduler import spread_case as sc
from tests.conformance.kube_scheduler.upstream import (
    INTERPOD_FILTERING_TEST,
    KUBERNETES_COMMIT,
    SPREAD_FILTERING_TEST,
    VOLUME_RESTRICTIONS_TEST,
    kube_case,
)

# The upstream test files these rows come from, each with the commit read.
PORTED_FROM = {
    path: KUBERNETES_COMMIT[path]
    for path in (SPREAD_FILTERING_TEST, INTERPOD_FILTERING_TEST, VOLUME_RESTRICTIONS_TEST)
}

Obj = dict[str, Any]
Scene = sc.Scene

DNS, SA = "DoNotSchedule", "ScheduleAnyway"
HONOR, IGNORE = "Honor", "Ignore"
FOO, BAR = sc.exists("foo"), sc.exists("bar")
TAINTS = (sc.UNSCHEDULABLE_TAINT,)


def n(name: str, taints: Sequence[Obj] = (), /, **labels: str) -> Obj:
    return sc.node(name, labels, taints)


def on(name: str, node: str, namespace: str = "", /, **labels: str) -> Obj:
    """A pod already on `node` (another scheduler's)."""
    return sc.pod(name, namespace=namespace, labels=labels, node_name=node)


def p(labels: Mapping[str, str] | None = None, **spec: Any) -> Obj:
    """The incoming pod, upstream's `p`."""
    return sc.pod("p", labels=labels, **spec)


def all_of(nodes: Sequence[Obj]) -> set[str]:
    return {sc.node_name(x) for x in nodes}


ZONES = (
    n("node-a", zone="zone1", node="node-a"), n("node-b", zone="zone1", node="node-b"),
    n("node-x", zone="zone2", node="node-x"), n("node-y", zone="zone2", node="node-y"),
)  # fmt: skip
ABXY = all_of(ZONES)
# Pods labelled foo, spread over node-a, node-b and node-y as 2/1/3.
FOO_2_1_0_3 = (
    on("p-a1", "node-a", foo=""), on("p-a2", "node-a", foo=""), on("p-b1", "node-b", foo=""),
    on("p-y1", "node-y", foo=""), on("p-y2", "node-y", foo=""), on("p-y3", "node-y", foo=""),
)  # fmt: skip
FOO_2_1_0_2 = FOO_2_1_0_3[:5]
FOO_2_1_0_4 = (*FOO_2_1_0_3, on("p-y4", "node-y", foo=""))
# Nodes by the label `node` alone, some labelled foo (the node inclusion policy rows).
FOO_NODES = (
    n("node-a", node="node-a", foo=""), n("node-b", node="node-b", foo=""),
    n("node-x", node="node-x", foo=""),
)  # fmt: skip
ONE_ONE_ZERO_ONE = (on("p-b1", "node-a", foo=""), on("p-b2", "node-b", foo=""), on("p-y1", "node-y", foo=""))

Row = tuple[str, Scene, set[str]]  # name, scene, the nodes upstream's plugin lets the pod onto

SINGLE_CONSTRAINT: list[Row] = [
    ("no existing pods", Scene(ZONES, (), p({"foo": ""}, spread=[sc.spread(1, "zone", DNS, FOO)])), ABXY),
    (
        "no existing pods, incoming pod doesn't match itself",
        Scene(ZONES, (), p({"foo": ""}, spread=[sc.spread(1, "zone", DNS, BAR)])),
        ABXY,
    ),
    (
        "existing pods in a different namespace do not count",
        Scene(
            ZONES,
            (
                on("p-a1", "node-a", "ns1", foo=""),
                on("p-b1", "node-a", "ns2", foo=""),
                on("p-x1", "node-x", foo=""),
                on("p-y1", "node-y", foo=""),
            ),
            p({"foo": ""}, spread=[sc.spread(1, "zone", DNS, FOO)]),
        ),
        {"node-a", "node-b"},
    ),
    (
        "existing pods do not match null selector",
        Scene(
            ZONES,
            (on("p-x1", "node-x", foo=""), on("p-y1", "node-y", foo="")),
            p({"foo": ""}, spread=[sc.spread(1, "zone", DNS, None)]),
        ),
        ABXY,
    ),
    (
        "pods spread across zones as 3/3, all nodes fit",
        Scene(ZONES, FOO_2_1_0_3, p({"foo": ""}, spread=[sc.spread(1, "zone", DNS, FOO)])),
        ABXY,
    ),
    (
        "pods spread across zones as 1/2 due to absence of label 'zone' on node-b",
        Scene(
            (ZONES[0], n("node-b", zon="zone1", node="node-b"), ZONES[2], ZONES[3]),
            (
                on("p-a1", "node-a", foo=""),
                on("p-b1", "node-b", foo=""),
                on("p-x1", "node-x", foo=""),
                on("p-y1", "node-y", foo=""),
            ),
            p({"foo": ""}, spread=[sc.spread(1, "zone", DNS, FOO)]),
        ),
        {"node-a"},
    ),
    (
        "pod cannot be scheduled as all nodes don't have label 'rack'",
        Scene(
            (n("node-a", zone="zone1", node="node-a"), n("node-x", zone="zone2", node="node-x")),
            (),
            p({"foo": ""}, spread=[sc.spread(1, "rack", DNS, FOO)]),
        ),
        set(),
    ),
    (
        "pods spread across nodes as 2/1/0/3, only node-x fits",
        Scene(ZONES, FOO_2_1_0_3, p({"foo": ""}, spread=[sc.spread(1, "node", DNS, FOO)])),
        {"node-x"},
    ),
    (
        "pods spread across nodes as 2/1/0/3, maxSkew is 2, node-b and node-x fit",
        Scene(ZONES, FOO_2_1_0_3, p({"foo": ""}, spread=[sc.spread(2, "node", DNS, FOO)])),
        {"node-b", "node-x"},
    ),
    (
        "pods spread across nodes as 2/1/0/3, but pod doesn't match itself",
        Scene(ZONES, FOO_2_1_0_3, p({"bar": ""}, spread=[sc.spread(1, "node", DNS, FOO)])),
        {"node-b", "node-x"},
    ),
    (
        "incoming pod has nodeAffinity, pods spread as 2/~1~/~0~/3, hence node-a fits",
        Scene(
            ZONES,
            FOO_2_1_0_3,
            p(
                {"foo": ""},
                node_affinity=sc.node_selector_terms(sc.requirement("node", "In", ["node-a", "node-y"])),
                spread=[sc.spread(1, "node", DNS, FOO)],
            ),
        ),
        {"node-a", "node-b", "node-x"},
    ),
    (
        "terminating Pods should be excluded",
        Scene(
            (n("node-a", node="node-a"), n("node-b", node="node-b")),
            (
                sc.pod("p-a", labels={"foo": ""}, node_name="node-a", terminating=True),
                on("p-b", "node-b", foo=""),
            ),
            p({"foo": ""}, spread=[sc.spread(1, "node", DNS, FOO)]),
        ),
        {"node-a"},
    ),
    (
        "incoming pod has nodeAffinity, pods spread as 0/~2~/0/1, hence node-a fits",
        Scene(
            ZONES,
            (on("p-b1", "node-b", foo=""), on("p-b2", "node-b", foo=""), on("p-y1", "node-y", foo="")),
            p(
                {"foo": ""},
                node_affinity=sc.node_selector_terms(sc.requirement("node", "NotIn", ["node-b"])),
                spread=[sc.spread(1, "zone", DNS, FOO)],
            ),
        ),
        {"node-a", "node-b"},
    ),
    (
        "pods spread across nodes as 2/2/1, maxSkew is 2, and the number of domains < minDomains, then the "
        "third node fits",
        Scene(
            (n("node-a", node="node-a"), n("node-b", node="node-b"), n("node-c", node="node-c")),
            (
                on("p-a1", "node-a", foo=""),
                on("p-a2", "node-a", foo=""),
                on("p-b1", "node-b", foo=""),
                on("p-b2", "node-b", foo=""),
                on("p-c1", "node-c", foo=""),
            ),
            p({"foo": ""}, spread=[sc.spread(2, "node", DNS, FOO, 4)]),
        ),
        {"node-c"},
    ),
    (
        "pods spread across nodes as 2/2/1, maxSkew is 2, and the number of domains > minDomains, then the "
        "all nodes fit",
        Scene(
            (n("node-a", node="node-a"), n("node-b", node="node-b"), n("node-c", node="node-c")),
            (
                on("p-a1", "node-a", foo=""),
                on("p-a2", "node-a", foo=""),
                on("p-b1", "node-b", foo=""),
                on("p-b2", "node-b", foo=""),
                on("p-c1", "node-c", foo=""),
            ),
            p({"foo": ""}, spread=[sc.spread(2, "node", DNS, FOO, 2)]),
        ),
        {"node-a", "node-b", "node-c"},
    ),
    (
        "pods spread across zone as 2/1, maxSkew is 2 and the number of domains < minDomains, then the third "
        "and fourth nodes fit",
        Scene(ZONES, ONE_ONE_ZERO_ONE, p({"foo": ""}, spread=[sc.spread(2, "zone", DNS, FOO, 3)])),
        {"node-x", "node-y"},
    ),
    (
        "pods spread across zone as 2/1, maxSkew is 2 and the number of domains > minDomains, then the all "
        "nodes fit",
        Scene(ZONES, ONE_ONE_ZERO_ONE, p({"foo": ""}, spread=[sc.spread(2, "zone", DNS, FOO, 1)])),
        ABXY,
    ),
    (
        "NodeAffinityPolicy honored with labelSelectors",
        Scene(
            (*FOO_NODES, n("node-y", node="node-y")),
            ONE_ONE_ZERO_ONE,
            p({"foo": ""}, node_selector={"foo": ""}, spread=[sc.spread(1, "node", DNS, FOO)]),
        ),
        {"node-x", "node-y"},
    ),
    (
        "NodeAffinityPolicy ignored with labelSelectors",
        Scene(
            (*FOO_NODES, n("node-y", node="node-y")),
            ONE_ONE_ZERO_ONE,
            p({"foo": ""}, node_selector={"foo": ""}, spread=[sc.spread(1, "node", DNS, FOO, None, IGNORE)]),
        ),
        {"node-x"},
    ),
    (
        "NodeAffinityPolicy honored with nodeAffinity",
        Scene(
            (*FOO_NODES, n("node-y", node="node-y")),
            ONE_ONE_ZERO_ONE,
            p(
                {"foo": ""},
                node_affinity=sc.node_selector_terms(sc.requirement("foo", "In", [""])),
                spread=[sc.spread(1, "node", DNS, FOO)],
            ),
        ),
        {"node-x", "node-y"},
    ),
    (
        "NodeAffinityPolicy ignored with labelSelectors#01",
        Scene(
            (*FOO_NODES, n("node-y", node="node-y")),
            ONE_ONE_ZERO_ONE,
            p(
                {"foo": ""},
                node_affinity=sc.node_selector_terms(sc.requirement("foo", "In", [""])),
                spread=[sc.spread(1, "node", DNS, FOO, None, IGNORE)],
            ),
        ),
        {"node-x"},
    ),
    (
        "NodeTaintsPolicy honored",
        Scene(
            (*FOO_NODES, n("node-y", TAINTS, node="node-y")),
            ONE_ONE_ZERO_ONE,
            p({"foo": ""}, spread=[sc.spread(1, "node", DNS, FOO, None, None, HONOR)]),
        ),
        {"node-x", "node-y"},
    ),
    (
        "NodeTaintsPolicy ignored",
        Scene(
            (*FOO_NODES, n("node-y", TAINTS, node="node-y")),
            ONE_ONE_ZERO_ONE,
            p({"foo": ""}, spread=[sc.spread(1, "node", DNS, FOO)]),
        ),
        {"node-x"},
    ),
]

ZONE_AND_NODE = [sc.spread(1, "zone", DNS, FOO), sc.spread(1, "node", DNS, FOO)]
FOO_ZONE_BAR_NODE = [sc.spread(1, "zone", DNS, FOO), sc.spread(1, "node", DNS, BAR)]
MULTIPLE_CONSTRAINTS: list[Row] = [
    (
        "two Constraints on zone and node, spreads = [3/3, 2/1/0/3]",
        Scene(ZONES, FOO_2_1_0_3, p({"foo": ""}, spread=ZONE_AND_NODE)),
        {"node-x"},
    ),
    (
        "two Constraints on zone and node, spreads = [3/4, 2/1/0/4]",
        Scene(ZONES, FOO_2_1_0_4, p({"foo": ""}, spread=ZONE_AND_NODE)),
        set(),
    ),
    (
        "Constraints hold different labelSelectors, spreads = [1/0, 1/0/0/1]",
        Scene(
            ZONES,
            (on("p-a1", "node-a", foo=""), on("p-y1", "node-y", bar="")),
            p({"foo": "", "bar": ""}, spread=FOO_ZONE_BAR_NODE),
        ),
        {"node-x"},
    ),
    (
        "Constraints hold different labelSelectors, spreads = [1/0, 0/0/1/1]",
        Scene(
            ZONES,
            (on("p-a1", "node-a", foo=""), on("p-x1", "node-x", bar=""), on("p-y1", "node-y", bar="")),
            p({"foo": "", "bar": ""}, spread=FOO_ZONE_BAR_NODE),
        ),
        set(),
    ),
    (
        "Constraints hold different labelSelectors, spreads = [2/3, 1/0/0/1]",
        Scene(
            ZONES,
            (
                on("p-a1", "node-a", foo=""),
                on("p-a2", "node-a", foo="", bar=""),
                on("p-y1", "node-y", foo=""),
                on("p-y2", "node-y", foo="", bar=""),
                on("p-y3", "node-y", foo=""),
            ),
            p({"foo": "", "bar": ""}, spread=FOO_ZONE_BAR_NODE),
        ),
        {"node-b"},
    ),
    (
        "Constraints hold different labelSelectors but pod doesn't match itself on 'zone' constraint",
        Scene(
            ZONES,
            (on("p-a1", "node-a", foo=""), on("p-x1", "node-x", bar=""), on("p-y1", "node-y", bar="")),
            p({"bar": ""}, spread=FOO_ZONE_BAR_NODE),
        ),
        {"node-a", "node-b"},
    ),
    (
        "two Constraints on zone and node, absence of label 'node' on node-x, spreads = [1/1, 1/0/0/1]",
        Scene(
            (ZONES[0], ZONES[1], n("node-x", zone="zone2"), ZONES[3]),
            (on("p-a1", "node-a", foo=""), on("p-y3", "node-y", foo="")),
            p({"foo": ""}, spread=ZONE_AND_NODE),
        ),
        {"node-b"},
    ),
    (
        "two node inclusion Constraints, zone: honor/ignore, node: ignore/ignore",
        Scene(
            (
                n("node-a", zone="zone1", node="node-a", foo=""),
                n("node-b", zone="zone1", node="node-b", foo=""),
                n("node-x", zone="zone2", node="node-x", foo=""),
                n("node-y", zone="zone2", node="node-y"),
            ),
            (on("p-a1", "node-a", foo=""), on("p-b1", "node-b", foo=""), on("p-y1", "node-y", foo="")),
            p(
                {"foo": ""},
                node_selector={"foo": ""},
                spread=[sc.spread(1, "zone", DNS, FOO), sc.spread(1, "node", DNS, FOO, None, IGNORE)],
            ),
        ),
        {"node-x"},
    ),
    (
        "two node inclusion Constraints, zone: honor/honor, node: honor/ignore",
        Scene(
            (
                n("node-a", zone="zone1", node="node-a", foo=""),
                n("node-b", zone="zone1", node="node-b", foo=""),
                n("node-x", zone="zone2", node="node-x", foo=""),
                n("node-y", TAINTS, zone="zone2", node="node-y"),
            ),
            (on("p-a1", "node-a", foo=""), on("p-b1", "node-b", foo=""), on("p-y1", "node-y", foo="")),
            p(
                {"foo": ""},
                spread=[sc.spread(1, "zone", DNS, FOO, None, None, HONOR), sc.spread(1, "node", DNS, FOO)],
            ),
        ),
        {"node-x"},
    ),
    (
        "two node inclusion Constraints, zone: honor/ignore, node: honor/ignore",
        Scene(
            (
                n("node-a", zone="zone1", node="node-a", foo=""),
                n("node-b", zone="zone1", node="node-b"),
                n("node-x", zone="zone2", node="node-x", foo=""),
                n("node-y", TAINTS, zone="zone2", node="node-y", foo=""),
            ),
            (on("p-a1", "node-a", foo=""), on("p-b1", "node-b", foo=""), on("p-y1", "node-y", foo="")),
            p({"foo": ""}, node_selector={"foo": ""}, spread=ZONE_AND_NODE),
        ),
        {"node-b", "node-x"},
    ),
    (
        "two node inclusion Constraints, zone: honor/honor, node: ignore/ignore",
        Scene(
            (
                n("node-a", zone="zone1", node="node-a", foo=""),
                n("node-b", zone="zone1", node="node-b"),
                n("node-x", zone="zone2", node="node-x", foo=""),
                n("node-y", TAINTS, zone="zone2", node="node-y", foo=""),
            ),
            (on("p-a1", "node-a", foo=""), on("p-b1", "node-b", foo=""), on("p-y1", "node-y", foo="")),
            p(
                {"foo": ""},
                node_selector={"foo": ""},
                spread=[
                    sc.spread(1, "zone", DNS, FOO, None, None, HONOR),
                    sc.spread(1, "node", DNS, FOO, None, IGNORE),
                ],
            ),
        ),
        {"node-x"},
    ),
    (
        "two Constraints on zone, spreads = [3/3, 2/1]",
        Scene(
            ZONES,
            (
                on("p-a1", "node-a", foo="", bar=""),
                on("p-a2", "node-a", foo=""),
                on("p-b1", "node-b", foo="", bar=""),
                on("p-y1", "node-y", foo=""),
                on("p-y2", "node-y", foo="", bar=""),
                on("p-y3", "node-y", foo=""),
            ),
            p(
                {"foo": "", "bar": ""},
                spread=[sc.spread(1, "zone", DNS, BAR), sc.spread(1, "zone", DNS, FOO)],
            ),
        ),
        {"node-x", "node-y"},
    ),
    (
        "two Constraints on zone, spreads = [3/4, 2/1]",
        Scene(
            ZONES,
            (
                on("p-a1", "node-a", foo="", bar=""),
                on("p-a2", "node-a", foo=""),
                on("p-b1", "node-b", foo="", bar=""),
                on("p-y1", "node-y", foo=""),
                on("p-y2", "node-y", foo="", bar=""),
                on("p-y3", "node-y", foo=""),
                on("p-y4", "node-y", foo=""),
            ),
            p(
                {"foo": "", "bar": ""},
                spread=[sc.spread(1, "zone", DNS, BAR), sc.spread(1, "zone", DNS, FOO)],
            ),
        ),
        set(),
    ),
]

# TestPreFilterState: name, scene, the expected matching pods per domain of each DoNotSchedule constraint.
StateRow = tuple[str, Scene, list[dict[str, int]]]
BAR_NODES = (
    n("node-a", node="node-a", foo=""),
    n("node-b", node="node-b", foo=""),
    n("node-c", node="node-c", bar=""),
)
BAR_PODS = (
    on("p-a", "node-a", bar=""),
    on("p-b", "node-b", bar=""),
    on("p-c", "node-b", bar=""),
    on("p-d", "node-c"),
)
TAINTED_BAR_NODES = (
    n("node-a", node="node-a"),
    n("node-b", node="node-b"),
    n("node-c", TAINTS, node="node-c", bar=""),
)
FOO_A_PODS = (
    on("p-a1", "node-a", foo="a"), on("p-a2", "node-a", foo="a"), on("p-b1", "node-b", foo="a"),
    on("p-y1", "node-y", foo="a"), on("p-y2", "node-y", foo="a"),
)  # fmt: skip
INCLUSION_NODES = (
    n("node-a", zone="zone1", node="node-a", foo=""), n("node-b", zone="zone1", node="node-b"),
    n("node-x", zone="zone2", node="node-x", foo=""),
)  # fmt: skip
INCLUSION_PODS = (on("p-b1", "node-b", foo=""), on("p-b2", "node-b", foo=""), on("p-x1", "node-x", foo=""))
PRE_FILTER_STATE: list[StateRow] = [
    (
        "clean cluster with one spreadConstraint",
        Scene(
            ZONES,
            (),
            p({"foo": ""}, spread=[sc.spread(5, "zone", DNS, sc.selector(match_labels={"foo": "bar"}))]),
        ),
        [{"zone1": 0, "zone2": 0}],
    ),
    (
        "normal case with one spreadConstraint",
        Scene(ZONES, FOO_2_1_0_2, p({"foo": ""}, spread=[sc.spread(1, "zone", DNS, FOO)])),
        [{"zone1": 3, "zone2": 2}],
    ),
    (
        "normal case with null label selector",
        Scene(ZONES, FOO_2_1_0_2, p({"foo": ""}, spread=[sc.spread(1, "zone", DNS, None)])),
        [{"zone1": 0, "zone2": 0}],
    ),
    (
        "normal case with one spreadConstraint, on a 3-zone cluster",
        Scene(
            (*ZONES, n("node-o", zone="zone3", node="node-o"), n("node-p", zone="zone3", node="node-p")),
            FOO_2_1_0_2,
            p({"foo": ""}, spread=[sc.spread(1, "zone", DNS, FOO)]),
        ),
        [{"zone1": 3, "zone2": 2, "zone3": 0}],
    ),
    (
        "namespace mismatch doesn't count",
        Scene(
            ZONES,
            (
                on("p-a1", "node-a", foo=""),
                on("p-a2", "node-a", "ns1", foo=""),
                on("p-b1", "node-b", foo=""),
                on("p-y1", "node-y", "ns2", foo=""),
                on("p-y2", "node-y", foo=""),
            ),
            p({"foo": ""}, spread=[sc.spread(1, "zone", DNS, FOO)]),
        ),
        [{"zone1": 2, "zone2": 1}],
    ),
    (
        "normal case with two spreadConstraints",
        Scene(ZONES, FOO_2_1_0_4, p({"foo": ""}, spread=ZONE_AND_NODE)),
        [{"zone1": 3, "zone2": 4}, {"node-a": 2, "node-b": 1, "node-x": 0, "node-y": 4}],
    ),
    (
        "soft spreadConstraints should be bypassed",
        Scene(
            (ZONES[0], ZONES[1], ZONES[3]),
            FOO_2_1_0_4,
            p(
                {"foo": ""},
                spread=[
                    sc.spread(1, "zone", SA, FOO),
                    sc.spread(1, "zone", DNS, FOO),
                    sc.spread(1, "node", SA, FOO),
                    sc.spread(1, "node", DNS, FOO),
                ],
            ),
        ),
        [{"zone1": 3, "zone2": 4}, {"node-a": 2, "node-b": 1, "node-y": 4}],
    ),
    (
        "different labelSelectors - simple version",
        Scene(
            (ZONES[0], ZONES[1], ZONES[3]),
            (on("p-a", "node-a", foo=""), on("p-b", "node-b", bar="")),
            p({"foo": "", "bar": ""}, spread=FOO_ZONE_BAR_NODE),
        ),
        [{"zone1": 1, "zone2": 0}, {"node-a": 0, "node-b": 1, "node-y": 0}],
    ),
    (
        "different labelSelectors - complex pods",
        Scene(
            (ZONES[0], ZONES[1], ZONES[3]),
            (
                on("p-a1", "node-a", foo=""),
                on("p-a2", "node-a", foo="", bar=""),
                on("p-b1", "node-b", foo=""),
                on("p-y1", "node-y", foo=""),
                on("p-y2", "node-y", foo="", bar=""),
                on("p-y3", "node-y", foo=""),
                on("p-y4", "node-y", foo="", bar=""),
            ),
            p({"foo": "", "bar": ""}, spread=FOO_ZONE_BAR_NODE),
        ),
        [{"zone1": 3, "zone2": 4}, {"node-a": 1, "node-b": 0, "node-y": 2}],
    ),
    (
        "two spreadConstraints, and with podAffinity",
        Scene(
            ZONES,
            FOO_2_1_0_4,
            p(
                {"foo": ""},
                node_affinity=sc.node_selector_terms(sc.requirement("node", "NotIn", ["node-x"])),
                spread=ZONE_AND_NODE,
            ),
        ),
        [{"zone1": 3, "zone2": 4}, {"node-a": 2, "node-b": 1, "node-y": 4}],
    ),
    (
        "TpKeyToDomainsNum is calculated when MinDomains is enabled",
        Scene(ZONES, FOO_2_1_0_4, p({"foo": ""}, spread=ZONE_AND_NODE)),
        [{"zone1": 3, "zone2": 4}, {"node-a": 2, "node-b": 1, "node-x": 0, "node-y": 4}],
    ),
    (
        "feature gate disabled with NodeAffinityPolicy",
        Scene(
            BAR_NODES,
            BAR_PODS,
            p({"foo": ""}, node_selector={"foo": ""}, spread=[sc.spread(1, "node", DNS, BAR)]),
        ),
        [{"node-a": 1, "node-b": 2}],
    ),
    (
        "NodeAffinityPolicy honored with labelSelectors",
        Scene(
            BAR_NODES,
            BAR_PODS,
            p({"foo": ""}, node_selector={"foo": ""}, spread=[sc.spread(1, "node", DNS, BAR)]),
        ),
        [{"node-a": 1, "node-b": 2}],
    ),
    (
        "NodeAffinityPolicy ignored with labelSelectors",
        Scene(
            BAR_NODES,
            BAR_PODS,
            p({"foo": ""}, node_selector={"foo": ""}, spread=[sc.spread(1, "node", DNS, BAR, None, IGNORE)]),
        ),
        [{"node-a": 1, "node-b": 2, "node-c": 0}],
    ),
    (
        "NodeAffinityPolicy honored with nodeAffinity",
        Scene(
            BAR_NODES,
            (
                on("p-a", "node-a", bar=""),
                on("p-c", "node-b", bar=""),
                on("p-d", "node-b", bar=""),
                on("p-e", "node-c"),
            ),
            p(
                {"foo": ""},
                node_affinity=sc.node_selector_terms(sc.requirement("foo", "In", [""])),
                spread=[sc.spread(1, "node", DNS, BAR)],
            ),
        ),
        [{"node-a": 1, "node-b": 2}],
    ),
    (
        "NodeAffinityPolicy ignored with nodeAffinity",
        Scene(
            BAR_NODES,
            BAR_PODS,
            p(
                {"foo": ""},
                node_affinity=sc.node_selector_terms(sc.requirement("foo", "In", [""])),
                spread=[sc.spread(1, "node", DNS, BAR, None, IGNORE)],
            ),
        ),
        [{"node-a": 1, "node-b": 2, "node-c": 0}],
    ),
    (
        "feature gate disabled with NodeTaintsPolicy",
        Scene(TAINTED_BAR_NODES, BAR_PODS, p({"foo": ""}, spread=[sc.spread(1, "node", DNS, BAR)])),
        [{"node-a": 1, "node-b": 2, "node-c": 0}],
    ),
    (
        "NodeTaintsPolicy ignored",
        Scene(TAINTED_BAR_NODES, BAR_PODS, p({"foo": ""}, spread=[sc.spread(1, "node", DNS, BAR)])),
        [{"node-a": 1, "node-b": 2, "node-c": 0}],
    ),
    (
        "NodeTaintsPolicy honored",
        Scene(
            TAINTED_BAR_NODES,
            BAR_PODS,
            p({"foo": ""}, spread=[sc.spread(1, "node", DNS, BAR, None, None, HONOR)]),
        ),
        [{"node-a": 1, "node-b": 2}],
    ),
    (
        "NodeTaintsPolicy honored with tolerated taints",
        Scene(
            TAINTED_BAR_NODES,
            BAR_PODS,
            p(
                {"foo": ""},
                tolerations=[sc.tolerate(sc.UNSCHEDULABLE_TAINT["key"])],
                spread=[sc.spread(1, "node", DNS, BAR, None, None, HONOR)],
            ),
        ),
        [{"node-a": 1, "node-b": 2, "node-c": 0}],
    ),
    (
        "two node inclusion Constraints, zone: honor/ignore, node: ignore/ignore",
        Scene(
            INCLUSION_NODES,
            INCLUSION_PODS,
            p(
                {"foo": ""},
                node_selector={"foo": ""},
                spread=[
                    sc.spread(1, "zone", DNS, FOO),
                    sc.spread(1, "node", DNS, FOO, None, IGNORE),
                ],
            ),
        ),
        [{"zone1": 0, "zone2": 1}, {"node-a": 0, "node-b": 2, "node-x": 1}],
    ),
    (
        "two node inclusion Constraints, zone: honor/honor, node: honor/ignore",
        Scene(
            (INCLUSION_NODES[0], n("node-b", TAINTS, zone="zone1", node="node-b"), INCLUSION_NODES[2]),
            INCLUSION_PODS,
            p(
                {"foo": ""},
                spread=[sc.spread(1, "zone", DNS, FOO, None, None, HONOR), sc.spread(1, "node", DNS, FOO)],
            ),
        ),
        [{"zone1": 0, "zone2": 1}, {"node-a": 0, "node-b": 2, "node-x": 1}],
    ),
    (
        "two node inclusion Constraints, zone: honor/ignore, node: honor/ignore",
        Scene(
            (
                n("node-a", zone="zone1", node="node-a"),
                n("node-b", TAINTS, zone="zone1", node="node-b", foo=""),
                n("node-x", zone="zone2", node="node-x", foo=""),
                n("node-y", zone="zone2", node="node-y"),
            ),
            (
                on("p-a1", "node-a", foo=""),
                on("p-a2", "node-a", foo=""),
                on("p-x1", "node-x", foo=""),
                on("p-y1", "node-y", foo=""),
            ),
            p({"foo": ""}, node_selector={"foo": ""}, spread=ZONE_AND_NODE),
        ),
        [{"zone1": 0, "zone2": 1}, {"node-b": 0, "node-x": 1}],
    ),
    (
        "two node inclusion Constraints, zone: ignore/ignore, node: honor/honor",
        Scene(
            (
                n("node-a", zone="zone1", node="node-a"),
                n("node-b", TAINTS, zone="zone1", node="node-b", foo=""),
                n("node-x", zone="zone2", node="node-x", foo=""),
                n("node-y", zone="zone2", node="node-y", foo=""),
            ),
            (
                on("p-a1", "node-a", foo=""),
                on("p-a2", "node-a", foo=""),
                on("p-x1", "node-x", foo=""),
                on("p-x2", "node-x", foo=""),
                on("p-y1", "node-y", foo=""),
            ),
            p(
                {"foo": ""},
                node_selector={"foo": ""},
                spread=[
                    sc.spread(1, "zone", DNS, FOO, None, IGNORE),
                    sc.spread(1, "node", DNS, FOO, None, None, HONOR),
                ],
            ),
        ),
        [{"zone1": 2, "zone2": 3}, {"node-x": 2, "node-y": 1}],
    ),
    (
        "matchLabelKeys ANDed with LabelSelector when LabelSelector isn't empty",
        Scene(
            ZONES,
            (
                on("p-a1", "node-a", foo=""),
                on("p-a2", "node-a", foo="", bar="a"),
                on("p-b1", "node-b", foo=""),
                on("p-y1", "node-y", foo="", bar="a"),
                on("p-y2", "node-y", bar=""),
            ),
            p({"foo": "", "bar": "a"}, spread=[sc.spread(1, "zone", DNS, FOO, None, None, None, ["bar"])]),
        ),
        [{"zone1": 1, "zone2": 1}],
    ),
    (
        "matchLabelKeys ANDed with LabelSelector when LabelSelector is empty",
        Scene(
            ZONES,
            FOO_A_PODS,
            p({"foo": "a"}, spread=[sc.spread(1, "zone", DNS, sc.selector(), None, None, None, ["foo"])]),
        ),
        [{"zone1": 3, "zone2": 2}],
    ),
    (
        "key in matchLabelKeys is ignored when LabelSelector is nil when feature gate enabled",
        Scene(
            ZONES,
            FOO_A_PODS,
            p({"foo": ""}, spread=[sc.spread(1, "zone", DNS, None, None, None, None, ["bar"])]),
        ),
        [{"zone1": 0, "zone2": 0}],
    ),
    (
        "no pod is matched when LabelSelector is nil when feature gate disabled",
        Scene(
            ZONES,
            FOO_A_PODS,
            p({"foo": ""}, spread=[sc.spread(1, "zone", DNS, None, None, None, None, ["bar"])]),
        ),
        [{"zone1": 0, "zone2": 0}],
    ),
    (
        "key in matchLabelKeys is ignored when it isn't exist in pod.labels",
        Scene(
            ZONES,
            FOO_A_PODS,
            p({"foo": ""}, spread=[sc.spread(1, "zone", DNS, FOO, None, None, None, ["bar"])]),
        ),
        [{"zone1": 3, "zone2": 2}],
    ),
    (
        "two spreadConstraints with the same topologyKey",
        Scene(
            ZONES,
            (
                on("p-a1", "node-a", foo="", bar=""),
                on("p-b1", "node-b", foo=""),
                on("p-x1", "node-x", bar=""),
                on("p-y1", "node-y", foo="", bar=""),
                on("p-y2", "node-y", bar=""),
            ),
            p(
                {"foo": "", "bar": ""},
                spread=[sc.spread(1, "zone", DNS, FOO), sc.spread(1, "zone", DNS, BAR)],
            ),
        ),
        [{"zone1": 2, "zone2": 1}, {"zone1": 1, "zone2": 3}],
    ),
    ("skip if not specified", Scene((ZONES[0],), (), p({"foo": ""})), []),
]


# InterPodAffinity ------------------------------------------------------------------------------------
def match(key: str, operator: str, *values: str) -> Obj:
    return sc.selector(sc.requirement(key, operator, values))


def in_(key: str, topology_key: str, *values: str) -> Obj:
    """upstream's PodAffinityIn / PodAntiAffinityIn: one term."""
    return sc.term(match(key, "In", *values), topology_key)


def not_in(key: str, topology_key: str, *values: str) -> Obj:
    return sc.term(match(key, "NotIn", *values), topology_key)


def has(key: str, topology_key: str) -> Obj:
    """upstream's PodAffinityExists / PodAntiAffinityExists."""
    return sc.term(sc.exists(key), topology_key)


SECURITYSCAN = {"service": "securityscan"}
S1 = {"security": "S1"}
NODE1 = (n("node1", region="r1", zone="z11"),)
SCAN_ON_NODE1 = (on("", "node1", **SECURITYSCAN),)
TEAMS = {  # upstream's `namespaces` (scoring_test.go)
    "subteam1.team1": {"team": "team1"}, "subteam2.team1": {"team": "team1"},
    "subteam1.team2": {"team": "team2"}, "subteam2.team2": {"team": "team2"},
}  # fmt: skip
TEAM1 = match("team", "In", "team1")


def scan_pod(namespace: str, name: str = "") -> Obj:
    return sc.pod(name, namespace=namespace, labels=SECURITYSCAN, node_name="node1")


REQUIRED_AFFINITY_SINGLE_NODE: list[Row] = [
    (
        "A pod that has no required pod affinity scheduling rules can "
        "schedule onto a node with no existing pods",
        Scene(NODE1, (), p()),
        {"node1"},
    ),
    (
        "satisfies with requiredDuringSchedulingIgnoredDuringExecution in PodAffinity using In operator that "
        "matches the existing pod",
        Scene(NODE1, SCAN_ON_NODE1, p(S1, affinity=[in_("service", "region", "securityscan", "value2")])),
        {"node1"},
    ),
    (
        "satisfies the pod with requiredDuringSchedulingIgnoredDuringExecution in PodAffinity using not in "
        "operator in labelSelector that matches the existing pod",
        Scene(NODE1, SCAN_ON_NODE1, p(S1, affinity=[not_in("service", "region", "securityscan3", "value3")])),
        {"node1"},
    ),
    (
        "Does not satisfy the PodAffinity with labelSelector because of diff Namespace",
        Scene(
            NODE1,
            (scan_pod("ns"),),
            p(
                S1,
                affinity=[
                    sc.term(
                        match("service", "In", "securityscan", "value2"), "", namespaces=["DiffNameSpace"]
                    ),
                ],
            ),
        ),
        set(),
    ),
    (
        "Doesn't satisfy the PodAffinity because of unmatching labelSelector with the existing pod",
        Scene(
            NODE1, SCAN_ON_NODE1, p(SECURITYSCAN, affinity=[in_("service", "", "antivirusscan", "value2")])
        ),
        set(),
    ),
    (
        "satisfies the PodAffinity with different label Operators in multiple "
        "RequiredDuringSchedulingIgnoredDuringExecution ",
        Scene(
            NODE1,
            SCAN_ON_NODE1,
            p(
                S1,
                affinity=[
                    sc.term(
                        sc.selector(
                            sc.requirement("service", "Exists"), sc.requirement("wrongkey", "DoesNotExist")
                        ),
                        "region",
                    ),
                    sc.term(
                        sc.selector(
                            sc.requirement("service", "In", ["securityscan"]),
                            sc.requirement("service", "NotIn", ["WrongValue"]),
                        ),
                        "region",
                    ),
                ],
            ),
        ),
        {"node1"},
    ),
    (
        "The labelSelector requirements(items of matchExpressions) "
        "are ANDed, the pod cannot schedule onto the "
        "node because one of the matchExpression item don't match.",
        Scene(
            NODE1,
            SCAN_ON_NODE1,
            p(
                S1,
                affinity=[
                    sc.term(
                        sc.selector(
                            sc.requirement("service", "Exists"), sc.requirement("wrongkey", "DoesNotExist")
                        ),
                        "region",
                    ),
                    sc.term(
                        sc.selector(
                            sc.requirement("service", "In", ["securityscan2"]),
                            sc.requirement("service", "NotIn", ["WrongValue"]),
                        ),
                        "region",
                    ),
                ],
            ),
        ),
        set(),
    ),
    (
        "satisfies the PodAffinity and PodAntiAffinity with the existing pod",
        Scene(
            NODE1,
            SCAN_ON_NODE1,
            p(
                S1,
                affinity=[in_("service", "region", "securityscan", "value2")],
                anti_affinity=[in_("service", "node", "antivirusscan", "value2")],
            ),
        ),
        {"node1"},
    ),
    (
        "satisfies the PodAffinity and PodAntiAffinity and PodAntiAffinity symmetry with the existing pod",
        Scene(
            NODE1,
            (
                sc.pod(
                    labels=SECURITYSCAN,
                    node_name="node1",
                    anti_affinity=[in_("service", "node", "antivirusscan", "value2")],
                ),
            ),
            p(
                S1,
                affinity=[in_("service", "region", "securityscan", "value2")],
                anti_affinity=[in_("service", "node", "antivirusscan", "value2")],
            ),
        ),
        {"node1"},
    ),
    (
        "satisfies the PodAffinity but doesn't satisfy the PodAntiAffinity with the existing pod",
        Scene(
            NODE1,
            SCAN_ON_NODE1,
            p(
                S1,
                affinity=[in_("service", "region", "securityscan", "value2")],
                anti_affinity=[in_("service", "zone", "securityscan", "value2")],
            ),
        ),
        set(),
    ),
    (
        "satisfies the PodAffinity and PodAntiAffinity but doesn't satisfy PodAntiAffinity symmetry with the "
        "existing pod",
        Scene(
            NODE1,
            (
                sc.pod(
                    labels=SECURITYSCAN,
                    node_name="node1",
                    anti_affinity=[in_("service", "zone", "securityscan", "value2")],
                ),
            ),
            p(
                SECURITYSCAN,
                affinity=[in_("service", "region", "securityscan", "value2")],
                anti_affinity=[in_("service", "node", "antivirusscan", "value2")],
            ),
        ),
        set(),
    ),
    (
        "pod matches its own Label in PodAffinity and that matches the existing pod Labels",
        Scene(
            NODE1,
            (on("", "node2", **SECURITYSCAN),),
            p(SECURITYSCAN, affinity=[not_in("service", "region", "securityscan", "value2")]),
        ),
        set(),
    ),
    (
        "verify that PodAntiAffinity from existing pod is respected "
        "when pod has no AntiAffinity constraints. "
        "doesn't satisfy PodAntiAffinity symmetry with the existing pod",
        Scene(
            NODE1,
            (
                sc.pod(
                    labels=SECURITYSCAN,
                    node_name="node1",
                    anti_affinity=[in_("service", "zone", "securityscan", "value2")],
                ),
            ),
            p(SECURITYSCAN),
        ),
        set(),
    ),
    (
        "verify that PodAntiAffinity from existing pod is respected "
        "when pod has no AntiAffinity constraints. "
        "satisfy PodAntiAffinity symmetry with the existing pod",
        Scene(
            NODE1,
            (
                sc.pod(
                    labels=SECURITYSCAN,
                    node_name="node1",
                    anti_affinity=[not_in("service", "zone", "securityscan", "value2")],
                ),
            ),
            p(SECURITYSCAN),
        ),
        {"node1"},
    ),
    (
        "satisfies the PodAntiAffinity with existing pod but doesn't satisfy PodAntiAffinity symmetry with "
        "incoming pod",
        Scene(
            NODE1,
            (sc.pod(labels=S1, node_name="node1", anti_affinity=[has("security", "zone")]),),
            p(SECURITYSCAN, anti_affinity=[has("service", "region"), has("security", "region")]),
        ),
        set(),
    ),
    (
        "PodAntiAffinity symmetry check a1: incoming pod and existing pod partially match each other on "
        "AffinityTerms",
        Scene(
            NODE1,
            (sc.pod(labels=S1, node_name="node1", anti_affinity=[has("security", "zone")]),),
            p(SECURITYSCAN, anti_affinity=[has("service", "zone"), has("security", "zone")]),
        ),
        set(),
    ),
    (
        "PodAntiAffinity symmetry check a2: incoming pod and existing pod partially match each other on "
        "AffinityTerms",
        Scene(
            NODE1,
            (
                sc.pod(
                    labels=SECURITYSCAN,
                    node_name="node1",
                    anti_affinity=[has("service", "zone"), has("security", "zone")],
                ),
            ),
            p(S1, anti_affinity=[has("security", "zone")]),
        ),
        set(),
    ),
    (
        "PodAntiAffinity symmetry check b1: incoming pod and existing pod partially match each other on "
        "AffinityTerms",
        Scene(
            NODE1,
            (
                sc.pod(
                    labels={"def": "", "xyz": ""},
                    node_name="node1",
                    anti_affinity=[has("abc", "zone"), has("def", "zone")],
                ),
            ),
            p({"abc": "", "xyz": ""}, anti_affinity=[has("abc", "zone"), has("def", "zone")]),
        ),
        set(),
    ),
    (
        "PodAntiAffinity symmetry check b2: incoming pod and existing pod partially match each other on "
        "AffinityTerms",
        Scene(
            NODE1,
            (
                sc.pod(
                    labels={"abc": "", "xyz": ""},
                    node_name="node1",
                    anti_affinity=[has("abc", "zone"), has("def", "zone")],
                ),
            ),
            p({"def": "", "xyz": ""}, anti_affinity=[has("abc", "zone"), has("def", "zone")]),
        ),
        set(),
    ),
    (
        "PodAffinity fails PreFilter with an invalid affinity label syntax",
        Scene(
            NODE1,
            (),
            p(
                SECURITYSCAN,
                affinity=[
                    in_("service", "region", "{{.bad-value.}}"),
                    in_("service", "node", "antivirusscan", "value2"),
                ],
            ),
        ),
        set(),
    ),
    (
        "PodAntiAffinity fails PreFilter with an invalid antiaffinity label syntax",
        Scene(
            NODE1,
            (),
            p(
                SECURITYSCAN,
                affinity=[
                    in_("service", "region", "foo"),
                    in_("service", "node", "{{.bad-value.}}"),
                ],
            ),
        ),
        set(),
    ),
    (
        "affinity with NamespaceSelector",
        Scene(
            NODE1,
            (scan_pod("subteam1.team1"),),
            p(
                S1,
                affinity=[
                    sc.term(
                        match("service", "In", "securityscan", "value2"), "region", namespace_selector=TEAM1
                    ),
                ],
            ),
            TEAMS,
        ),
        {"node1"},
    ),
    (
        "affinity with non-matching NamespaceSelector",
        Scene(
            NODE1,
            (scan_pod("subteam1.team2"),),
            p(
                S1,
                affinity=[
                    sc.term(
                        match("service", "In", "securityscan", "value2"), "region", namespace_selector=TEAM1
                    ),
                ],
            ),
            TEAMS,
        ),
        set(),
    ),
    (
        "anti-affinity with matching NamespaceSelector",
        Scene(
            NODE1,
            (scan_pod("subteam2.team1"),),
            sc.pod(
                "p",
                namespace="subteam1.team1",
                labels=S1,
                anti_affinity=[
                    sc.term(
                        match("service", "In", "securityscan", "value2"), "zone", namespace_selector=TEAM1
                    ),
                ],
            ),
            TEAMS,
        ),
        set(),
    ),
    (
        "anti-affinity with matching all NamespaceSelector",
        Scene(
            NODE1,
            (scan_pod("subteam2.team1"),),
            sc.pod(
                "p",
                namespace="subteam1.team1",
                labels=S1,
                anti_affinity=[
                    sc.term(
                        match("service", "In", "securityscan", "value2"),
                        "zone",
                        namespace_selector=sc.selector(),
                    ),
                ],
            ),
            TEAMS,
        ),
        set(),
    ),
    (
        "anti-affinity with non-matching NamespaceSelector",
        Scene(
            NODE1,
            (scan_pod("subteam1.team2"),),
            sc.pod(
                "p",
                namespace="subteam1.team1",
                labels=S1,
                anti_affinity=[
                    sc.term(
                        match("service", "In", "securityscan", "value2"), "zone", namespace_selector=TEAM1
                    ),
                ],
            ),
            TEAMS,
        ),
        {"node1"},
    ),
]

CHINA, CHINA_AZ1, INDIA = {"region": "China"}, {"region": "China", "az": "az1"}, {"region": "India"}
R1Z1_R1Z1 = (
    n("nodeA", region="r1", zone="z1", hostname="nodeA"),
    n("nodeB", region="r1", zone="z1", hostname="nodeB"),
)
R1Z1_R1Z2 = (
    n("nodeA", region="r1", zone="z1", hostname="nodeA"),
    n("nodeB", region="r1", zone="z2", hostname="nodeB"),
)
REQUIRED_AFFINITY_MULTIPLE_NODES: list[Row] = [
    (
        "A pod can be scheduled onto all the nodes that have the same topology key & label value with one of "
        "them has an existing pod that matches the affinity rules",
        Scene(
            (n("node1", **CHINA), n("node2", **CHINA_AZ1), n("node3", **INDIA)),
            (on("p1", "node1", foo="bar"),),
            p(affinity=[in_("foo", "region", "bar")]),
        ),
        {"node1", "node2"},
    ),
    (
        "The affinity rule is to schedule all of the pods of this "
        "collection to the same zone. The first pod of "
        "the collection should not be blocked from being scheduled "
        "onto any node, even there's no existing pod "
        "that matches the rule anywhere.",
        Scene(
            (n("nodeA", zone="az1", hostname="h1"), n("nodeB", zone="az2", hostname="h2")),
            (on("p1", "nodeA", foo="bar"),),
            p(
                {"foo": "bar", "service": "securityscan"},
                affinity=[in_("foo", "zone", "bar"), in_("service", "zone", "securityscan")],
            ),
        ),
        {"nodeA", "nodeB"},
    ),
    (
        "The first pod of the collection can only be scheduled on "
        "nodes labelled with the requested topology keys",
        Scene(
            (n("nodeA", zoneLabel="az1", hostname="h1"), n("nodeB", zoneLabel="az2", hostname="h2")),
            (on("p1", "nodeA", foo="bar"),),
            p(
                {"foo": "bar", "service": "securityscan"},
                affinity=[in_("foo", "zone", "bar"), in_("service", "zone", "securityscan")],
            ),
        ),
        set(),
    ),
    (
        "NodeA and nodeB have same topologyKey and label value. NodeA has an existing pod that matches the "
        "inter pod affinity rule. The pod can not be scheduled onto nodeA and nodeB.",
        Scene(
            (n("nodeA", region="r1", hostname="nodeA"), n("nodeB", region="r1", hostname="nodeB")),
            (on("", "nodeA", foo="abc"),),
            p(anti_affinity=[in_("foo", "region", "abc")]),
        ),
        set(),
    ),
    (
        "This test ensures that anti-affinity matches a pod when any "
        "term of the anti-affinity rule matches a pod.",
        Scene(
            R1Z1_R1Z2,
            (on("", "nodeA", foo="abc", service="securityscan"),),
            p(anti_affinity=[in_("foo", "region", "abc"), in_("service", "zone", "securityscan")]),
        ),
        set(),
    ),
    (
        "NodeA and nodeB have same topologyKey and label value. NodeA has an existing pod that matches the "
        "inter pod affinity rule. The pod can not be scheduled onto "
        "nodeA and nodeB but can be scheduled onto "
        "nodeC",
        Scene(
            (n("nodeA", **CHINA), n("nodeB", **CHINA_AZ1), n("nodeC", **INDIA)),
            (on("", "nodeA", foo="abc"),),
            p(anti_affinity=[in_("foo", "region", "abc")]),
        ),
        {"nodeC"},
    ),
    (
        "NodeA and nodeB have same topologyKey and label value. NodeA has an existing pod that matches the "
        "inter pod affinity rule. The pod can not be scheduled onto nodeA, nodeB, but can be scheduled onto "
        "nodeC (NodeC has an existing pod that match the inter pod affinity rule but in different namespace)",
        Scene(
            (n("nodeA", **CHINA), n("nodeB", **CHINA_AZ1), n("nodeC", **INDIA)),
            (
                on("", "nodeA", "NS1", foo="bar"),
                sc.pod(namespace="NS2", node_name="nodeC", anti_affinity=[in_("foo", "region", "123")]),
            ),
            sc.pod("p", namespace="NS1", labels={"foo": "123"}, anti_affinity=[in_("foo", "region", "bar")]),
        ),
        {"nodeC"},
    ),
    (
        "Test existing pod's anti-affinity: if an existing pod has a term with invalid topologyKey, "
        "labelSelector of the term is firstly checked, and then topologyKey of the term is also checked",
        Scene(
            R1Z1_R1Z1,
            (sc.pod(node_name="nodeA", anti_affinity=[has("foo", "invalid-node-label")]),),
            p({"foo": ""}),
        ),
        {"nodeA", "nodeB"},
    ),
    (
        "Test incoming pod's anti-affinity: even if labelSelector "
        "matches, we still check if topologyKey matches",
        Scene(R1Z1_R1Z1, (on("", "nodeA", foo=""),), p(anti_affinity=[has("foo", "invalid-node-label")])),
        {"nodeA", "nodeB"},
    ),
    (
        "Test existing pod's anti-affinity: incoming pod wouldn't considered as a fit as it violates each "
        "existingPod's terms on all nodes",
        Scene(
            R1Z1_R1Z2,
            (
                sc.pod(node_name="nodeA", anti_affinity=[has("foo", "zone")]),
                sc.pod(node_name="nodeA", anti_affinity=[has("bar", "region")]),
            ),
            p({"foo": "", "bar": ""}),
        ),
        set(),
    ),
    (
        "Test incoming pod's anti-affinity: incoming pod wouldn't "
        "considered as a fit as it at least violates "
        "one anti-affinity rule of existingPod",
        Scene(
            R1Z1_R1Z2,
            (on("", "nodeA", foo=""), on("", "nodeB", bar="")),
            p(anti_affinity=[has("foo", "zone"), has("bar", "region")]),
        ),
        set(),
    ),
    (
        "Test existing pod's anti-affinity: only when labelSelector "
        "and topologyKey both match, it's counted as "
        "a single term match - case when one term has invalid topologyKey",
        Scene(
            R1Z1_R1Z2,
            (
                sc.pod(
                    node_name="nodeA", anti_affinity=[has("foo", "invalid-node-label"), has("bar", "zone")]
                ),
            ),
            p({"foo": "", "bar": ""}),
        ),
        {"nodeB"},
    ),
    (
        "Test incoming pod's anti-affinity: only when labelSelector "
        "and topologyKey both match, it's counted as "
        "a single term match - case when one term has invalid topologyKey",
        Scene(
            R1Z1_R1Z2,
            (on("podA", "nodeA", foo="", bar=""),),
            p(anti_affinity=[has("foo", "invalid-node-label"), has("bar", "zone")]),
        ),
        {"nodeB"},
    ),
    (
        "Test existing pod's anti-affinity: only when labelSelector "
        "and topologyKey both match, it's counted as "
        "a single term match - case when all terms have valid topologyKey",
        Scene(
            R1Z1_R1Z2,
            (sc.pod(node_name="nodeA", anti_affinity=[has("foo", "region"), has("bar", "zone")]),),
            p({"foo": "", "bar": ""}),
        ),
        set(),
    ),
    (
        "Test incoming pod's anti-affinity: only when labelSelector "
        "and topologyKey both match, it's counted as "
        "a single term match - case when all terms have valid topologyKey",
        Scene(
            R1Z1_R1Z2,
            (on("", "nodeA", foo="", bar=""),),
            p(anti_affinity=[has("foo", "region"), has("bar", "zone")]),
        ),
        set(),
    ),
    (
        "Test existing pod's anti-affinity: existingPod on nodeA and "
        "nodeB has at least one anti-affinity term "
        "matches incoming pod, so incoming pod can only be scheduled to nodeC",
        Scene(
            (*R1Z1_R1Z2, n("nodeC", region="r1", zone="z3", hostname="nodeC")),
            (
                sc.pod(node_name="nodeA", anti_affinity=[has("foo", "zone"), has("labelA", "zone")]),
                sc.pod(node_name="nodeB", anti_affinity=[has("bar", "zone"), has("labelB", "zone")]),
            ),
            p({"foo": "", "bar": ""}),
        ),
        {"nodeC"},
    ),
    (
        "Test incoming pod's affinity: firstly check if all affinityTerms match, and then check if all "
        "topologyKeys match",
        Scene(
            R1Z1_R1Z1,
            (on("pod1", "nodeA", foo="", bar=""),),
            p(affinity=[has("foo", "region"), has("bar", "zone")]),
        ),
        {"nodeA", "nodeB"},
    ),
    (
        "Test incoming pod's affinity: firstly check if all affinityTerms match, and then check if all "
        "topologyKeys match, and the match logic should be satisfied on the same pod",
        Scene(
            R1Z1_R1Z2,
            (on("pod1", "nodeA", foo=""), on("pod2", "nodeB", bar="")),
            p(affinity=[has("foo", "region"), has("bar", "zone")]),
        ),
        set(),
    ),
]


# VolumeRestrictions ----------------------------------------------------------------------------------
NODE_1 = (n("node-1"),)


def disk_rows(kind: str, source: Obj, other: Obj) -> list[Row]:
    """One of upstream's four disk tables: a pod with no volume, the same disk, another disk."""
    mine, theirs = {"name": "vol", kind: source}, {"name": "vol", kind: other}
    return [
        ("nothing", Scene(NODE_1, (), p()), {"node-1"}),
        ("one state", Scene(NODE_1, (sc.pod(node_name="node-1", volumes=[mine]),), p()), {"node-1"}),
        (
            "same state",
            Scene(NODE_1, (sc.pod(node_name="node-1", volumes=[mine]),), p(volumes=[mine])),
            set(),
        ),
        (
            "different state",
            Scene(NODE_1, (sc.pod(node_name="node-1", volumes=[mine]),), p(volumes=[theirs])),
            {"node-1"},
        ),
    ]


GCE_DISK_CONFLICTS = [
    *disk_rows("gcePersistentDisk", {"pdName": "foo"}, {"pdName": "bar"}),
    (
        "pod with a volume that doesn't have restrictions",
        Scene(NODE_1, (), p(volumes=[{"name": "volume with no restriction", "emptyDir": {}}])),
        {"node-1"},
    ),
]
AWS_DISK_CONFLICTS = disk_rows("awsElasticBlockStore", {"volumeID": "foo"}, {"volumeID": "bar"})
RBD_DISK_CONFLICTS = disk_rows(
    "rbd",
    {"monitors": ["a", "b"], "pool": "foo", "image": "bar", "fsType": "ext4"},
    {"monitors": ["c", "d"], "pool": "foo", "image": "bar", "fsType": "ext4"},
)
ISCSI_DISK_CONFLICTS = disk_rows(
    "iscsi",
    {
        "targetPortal": "127.0.0.1:3260",
        "iqn": "iqn.2016-12.server:storage.target01",
        "fsType": "ext4",
        "lun": 0,
    },
    {
        "targetPortal": "127.0.0.1:3260",
        "iqn": "iqn.2017-12.server:storage.target01",
        "fsType": "ext4",
        "lun": 0,
    },
)


def pvcs(*names: str) -> list[Obj]:
    """upstream's st.PVC: a volume named after its claim."""
    return [{"name": name, "persistentVolumeClaim": {"claimName": name}} for name in names]


RWOP_1, RWOP_2 = (
    sc.claim("claim-with-rwop-1", "ReadWriteOncePod"),
    sc.claim("claim-with-rwop-2", "ReadWriteOncePod"),
)
RWX = sc.claim("claim-with-rwx", "ReadWriteMany")
WITH_ONE_PVC = sc.pod("pod-with-one-pvc", node_name="node-1", volumes=pvcs("claim-with-rwop-1"))
WITH_TWO_PVCS = sc.pod(
    "pod-with-two-pvcs", node_name="node-1", volumes=pvcs("claim-with-rwop-1", "claim-with-rwop-2")
)
WITH_RWX = sc.pod("pod-with-rwx", node_name="node-1", volumes=pvcs("claim-with-rwx"))


def pending(obj: Obj) -> Obj:
    """The pod as the incoming one: not on a node."""
    out = {**obj, "spec": {k: v for k, v in obj["spec"].items() if k != "nodeName"}}
    return out


ACCESS_MODE_CONFLICTS: list[Row] = [
    ("nothing", Scene(NODE_1, (), p()), {"node-1"}),
    ("failed to get PVC", Scene(NODE_1, (), pending(WITH_ONE_PVC)), set()),
    (
        "no access mode conflict",
        Scene(NODE_1, (WITH_RWX,), pending(WITH_ONE_PVC), claims=(RWOP_1, RWX)),
        {"node-1"},
    ),
    (
        "access mode conflict, unschedulable",
        Scene(
            NODE_1,
            (WITH_ONE_PVC, WITH_RWX),
            pending(sc.pod("pod-with-one-conflict", volumes=pvcs("claim-with-rwop-1"))),
            claims=(RWOP_1, RWX),
        ),
        set(),
    ),
    (
        "two conflicts, unschedulable",
        Scene(
            NODE_1,
            (WITH_TWO_PVCS, WITH_RWX),
            sc.pod("pod-with-two-conflicts", volumes=pvcs("claim-with-rwop-1", "claim-with-rwop-2")),
            claims=(RWOP_1, RWOP_2, RWX),
        ),
        set(),
    ),
]


# The cases -------------------------------------------------------------------------------------------
def params(test: str, rows: Sequence[Row]) -> list[Any]:
    return [pytest.param(scene, ok, id=kube_case(test, name)) for name, scene, ok in rows]


async def check(probe: CoreProbe, scene: Scene, plugin: Mapping[str, bool]) -> None:
    """The pod placed exactly on the nodes the whole scheduler lets it onto, each tried alone."""
    want = sc.expected(scene.incoming, scene.nodes, plugin)
    got = await sc.verdicts(probe, scene)
    assert sc.placed_map(got) == want, f"want placed {want}; got {sc.describe(got)}"


def verdict_of(scene: Scene, ok: set[str]) -> dict[str, bool]:
    return {name: name in ok for name in all_of(scene.nodes)}


@pytest.mark.parametrize(("scene", "ok"), params("TestSingleConstraint", SINGLE_CONSTRAINT))
async def test_single_constraint(probe: CoreProbe, scene: Scene, ok: set[str]) -> None:
    await check(probe, scene, verdict_of(scene, ok))


@pytest.mark.parametrize(("scene", "ok"), params("TestMultipleConstraints", MULTIPLE_CONSTRAINTS))
async def test_multiple_constraints(probe: CoreProbe, scene: Scene, ok: set[str]) -> None:
    await check(probe, scene, verdict_of(scene, ok))


@pytest.mark.parametrize(
    ("scene", "states"),
    [
        pytest.param(scene, states, id=kube_case("TestPreFilterState", name))
        for name, scene, states in PRE_FILTER_STATE
    ],
)
async def test_pre_filter_state(probe: CoreProbe, scene: Scene, states: list[dict[str, int]]) -> None:
    await check(probe, scene, sc.spread_filter_by_state(scene.incoming, scene.nodes, states))


@pytest.mark.parametrize(
    ("scene", "ok"), params("TestRequiredAffinitySingleNode", REQUIRED_AFFINITY_SINGLE_NODE)
)
async def test_required_affinity_single_node(probe: CoreProbe, scene: Scene, ok: set[str]) -> None:
    await check(probe, scene, verdict_of(scene, ok))


@pytest.mark.parametrize(
    ("scene", "ok"), params("TestRequiredAffinityMultipleNodes", REQUIRED_AFFINITY_MULTIPLE_NODES)
)
async def test_required_affinity_multiple_nodes(probe: CoreProbe, scene: Scene, ok: set[str]) -> None:
    await check(probe, scene, verdict_of(scene, ok))


@pytest.mark.parametrize(
    ("scene", "ok"),
    [
        *params("TestGCEDiskConflicts", GCE_DISK_CONFLICTS),
        *params("TestAWSDiskConflicts", AWS_DISK_CONFLICTS),
        *params("TestRBDDiskConflicts", RBD_DISK_CONFLICTS),
        *params("TestISCSIDiskConflicts", ISCSI_DISK_CONFLICTS),
        *params("TestAccessModeConflicts", ACCESS_MODE_CONFLICTS),
    ],
)
async def test_volume_restrictions(probe: CoreProbe, scene: Scene, ok: set[str]) -> None:
    await check(probe, scene, verdict_of(scene, ok))
