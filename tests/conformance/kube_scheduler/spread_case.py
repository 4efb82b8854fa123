"""Running a kube-scheduler filter row through the Kubernetes shim's translation and the core.

A row is a Scene: Kubernetes Nodes, the Pods already on them and the incoming Pod, as the API serves
them (JSON), plus the namespaces' labels and, for volume rows, the claims and volumes. `verdicts` asks,
for each node of the scene, whether the core places the incoming pod there when only that node has room
for it: every node is registered (so every domain and every pod counts as upstream counts them), the
others full on their `pods` slots, so resources decide nothing on the node under test and keep the pod off
the rest.

Everything sent is what the shim sends, made with its own functions (shim_k8s.readers.translate, and
shim_k8s.volumes.cache.Volumes for the volume tags and for whether the shim asks for the pod at all): nodes as
node_info, pods of another scheduler already on a node as foreign allocations (bound_pod_allocation), the
incoming pod's application (application_request) and ask (pod_ask). The core is driven over gRPC with the
probe's client and read back with `client.barrier()`.

`kube_filters_admit` is this module's oracle for the other filters a whole kube-scheduler runs beside the
one an upstream row tests (NodeAffinity with the pod's nodeSelector, TaintToleration): upstream's unit
rows run one plugin alone, and say so where a node they pass would be refused by those.
"""

from __future__ import annotations

import copy
import itertools
import json
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any
from urllib.parse import quote

from shim_k8s.api.objects import WatchEvent
from shim_k8s.readers import pod_identity, translate
from shim_k8s.readers.priority import PodPriority, PriorityResolver
from shim_k8s.volumes.cache import Volumes
from shim_k8s.volumes.matching import BIND_COMPLETED
from si.v1 import si_pb2
from tests.conformance.core_probe import CoreProbe
from tests.recording_client import Observed

Obj = dict[str, Any]

SCHEDULER = "yunikorn"  # the shim's schedulerName: the incoming pod is ours
OTHER_SCHEDULER = "default-scheduler"  # the pods already on the nodes: another scheduler's (foreign)
# As shim_k8s.pods sends another scheduler's pod: never ours to move, its priority not counted.
FOREIGN_PRIORITY = PodPriority(0, allow_preempt_other=False, allow_preempt_self=False)

# Every application lands in one queue, whatever its namespace: placement is not what these rows test.
CONFIG = """
partitions:
  - name: default
    placementrules:
      - name: fixed
        value: root.sandbox
        create: true
    queues:
      - name: root
        submitacl: "*"
"""

ROOM = {"cpu": "64", "memory": "256Gi"}  # beside `pods`: more than any row asks
OPEN_PODS = 110  # the kubelet's default pod slots: the node under test has room for the pod

UNSCHEDULABLE_TAINT: Obj = {"key": "node.kubernetes.io/unschedulable", "effect": "NoSchedule"}
_HARD_EFFECTS = ("NoSchedule", "NoExecute")
_uids = itertools.count(1)


# Kubernetes objects ------------------------------------------------------------------------------
def node(name: str, labels: Mapping[str, str] | None = None, taints: Sequence[Obj] = ()) -> Obj:
    """A Node (its allocatable is set when it is sent: see `verdicts`)."""
    out: Obj = {"apiVersion": "v1", "kind": "Node", "metadata": {"name": name, "labels": dict(labels or {})}}
    out["spec"] = {"taints": [dict(t) for t in taints]} if taints else {}
    out["status"] = {"allocatable": {}}
    return out


