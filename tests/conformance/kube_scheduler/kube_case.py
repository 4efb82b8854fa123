"""One kube-scheduler case run through pykorn: Kubernetes objects in, through the shim's translation, to
the core over gRPC; whether the pod was placed, and where, out.

A kube-scheduler plugin test hands a Filter a pod and a node (with the pods already on it) and reads
pass or fail. Here the same objects are written as the API serves them (apiVersion, kind, metadata,
spec, status), checked against the shapes the shim reads (shim_k8s.api.object_shapes), and turned into
scheduler-interface messages by the shim's own functions (shim_k8s.readers.translate), exactly as
shim_k8s.pods sends them:

- a node: `node_info`, action CREATE, or CREATE_DRAIN for a cordoned one (`spec.unschedulable`);
- a pod already on a node: another scheduler's as a foreign allocation (`bound_pod_allocation`, not
  ours), one of ours as an existing allocation of its application;
- the pod to schedule: its application (`application_request`), then its ask (`pod_ask`), or, when
  it names its node already (`spec.nodeName`), an existing allocation there, as the shim sends it.

The pod passes the Filter when the core places it on the node (`Outcome.node`), fails when, after
`client.barrier()`, it is still not placed. Every case registers its own RM with YuniKorn's default
configuration written out: an open root and the namespace's queue made on demand.
"""

from __future__ import annotations

import itertools
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import Any

from shim_k8s.api import object_shapes
from shim_k8s.readers import pod_identity, translate
from shim_k8s.readers.priority import PodPriority, PriorityResolver
from si.v1 import si_pb2
from tests.conformance.core_probe import CoreProbe

# YuniKorn's default queue configuration: root open to all, applications in their namespace's queue.
OPEN_ROOT_BY_NAMESPACE = """
partitions:
  - name: default
    placementrules:
      - name: tag
        value: namespace
        create: true
    queues:
      - name: root
        submitacl: "*"
"""

SCHEDULER = "yunikorn"  # the shim's default schedulerName: pods naming it are ours
OTHER_SCHEDULER = "default-scheduler"
# Room for a node whose upstream case says nothing of its resources (the core refuses a node without).
ROOM: Mapping[str, str] = {"cpu": "4", "memory": "8Gi", "pods": "110"}
# What the shim sends for another scheduler's pod: never ours to move (shim_k8s.pods).
FOREIGN_PRIORITY = PodPriority(0, allow_preempt_other=False, allow_preempt_self=False)

_uids = itertools.count(1)

Obj = dict[str, Any]


# Objects -----------------------------------------------------------------------------------------


def node(
    name: str,
    labels: Mapping[str, str] | None = None,
    taints: Sequence[Mapping[str, str]] = (),
    unschedulable: bool = False,
    allocatable: Mapping[str, str] | None = None,
) -> Obj:
    """A Node as the API serves it; `allocatable` None gives it ROOM (capacity the same)."""
    resources = dict(ROOM if allocatable is None else allocatable)
    meta: Obj = {"name": name, "uid": f"node-uid-{next(_uids)}"}
    if labels:
        meta["labels"] = dict(labels)
    spec: Obj = {}
    if unschedulable:
        spec["unschedulable"] = True
    if taints:
        spec["taints"] = [dict(t) for t in taints]
    return {
        "apiVersion": "v1",
        "kind": "Node",
        "metadata": meta,
        "spec": spec,
        "status": {"capacity": dict(resources), "allocatable": resources},
    }


def container(
    name: str = "main",
    requests: Mapping[str, str] | None = None,
    ports: Sequence[Mapping[str, Any]] = (),
    restart_policy: str | None = None,
) -> Obj:
    """A container; `ports` as the API serves them (hostPort, containerPort, protocol, hostIP)."""
    out: Obj = {"name": name, "image": "registry.k8s.io/pause:3.10"}
    if requests is not None:
        out["resources"] = {"requests": dict(requests)}
    if ports:
        out["ports"] = [dict(p) for p in ports]
    if restart_policy is not None:
        out["restartPolicy"] = restart_policy
    return out


def pod(
    name: str = "pod",
    containers: Sequence[Obj] | None = None,
    init_containers: Sequence[Obj] = (),
    node_name: str = "",
    scheduler: str = SCHEDULER,
    namespace: str = "default",
    labels: Mapping[str, str] | None = None,
    node_selector: Mapping[str, str] | None = None,
    affinity: Mapping[str, Any] | None = None,
    tolerations: Sequence[Mapping[str, Any]] = (),
    overhead: Mapping[str, str] | None = None,
) -> Obj:
    """A Pod as the API serves it: pending unless it names its node (then running there). Kubernetes
    needs a container: a plain one stands in when the case has none."""
    uid = f"pod-uid-{next(_uids)}"
    meta: Obj = {"name": name, "namespace": namespace, "uid": uid}
    if labels:
        meta["labels"] = dict(labels)
    spec: Obj = {
        "schedulerName": scheduler,
        "containers": [dict(c) for c in containers] if containers else [container()],
    }
    if init_containers:
        spec["initContainers"] = [dict(c) for c in init_containers]
    if node_name:
        spec["nodeName"] = node_name
    if node_selector is not None:
        spec["nodeSelector"] = dict(node_selector)
    if affinity is not None:
        spec["affinity"] = dict(affinity)
    if tolerations:
        spec["tolerations"] = [dict(t) for t in tolerations]
    if overhead is not None:
        spec["overhead"] = dict(overhead)
    return {
        "apiVersion": "v1",
        "kind": "Pod",
        "metadata": meta,
        "spec": spec,
        "status": {"phase": "Running" if node_name else "Pending"},
    }


