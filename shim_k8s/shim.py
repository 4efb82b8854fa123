"""The Kubernetes shim's logic: Kubernetes objects in, core decisions out, nothing tied to HTTP.

Informers (shim_k8s.main) hand `handle` the objects as the API serves them; `K8sShim` routes each to
the part that keeps the core told, and keeps one object's fault with that object. The parts, each
reading of the shim only a Protocol of what it uses:
- shim_k8s.pods: nodes, pods (ours as asks and existing allocations, other schedulers' as foreign
  allocations), namespaces, priority classes and volumes in; applications and asks out;
- shim_k8s.outbox: asks gathered in batches, releases after them, in the order the informers saw;
- shim_k8s.decisions: the core's answers carried out through `KubeActions` (an allocation becomes a
  binding, a preemption an eviction plus an event, a binding that fails goes back to the core as a
  release with the reason) and said on the pods (PodScheduled conditions, failed applications);
- shim_k8s.gangs: task groups, placeholder pods, gang progress events;
- shim_k8s.registration: the ConfigMaps' settings and queue configuration, registered and kept current;
- shim_k8s.reconcile: what the core holds against what the API lists.

The shim is a handler of the RM client: each decision the core sends is queued as it arrives and
carried out exactly once. `sync` lists what exists and (re)builds the core's state, which is how a
start and a core restart are handled.
"""

from __future__ import annotations

import contextlib
from collections.abc import Callable, Collection, Coroutine, Iterable
from functools import partial
from typing import Any

import structlog

from rmclient.client import SEND_ERRORS, ResponseHandler, SchedulerClient
from shim_k8s import partition_map
from shim_k8s.api import object_shapes
from shim_k8s.api.kube import KubeActions
from shim_k8s.api.objects import Obj, WatchEvent, key_of
from shim_k8s.decisions import Decisions
from shim_k8s.gangs import Gangs
from shim_k8s.nodes import Nodes
from shim_k8s.outbox import Outbox
from shim_k8s.partition_map import PartitionMap
from shim_k8s.pod_groups import PodGroups
from shim_k8s.pods import Pods
from shim_k8s.readers import service_config, task_groups
from shim_k8s.readers.bad_objects import INTERNAL, BadObjects, Refused
from shim_k8s.readers.configmaps import ConfigMaps
from shim_k8s.readers.workload_ref import PODGROUPS, WORKLOADS
from shim_k8s.reconcile import Reconciler
from shim_k8s.registration import Registration
from shim_k8s.shim_state import ShimState
from shim_k8s.volumes.binding import VolumeBinder
from shim_k8s.volumes.cache import VOLUME_KINDS
from si.v1 import si_pb2

log = structlog.get_logger("pykorn.k8s")

# What a refusal means for the object, by kind: said in its event.
_REFUSED_MEANS = {
    "nodes": "the node is not scheduled on as it is now (a known node keeps its last good state)",
    "namespaces": "its labels and annotations are not used as they are now",
    "configmaps": "the last good settings stay",
    "priorityclasses": "pods naming it wait until it is readable (a known class keeps its last good state)",
}