def pod(
    name: str = "",
    *,
    namespace: str = "",
    labels: Mapping[str, str] | None = None,
    node_name: str = "",
    spread: Sequence[Obj] = (),
    node_selector: Mapping[str, str] | None = None,
    node_affinity: Obj | None = None,
    tolerations: Sequence[Obj] = (),
    affinity: Sequence[Obj] = (),
    anti_affinity: Sequence[Obj] = (),
    volumes: Sequence[Obj] = (),
    terminating: bool = False,
) -> Obj:
    """A Pod as the API serves it. An empty namespace is the API server's `default`; `affinity` and
    `anti_affinity` are required pod (anti-)affinity terms; `node_affinity` a required node selector."""
    meta: Obj = {"name": name or f"pod-{next(_uids)}", "namespace": namespace or "default"}
    meta["uid"] = f"uid-{meta['namespace']}-{meta['name']}-{next(_uids)}"
    meta["labels"] = dict(labels or {})
    if terminating:
        meta["deletionTimestamp"] = "2026-01-01T00:00:00Z"
        meta["deletionGracePeriodSeconds"] = 30
    spec: Obj = {"containers": [{"name": "main", "image": "registry.k8s.io/pause:3.10"}]}
    if node_name:
        spec["nodeName"] = node_name
    if spread:
        spec["topologySpreadConstraints"] = [dict(c) for c in spread]
    if node_selector:
        spec["nodeSelector"] = dict(node_selector)
    if tolerations:
        spec["tolerations"] = [dict(t) for t in tolerations]
    pod_affinity: Obj = {}
    if node_affinity:
        pod_affinity["nodeAffinity"] = {"requiredDuringSchedulingIgnoredDuringExecution": node_affinity}
    if affinity:
        pod_affinity["podAffinity"] = {"requiredDuringSchedulingIgnoredDuringExecution": list(affinity)}
    if anti_affinity:
        pod_affinity["podAntiAffinity"] = {
            "requiredDuringSchedulingIgnoredDuringExecution": list(anti_affinity)
        }
    if pod_affinity:
        spec["affinity"] = pod_affinity
    if volumes:
        spec["volumes"] = [dict(v) for v in volumes]
    return {"apiVersion": "v1", "kind": "Pod", "metadata": meta, "spec": spec, "status": {"phase": "Pending"}}


def requirement(key: str, operator: str, values: Sequence[str] = ()) -> Obj:
    out: Obj = {"key": key, "operator": operator}
    if values:
        out["values"] = list(values)
    return out


def selector(*requirements: Obj, match_labels: Mapping[str, str] | None = None) -> Obj:
    """A LabelSelector; with neither argument the empty selector, which selects everything."""
    out: Obj = {}
    if match_labels:
        out["matchLabels"] = dict(match_labels)
    if requirements:
        out["matchExpressions"] = list(requirements)
    return out


def exists(key: str) -> Obj:
    return selector(requirement(key, "Exists"))


def spread(
    max_skew: int,
    topology_key: str,
    when: str,
    label_selector: Obj | None,
    min_domains: int | None = None,
    node_affinity_policy: str | None = None,
    node_taints_policy: str | None = None,
    match_label_keys: Sequence[str] | None = None,
) -> Obj:
    """A TopologySpreadConstraint, its arguments in the order of upstream's st.SpreadConstraint."""
    out: Obj = {"maxSkew": max_skew, "topologyKey": topology_key, "whenUnsatisfiable": when}
    if label_selector is not None:
        out["labelSelector"] = label_selector
    if min_domains is not None:
        out["minDomains"] = min_domains
    if node_affinity_policy is not None:
        out["nodeAffinityPolicy"] = node_affinity_policy
    if node_taints_policy is not None:
        out["nodeTaintsPolicy"] = node_taints_policy
    if match_label_keys:
        out["matchLabelKeys"] = list(match_label_keys)
    return out


def term(
    label_selector: Obj | None,
    topology_key: str,
    namespaces: Sequence[str] = (),
    namespace_selector: Obj | None = None,
) -> Obj:
    """A PodAffinityTerm (an empty topologyKey is left out, as Go's omitempty leaves it)."""
    out: Obj = {}
    if label_selector is not None:
        out["labelSelector"] = label_selector
    if namespaces:
        out["namespaces"] = list(namespaces)
    if namespace_selector is not None:
        out["namespaceSelector"] = namespace_selector
    if topology_key:
        out["topologyKey"] = topology_key
    return out


def node_selector_terms(*requirements: Obj) -> Obj:
    """A required NodeSelector of one term with these match expressions."""
    return {"nodeSelectorTerms": [{"matchExpressions": list(requirements)}]}


def tolerate(key: str) -> Obj:
    """As upstream's st.Toleration: the key tolerated with Exists, for NoSchedule."""
    return {"key": key, "operator": "Exists", "effect": "NoSchedule"}