def uid_of(obj: Mapping[str, Any]) -> str:
    return str(obj["metadata"]["uid"])


# Driving the core ----------------------------------------------------------------------------------


@dataclass(frozen=True)
class Outcome:
    """Where the pod went: `node` when placed, "" when not; `rejected` the core's refusal of its ask."""

    node: str = ""
    rejected: str = ""

    @property
    def placed(self) -> bool:
        return bool(self.node)


class KubeCase:
    """One case's cluster, on the probe's own RM."""

    def __init__(self, probe: CoreProbe) -> None:
        self.probe = probe
        self.client = probe.client
        self._apps: set[str] = set()
        self._nodes_sent = 0

    async def start(self, config: str = OPEN_ROOT_BY_NAMESPACE) -> KubeCase:
        verdict = await self.probe.register(config)
        assert verdict, verdict.errors
        return self

    async def add_nodes(self, *nodes: Obj) -> None:
        """Nodes as the shim sends them at a start (pods.resend), all accepted before anything else."""
        infos = []
        for item in nodes:
            assert object_shapes.diagnose("nodes", item) is None, object_shapes.diagnose("nodes", item)
            action = (
                si_pb2.NodeInfo.CREATE_DRAIN if translate.node_is_cordoned(item) else si_pb2.NodeInfo.CREATE
            )
            infos.append(translate.node_info(item, action))
        await self.client.add_nodes(*infos)
        self._nodes_sent += len(infos)
        await self.client.wait_nodes_answered(self._nodes_sent)
        rejected = {n.nodeID: n.reason for n in self.client.seen.rejected_nodes}
        assert not rejected, f"the core refused nodes: {rejected}"

    async def add_running(self, *pods: Obj) -> None:
        """Pods on their nodes already: another scheduler's occupy room there (foreign allocations),
        ours are existing allocations of their application. All must be taken."""
        keys = []
        for item in pods:
            assert item["spec"].get("nodeName"), "a running pod names its node"
            assert object_shapes.diagnose("pods", item) is None, object_shapes.diagnose("pods", item)
            if item["spec"]["schedulerName"] == SCHEDULER:
                app_id = await self._application(item)
                alloc = translate.bound_pod_allocation(
                    item, PriorityResolver().resolve(item), ours=True, task_group="", app_id=app_id
                )
            else:
                alloc = translate.bound_pod_allocation(item, FOREIGN_PRIORITY, ours=False)
            keys.append(alloc.allocationKey)
            await self.client.asks([alloc])
        await self.client.barrier()
        refused = {r.allocationKey: r.reason for r in self.client.seen.rejected_allocations}
        assert not refused.keys() & set(keys), f"the core refused running pods: {refused}"

    async def schedule(self, item: Obj) -> Outcome:
        """Send one pod of ours as the shim does, and say where the core put it once it has decided."""
        assert item["spec"]["schedulerName"] == SCHEDULER
        assert object_shapes.diagnose("pods", item) is None, object_shapes.diagnose("pods", item)
        app_id = await self._application(item)
        priority = PriorityResolver().resolve(item)
        if item["spec"].get("nodeName"):  # bound already: the shim reports it where it runs
            alloc = translate.bound_pod_allocation(item, priority, ours=True, task_group="", app_id=app_id)
        else:
            alloc = translate.pod_ask(item, priority, app_id, task_group="")
        await self.client.asks([alloc])
        await self.client.barrier()
        seen = self.client.seen
        key = alloc.allocationKey
        placed = seen.allocations.get(key)
        rejected = next((r.reason for r in seen.rejected_allocations if r.allocationKey == key), "")
        return Outcome(placed.nodeID if placed is not None else "", rejected)

    async def _application(self, item: Obj) -> str:
        app_id = pod_identity.application_id(item)
        if app_id in self._apps:
            return app_id
        seen = self.client.seen
        await self.client.add_applications(translate.application_request(item, app_id))

        def answered() -> bool:
            return app_id in seen.accepted_apps or any(r.applicationID == app_id for r in seen.rejected_apps)

        await self.client.wait_for(answered, 10.0, f"the answer to application {app_id}")
        assert app_id in seen.accepted_apps, [r.reason for r in seen.rejected_apps]
        self._apps.add(app_id)
        return app_id


async def filter_case(probe: CoreProbe, target: Obj, candidate: Obj, running: Sequence[Obj] = ()) -> Outcome:
    """kube-scheduler's Filter(pod, nodeInfo): `candidate` the only node, `running` the pods on it."""
    case = await KubeCase(probe).start()
    await case.add_nodes(candidate)
    if running:
        await case.add_running(*running)
    return await case.schedule(target)