class K8sShim(ResponseHandler):
    def __init__(
        self,
        client: SchedulerClient,
        kube: KubeActions,
        scheduler_name: str = "yunikorn",
        wake: Callable[[], None] | None = None,
        placeholder_image: str = task_groups.DEFAULT_PLACEHOLDER_IMAGE,
    ) -> None:
        """`wake` is called when the core sent something to carry out, or the connection to it was
        lost: the caller's loop then runs `process_core` (or reconnects) without polling."""
        self.client = client
        client.add_handler(self)
        self.kube = kube
        self.scheduler_name = scheduler_name
        self.placeholder_image = placeholder_image
        # YuniKorn's admissionController.filtering.generateUniqueAppId: a pod naming no application is
        # one of its own, not one of its namespace's.
        self.unique_app_ids = False
        self.state = ShimState()
        self.settings = ConfigMaps()  # yunikorn-defaults and yunikorn-configs, and what they set
        self._wake = wake
        self.outbox = Outbox(client, self.in_background)  # asks and releases on their way to the core
        self.decisions = Decisions(self, wake)  # what the core decided, carried out
        self.gangs = Gangs(self)  # task groups, placeholder pods, gang progress events
        self.pod_groups = PodGroups(self)  # Kubernetes Workload API groups: when their pods may go
        self.partitions = PartitionMap(self)  # the partition of each node, application and pod
        self.pods = Pods(self)  # the cluster's objects in, the core told
        self.nodes = Nodes(self, self.pods)  # the nodes, each in its partition
        self.volume_binder = VolumeBinder(self.pods.volumes, kube)  # volumes bound before their pods
        self.registration = Registration(self)
        self.reconciler = Reconciler(self)
        self.bad = BadObjects(kube)  # objects refused or given a fallback: events, metrics, logs
        self._handlers: dict[str, Callable[[str, Obj], Coroutine[Any, Any, None]]] = {
            "nodes": self.nodes.on_node,
            "pods": self.pods.on_pod,
            "priorityclasses": self.pods.on_priority_class,
            "configmaps": self.registration.on_configmap,
            "namespaces": self.pods.on_namespace,
            WORKLOADS: partial(self.pods.on_pod_group_object, WORKLOADS),
            PODGROUPS: partial(self.pods.on_pod_group_object, PODGROUPS),
            **{kind: partial(self.pods.on_volume_object, kind) for kind in VOLUME_KINDS},
        }

    # What the core sends (called by the client as each response arrives) -----------------------
    def on_allocations(self, response: si_pb2.AllocationResponse) -> None:
        if self.decisions.arrived(response) and self._wake is not None:
            self._wake()

    def on_applications(self, response: si_pb2.ApplicationResponse) -> None:
        self.outbox.applications_answered(response)  # a rejected one: its pods fail (pods._add_application)
        for update in response.updated:
            self.decisions.application_changed(update)

    def on_nodes(self, response: si_pb2.NodeResponse) -> None:
        self.nodes.answered(response)

    def on_stream_closed(self, stream: str, error: str | None) -> None:
        if self._wake is not None:
            self._wake()

    # Informer events --------------------------------------------------------------------------
    async def handle(self, kind: str, event: str, obj: Obj) -> None:
        """An informer's event, handed to its handler; an object that cannot be used is refused (see
        shim_k8s.readers.bad_objects) and everything else goes on."""
        handler = self._handlers.get(kind)
        if handler is None:
            return
        if kind != "pods" and event != WatchEvent.DELETED:
            # Few and rarely changing: checked whole before anything is kept of them, so that a bad one
            # never stands in for the last good one (pods, many and often, are read once, as sent).
            found = object_shapes.diagnose(kind, obj)
            if found:
                await self.refuse(kind, obj, Refused(found))
                return
        try:  # as `guarded`, inline: every event of the cluster passes here
            await handler(event, obj)
        except SEND_ERRORS:
            raise
        except Exception as exc:
            await self.refuse(kind, obj, exc)

    async def on_node(self, event: str, node: Obj) -> None:
        await self.nodes.on_node(event, node)

    async def on_pod(self, event: str, pod: Obj) -> None:
        await self.pods.on_pod(event, pod)

    async def on_priority_class(self, event: str, pc: Obj) -> None:
        await self.pods.on_priority_class(event, pc)

    async def on_configmap(self, event: str, configmap: Obj) -> None:
        await self.registration.on_configmap(event, configmap)

    # One object's fault stays with it ----------------------------------------------------------
    async def guarded(self, kind: str, obj: Obj, work: Coroutine[Any, Any, None]) -> None:
        """Run `work` on `obj`; if reading `obj` fails, refuse it. Losing the core is not the object's
        fault: that is raised, for the re-sync."""
        try:
            await work
        except SEND_ERRORS:
            raise
        except Exception as exc:
            await self.refuse(kind, obj, exc)

    async def refuse(self, kind: str, obj: Obj, exc: Exception) -> None:
        """`obj` cannot be used: said on it (and counted, and logged), with what that means for it."""
        if isinstance(exc, Refused):
            reason, why = exc.reason, str(exc)
        else:
            found = object_shapes.diagnose(kind, obj)
            reason, why = (
                ("invalid-field", found) if found else (INTERNAL, f"pykorn failed reading it: {exc!r}")
            )
            if not found:  # a fault of pykorn's, not the object's: the trace is for its developers
                log.error("handling an object failed", kind=kind, object=key_of(obj), exc_info=exc)
        if kind == "pods":
            why = f"{why}; {self.pods.refused_pod(obj)}"
        else:
            why = f"{why}; {_REFUSED_MEANS.get(kind, 'it is not used as it is now')}"
        await self.bad.refuse(kind, obj, reason, why)

    # Start and restart ------------------------------------------------------------------------
    async def sync(
        self,
        nodes: Iterable[Obj],
        pods: Iterable[Obj],
        priority_classes: Iterable[Obj] = (),
        configmap: Obj | None = None,
        defaults: Obj | None = None,
    ) -> None:
        """Register and send everything that exists: nodes, then applications and bound pods as
        existing allocations, then pending pods as asks. The core rebuilds its state from this."""
        self.load(priority_classes, configmap, defaults)
        await self.register()
        await self.resend(nodes, pods)

    def load(
        self, priority_classes: Iterable[Obj] = (), configmap: Obj | None = None, defaults: Obj | None = None
    ) -> None:
        """Take the priority classes, and from the ConfigMaps (`yunikorn-configs`, over
        `yunikorn-defaults`) the settings and the queue configuration a (re-)registration goes with."""
        self.pods.take_priority_classes(priority_classes)
        self.registration.load(configmap, defaults)

    async def register(self) -> None:
        """Register with the ConfigMaps' queue configuration (see shim_k8s.registration)."""
        await self.registration.register()

    def registration_refused(self, exc: BaseException) -> bool:
        """Whether a failed registration was the core refusing the ConfigMaps' queue configuration, now
        given way to the last one it took: then register again (see shim_k8s.registration)."""
        return self.registration.refused(exc)

    @property
    def config(self) -> str:
        """The queue configuration a registration sends (ConfigMaps.to_register)."""
        return self.settings.to_register

    @property
    def service(self) -> service_config.ServiceConfig:
        return self.settings.service

    async def resend(self, nodes: Iterable[Obj], pods: Iterable[Obj]) -> None:
        """After registering: tell a core that knows nothing of this RM everything that exists."""
        self.state = ShimState()
        self.partitions.clear()
        self.decisions.queue.clear()  # decisions of a core that is gone; the new one decides afresh
        self.outbox.clear()
        await self.nodes.send_all(nodes)
        await self.pods.resend(pods)

    async def configuration_taken(self) -> None:
        """The core took a new queue configuration: pods waiting for a partition it may declare now
        look again."""
        for node in list(self.partitions.waiting_nodes.values()):  # nodes of a partition declared now
            if self.partitions.of_node(node) in self.partitions.declared():
                await self.guarded("nodes", node, self.nodes.on_node(WatchEvent.ADDED, node))
        await self.pods.wake([partition_map.CONFIGURED])

    # What the parts share -----------------------------------------------------------------------
    def batch(self) -> contextlib.AbstractAsyncContextManager[None]:
        """Gather the asks made inside, and send them in one request at the end."""
        return self.outbox.batch()

    async def flush(self) -> None:
        """Send the asks gathered so far."""
        await self.outbox.flush()

    async def add_pod(self, pod: Obj, with_placeholders: set[str] | None = None) -> None:
        await self.pods.add_pod(pod, with_placeholders)

    def app_id(self, pod: Obj) -> str:
        return self.pods.app_id(pod)

    async def volume_binding_failed(self, pod: Obj, why: str, nothing_there: bool) -> None:
        await self.pods.volume_binding_failed(pod, why, nothing_there)

    def pod_scheduled_false(self, pod: Obj, uid: str, reason: str, message: str) -> bool:
        return self.decisions.pod_scheduled_false(pod, uid, reason, message)

    async def fail_application(self, app_id: str, reason: str, message: str) -> None:
        await self.decisions.fail_application(app_id, reason, message)

    def in_background(self, work: Coroutine[Any, Any, None]) -> None:
        """A write nothing waits for (a status patch): the loop goes on meanwhile."""
        self.decisions.in_background(work)

    # Reconciliation (shim_k8s.reconcile) ----------------------------------------------------------
    async def reconcile(self, api_pods: Iterable[Obj]) -> int:
        """Repair what differs between what the core holds for us and the pods the API lists; returns
        how many repairs were made (see shim_k8s.reconcile)."""
        if self.decisions.queue:
            return 0  # decisions not started yet would look like mismatches: next round
        return await self.reconciler.round(api_pods)

    @property
    def busy(self) -> Collection[str]:
        """Pods with a decision being carried out."""
        return self.decisions.busy

    # The core's answers (shim_k8s.decisions) ---------------------------------------------------
    @property
    def has_decisions(self) -> bool:
        return bool(self.decisions.queue)

    @property
    def carrying_out(self) -> int:
        """Decisions started and not done yet."""
        return len(self.decisions.busy)

    async def process_core(self) -> None:
        await self.decisions.process()

    async def carry_out(self) -> None:
        await self.decisions.carry_out()