def claim(name: str, access_mode: str, namespace: str = "default") -> Obj:
    """A PersistentVolumeClaim, bound to its own volume (`volume_for`) as the PV controller leaves it."""
    return {
        "apiVersion": "v1", "kind": "PersistentVolumeClaim",
        "metadata": {"name": name, "namespace": namespace, "annotations": {BIND_COMPLETED: "yes"}},
        "spec": {"accessModes": [access_mode], "volumeName": f"pv-{name}",
                 "resources": {"requests": {"storage": "1Gi"}}},
        "status": {"phase": "Bound", "accessModes": [access_mode], "capacity": {"storage": "1Gi"}},
    }  # fmt: skip


def volume_for(bound: Obj) -> Obj:
    """The PersistentVolume a claim is bound to: a network volume, usable from any node."""
    meta = bound["metadata"]
    return {
        "apiVersion": "v1", "kind": "PersistentVolume", "metadata": {"name": bound["spec"]["volumeName"]},
        "spec": {"capacity": {"storage": "1Gi"}, "accessModes": list(bound["spec"]["accessModes"]),
                 "nfs": {"server": "nfs.example.com", "path": f"/{meta['name']}"},
                 "claimRef": {"kind": "PersistentVolumeClaim", "namespace": meta["namespace"],
                              "name": meta["name"]}},
        "status": {"phase": "Bound"},
    }  # fmt: skip


# A row -------------------------------------------------------------------------------------------
@dataclass(frozen=True)
class Scene:
    nodes: tuple[Obj, ...]
    existing: tuple[Obj, ...]  # pods on nodes; those on a node not in `nodes` are not sent (`try_on`)
    incoming: Obj
    namespaces: Mapping[str, Mapping[str, str]] = field(default_factory=dict)  # name -> its labels
    claims: tuple[Obj, ...] = ()  # PersistentVolumeClaims, each bound to its `volume_for`


@dataclass(frozen=True)
class Outcome:
    """What became of the incoming pod with one node open."""

    node: str = ""  # the node it was placed on
    refused: str = ""  # the core refused its ask
    waits: str = ""  # the shim would not ask for it (its volumes are not ready)
    why_pending: str = ""  # pending: its latest reason on REST (for the failure message only)

    @property
    def placed(self) -> bool:
        return bool(self.node)

    def __str__(self) -> str:
        if self.node:
            return f"placed on {self.node}"
        if self.refused:
            return f"ask refused: {self.refused}"
        return f"not asked: {self.waits}" if self.waits else f"pending ({self.why_pending})"


def node_name(obj: Obj) -> str:
    return str(obj["metadata"]["name"])


def _labels(obj: Obj) -> dict[str, str]:
    return dict((obj.get("metadata") or {}).get("labels") or {})


def _with_room(obj: Obj, pod_slots: int) -> Obj:
    out = copy.deepcopy(obj)
    out["status"]["allocatable"] = {**ROOM, "pods": str(pod_slots)}
    return out


def _volumes(scene: Scene) -> Volumes:
    volumes = Volumes()
    for bound in scene.claims:
        volumes.update("persistentvolumes", WatchEvent.ADDED, volume_for(bound))
        volumes.update("persistentvolumeclaims", WatchEvent.ADDED, bound)
    return volumes


def _namespace_labels(scene: Scene, obj: Obj) -> Mapping[str, str]:
    return scene.namespaces.get(obj["metadata"].get("namespace", "default"), {})


async def try_on(probe: CoreProbe, scene: Scene, open_node: str) -> Outcome:
    """Register afresh; send every node of the scene (only `open_node` with room for one more pod),
    the pods already on them, then the incoming pod's application and ask; say where it went."""
    assert await probe.register(CONFIG)
    client, seen = probe.client, probe.client.seen
    volumes = _volumes(scene)
    names = [node_name(n) for n in scene.nodes]
    existing = [p for p in scene.existing if p["spec"].get("nodeName") in names]
    infos = []
    for obj in scene.nodes:
        here = sum(1 for p in existing if p["spec"]["nodeName"] == node_name(obj))
        slots = OPEN_PODS if node_name(obj) == open_node else here
        csi = volumes.csi_limits(node_name(obj))
        infos.append(translate.node_info(_with_room(obj, slots), si_pb2.NodeInfo.CREATE, csi))
    answered = len(seen.accepted_nodes) + len(seen.rejected_nodes)
    await client.add_nodes(*infos)
    await client.wait_nodes_answered(answered + len(infos))
    refused_nodes = [r for r in seen.rejected_nodes if r.nodeID in names]
    assert not refused_nodes, f"the core refused nodes of the scene: {refused_nodes}"

    run = next(_uids)  # keys of this run's pods: what an earlier run was told cannot be mistaken for it
    foreign = []
    for obj in existing:
        on_node = copy.deepcopy(obj)
        on_node["metadata"]["uid"] += f"-run{run}"
        on_node["spec"].setdefault("schedulerName", OTHER_SCHEDULER)
        alloc = translate.bound_pod_allocation(
            on_node, FOREIGN_PRIORITY, ours=False, namespace_labels=_namespace_labels(scene, on_node),
            request=translate.pod_request(on_node),
        )  # fmt: skip
        alloc.allocationTags.update(volumes.tags(on_node))
        foreign.append(alloc)
    if foreign:
        await client.asks(foreign)

    incoming = copy.deepcopy(scene.incoming)
    incoming["metadata"]["uid"] += f"-run{run}"
    incoming["spec"]["schedulerName"] = SCHEDULER
    why, volume_terms = volumes.placement(incoming)
    if why:  # as shim_k8s.pods: a pod whose volumes are not ready is not asked for
        await client.barrier()
        _no_refused_pods(seen, foreign)
        return Outcome(waits=why)
    app_id = pod_identity.application_id(incoming)
    accepted_before = seen.accepted_apps.count(app_id)
    await client.add_applications(translate.application_request(incoming, app_id))
    await client.wait_for(
        lambda: seen.accepted_apps.count(app_id) > accepted_before, 10.0, f"application {app_id} accepted"
    )
    ask = translate.pod_ask(
        incoming, PriorityResolver().resolve(incoming), app_id, task_group="", volume_terms=volume_terms,
        namespace_labels=_namespace_labels(scene, incoming), request=translate.pod_request(incoming),
    )  # fmt: skip
    ask.allocationTags.update(volumes.tags(incoming))
    await client.asks([ask])
    await client.barrier()
    _no_refused_pods(seen, foreign)
    key = ask.allocationKey
    placed = [a.nodeID for a in seen.new_allocations if a.allocationKey == key]
    if placed:
        return Outcome(node=placed[-1])
    refused = [r.reason for r in seen.rejected_allocations if r.allocationKey == key]
    if refused:
        return Outcome(refused=refused[-1])
    return Outcome(why_pending=await _pending_reason(probe, app_id, key))


async def _pending_reason(probe: CoreProbe, app_id: str, key: str) -> str:
    """The ask's latest pending reason as /ws/v1/partition/{p}/application/{id} shows it."""
    app = await probe.get(f"{probe.partition_path()}/application/{quote(app_id, safe='')}")
    request = next((r for r in app.get("requests") or [] if r.get("allocationKey") == key), None)
    log = (request or {}).get("allocationLog") or []
    return str(log[0].get("message", "")) if log else "no reason given"


def _no_refused_pods(seen: Observed, foreign: Sequence[si_pb2.Allocation]) -> None:
    keys = {a.allocationKey for a in foreign}
    refused = [(r.allocationKey, r.reason) for r in seen.rejected_allocations if r.allocationKey in keys]
    assert not refused, f"the core refused pods already on the scene's nodes: {refused}"


async def verdicts(probe: CoreProbe, scene: Scene) -> dict[str, Outcome]:
    """Per node of the scene, what became of the incoming pod when only that node had room for it."""
    return {node_name(n): await try_on(probe, scene, node_name(n)) for n in scene.nodes}


def placed_map(outcomes: Mapping[str, Outcome]) -> dict[str, bool]:
    return {name: outcome.placed for name, outcome in outcomes.items()}


def describe(outcomes: Mapping[str, Outcome]) -> str:
    return "; ".join(f"{name}: {outcome}" for name, outcome in outcomes.items())


# The other filters of a whole kube-scheduler ---------------------------------------------------------
def _requirement_holds(req: Obj, labels: Mapping[str, str]) -> bool:
    key, operator, values = req["key"], req["operator"], req.get("values") or []
    if operator == "In":
        return key in labels and labels[key] in values
    if operator == "NotIn":
        return key not in labels or labels[key] not in values
    if operator == "Exists":
        return key in labels
    if operator == "DoesNotExist":
        return key not in labels
    raise AssertionError(f"operator {operator} is not used by these rows")


def kube_filters_admit(incoming: Obj, target: Obj) -> bool:
    """Whether kube-scheduler's NodeAffinity (nodeSelector and required node affinity) and
    TaintToleration (NoSchedule and NoExecute taints) plugins let the pod onto the node."""
    spec, labels = incoming["spec"], _labels(target)
    if any(labels.get(k) != v for k, v in (spec.get("nodeSelector") or {}).items()):
        return False
    required = ((spec.get("affinity") or {}).get("nodeAffinity") or {}).get(
        "requiredDuringSchedulingIgnoredDuringExecution"
    )
    if required and not any(
        all(_requirement_holds(r, labels) for r in t.get("matchExpressions") or [])
        for t in required["nodeSelectorTerms"]
    ):
        return False
    tolerations = spec.get("tolerations") or []
    for taint in (target.get("spec") or {}).get("taints") or []:
        if taint.get("effect") not in _HARD_EFFECTS:
            continue
        if not any(
            (not t.get("effect") or t["effect"] == taint["effect"])
            and (
                (t.get("operator") == "Exists" and (not t.get("key") or t["key"] == taint["key"]))
                or (t.get("key") == taint["key"] and t.get("value", "") == taint.get("value", ""))
            )
            for t in tolerations
        ):
            return False
    return True


def selector_selects(label_selector: Obj | None, labels: Mapping[str, str]) -> bool:
    """A LabelSelector as Kubernetes reads it: None selects nothing, {} everything."""
    if label_selector is None:
        return False
    if any(labels.get(k) != v for k, v in (label_selector.get("matchLabels") or {}).items()):
        return False
    return all(_requirement_holds(r, labels) for r in label_selector.get("matchExpressions") or [])


def spread_filter_by_state(
    incoming: Obj, nodes: Sequence[Obj], states: Sequence[Mapping[str, int]]
) -> dict[str, bool]:
    """Upstream's PodTopologySpread Filter (podtopologyspread/filtering.go, Filter) applied to a
    PreFilter state: per DoNotSchedule constraint of the pod, in order, the matching pods per domain
    (TpValueToMatchNum) as upstream's row expects them. A node passes when it has every constraint's
    key and `count(domain) + self-match - global minimum <= maxSkew` for each (the minimum 0 while
    fewer domains than minDomains are counted)."""
    constraints = [
        c for c in incoming["spec"].get("topologySpreadConstraints") or []
        if c["whenUnsatisfiable"] == "DoNotSchedule"
    ]  # fmt: skip
    assert len(constraints) == len(states), "one state per DoNotSchedule constraint"
    own = _labels(incoming)
    out = {}
    for target in nodes:
        labels, passes = _labels(target), True
        for constraint, counts in zip(constraints, states, strict=True):
            domain = labels.get(constraint["topologyKey"])
            if domain is None:
                passes = False
                break
            lowest = min(counts.values()) if counts else 2**31 - 1
            if len(counts) < constraint.get("minDomains", 1):
                lowest = 0
            chosen = constraint.get("labelSelector")
            keys = {k: own[k] for k in constraint.get("matchLabelKeys") or [] if k in own}
            if keys:  # upstream merges the pod's values of matchLabelKeys into the selector
                chosen = {
                    **(chosen or {}),
                    "matchLabels": {**((chosen or {}).get("matchLabels") or {}), **keys},
                }
            itself = 1 if selector_selects(chosen, own) else 0
            if counts.get(domain, 0) + itself - lowest > constraint["maxSkew"]:
                passes = False
                break
        out[node_name(target)] = passes
    return out


def expected(incoming: Obj, nodes: Sequence[Obj], plugin: Mapping[str, bool]) -> dict[str, bool]:
    """The whole scheduler's verdict: the upstream plugin's, and the other filters' (kube_filters_admit)."""
    return {node_name(n): plugin[node_name(n)] and kube_filters_admit(incoming, n) for n in nodes}


def dumps(obj: object) -> str:
    return json.dumps(obj, sort_keys=True)
