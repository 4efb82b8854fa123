"""The informer side of the Kubernetes shim: the cluster's objects in, the core told.

Nodes are added, updated, drained and removed; a pod of ours is asked for (bound already, it is sent
as an existing allocation), with its application first (its user, its gang, its namespace's limits),
and released when it goes; another scheduler's pod on a node is counted there as a foreign allocation;
a running pod resized in place, or whose deletion began, is sent again. Priority classes, namespaces and
volumes are kept for the pods that name them: a pod waits (and says why) for a missing priority class,
its scheduling gates, or volumes not ready, and is looked at again when they change.

All that is sent about pods goes through the outbox (shim_k8s.outbox), in the order the informers saw
it; what the core decides in answer is shim_k8s.decisions'.
"""

from __future__ import annotations

from collections.abc import Coroutine, Iterable, Mapping
from typing import TYPE_CHECKING, Any, Protocol

import structlog

from rmclient.client import SchedulerClient
from shim_k8s import app_answers, partition_map
from shim_k8s.api import object_shapes
from shim_k8s.api.objects import Obj, WatchEvent, key_of
from shim_k8s.decisions import SKIPPED
from shim_k8s.gangs import Gangs
from shim_k8s.outbox import Outbox
from shim_k8s.partition_map import PartitionMap
from shim_k8s.pod_groups import PodGroups
from shim_k8s.pod_reading import PodReader, PodReading, terms_key
from shim_k8s.readers import namespaces, partitions, pod_identity, task_groups, translate
from shim_k8s.readers.bad_objects import BadObjects, Refused
from shim_k8s.readers.configmaps import ConfigMaps
from shim_k8s.readers.priority import PriorityResolver, UnknownPriorityClass
from shim_k8s.shim_state import ShimBase, began_terminating, finished, is_bound, node_of, readings, sizing
from shim_k8s.volumes.cache import Volumes
from si.v1 import si_pb2

if TYPE_CHECKING:
    from shim_k8s.nodes import Nodes

log = structlog.get_logger("pykorn.k8s")


class ShimForPods(ShimBase, Protocol):
    """What of the shim the informer side reads and calls."""

    @property
    def scheduler_name(self) -> str: ...
    @property
    def unique_app_ids(self) -> bool: ...
    @property
    def settings(self) -> ConfigMaps: ...
    @property
    def client(self) -> SchedulerClient: ...
    @property
    def outbox(self) -> Outbox: ...
    @property
    def gangs(self) -> Gangs: ...
    @property
    def pod_groups(self) -> PodGroups: ...
    @property
    def partitions(self) -> PartitionMap: ...
    @property
    def nodes(self) -> Nodes: ...
    @property
    def bad(self) -> BadObjects: ...
    async def guarded(self, kind: str, obj: Obj, work: Coroutine[Any, Any, None]) -> None: ...
    async def refuse(self, kind: str, obj: Obj, exc: Exception) -> None: ...
    def pod_scheduled_false(self, pod: Obj, uid: str, reason: str, message: str) -> bool: ...
    async def fail_application(self, app_id: str, reason: str, message: str) -> None: ...


class Pods:
    def __init__(self, shim: ShimForPods) -> None:
        self.shim = shim
        self.priorities = PriorityResolver()
        self.volumes = Volumes()  # claims, volumes and storage classes, kept across core restarts
        self.namespaces: dict[str, Obj] = {}  # by name, from the namespace informer; kept the same way
        self.reader = PodReader(self.priorities, self.volumes, self.namespaces, self.app_id, shim.pod_groups)

    # Start and restart ------------------------------------------------------------------------
    def take_priority_classes(self, priority_classes: Iterable[Obj]) -> None:
        """The priority classes listed at a start; one that cannot be read is refused."""
        for pc in priority_classes:
            try:
                found = object_shapes.diagnose("priorityclasses", pc)
                if found:
                    raise Refused(found)
                self.priorities.upsert(pc)
            except Exception as exc:
                self.shim.in_background(self.shim.refuse("priorityclasses", pc, exc))

    async def resend(self, pods: Iterable[Obj]) -> None:
        """Tell a core that knows nothing of this RM every pod, once it has the nodes
        (shim_k8s.nodes): running pods first, then pending ones in one batch."""
        shim = self.shim
        pod_list = list(pods)
        # Gangs that were reserved before (placeholders exist) or already run (a pod of theirs is
        # bound): no new placeholders for them, as YuniKorn's shim skips reserving on recovery.
        with_placeholders = {app for app in map(self._reserved_app, pod_list) if app}
        bound = [p for p in pod_list if is_bound(p)]
        pending = [p for p in pod_list if not is_bound(p)]
        for pod in bound:  # running pods first: the core counts them before it places anything
            await shim.guarded("pods", pod, self.add_pod(pod, with_placeholders))
        # Their applications answered first: a running pod's allocation that reached the core before
        # its application waits for it there, and must be counted before any pending ask is placed.
        await shim.outbox.until_answered(lambda: not shim.outbox.waiting, "the running pods' applications")
        async with shim.outbox.batch():
            for pod in pending:
                await shim.guarded("pods", pod, self.add_pod(pod, with_placeholders))

    def _reserved_app(self, pod: Obj) -> str:
        """The application of a pod of ours that is a placeholder or already bound; "" otherwise, or
        when the pod cannot be read (add_pod then refuses it)."""
        try:
            if pod["spec"]["schedulerName"] == self.shim.scheduler_name and (
                translate.is_placeholder(pod) or node_of(pod)
            ):
                return self.app_id(pod)
        except Exception:
            return ""
        return ""

    # Informer events --------------------------------------------------------------------------
    async def on_pod(self, event: str, pod: Obj) -> None:
        shim = self.shim
        state = shim.state
        uid = key_of(pod)
        if event == WatchEvent.DELETED:
            await self._pod_gone(pod)
            return
        ledger = state.ledger
        known = ledger.seen(pod)
        bound_elsewhere = bool(node_of(pod)) and not ledger.bound_by_us(uid)
        refused = ledger.refused_reading(uid)
        if refused is not None:
            if readings(pod) == refused:
                if finished(pod):
                    await self._pod_gone(pod)
                return  # a change of its status (our own condition, say): still unreadable, said so
            ledger.corrected(uid)  # corrected, perhaps: looked at afresh
            shim.bad.forget(uid)
            known = None
        if known is None and bound_elsewhere:
            await self.add_foreign(pod)  # arrived already on a node: we did not place it
        elif known is None:
            await self.add_pod(pod)
        elif node_of(pod) and node_of(known) and not finished(pod) and ledger.size(uid) is not None:
            if sizing(pod) != sizing(known):  # its resources were resized in place, perhaps
                await self._resized(pod)
        elif not node_of(pod) and ledger.waits_for_volumes(uid):
            # A pod that waits (for its volumes, or its scheduling gates) changed: look again.
            ledger.changed_while_waiting(uid)
            await self.add_pod(pod)
        elif not node_of(known) and bound_elsewhere:
            # Bound by someone else while we were asking for it: withdraw the ask; it occupies its node.
            app_id = ledger.taken_by_another(uid)
            if app_id is not None:
                await shim.outbox.release(
                    app_id, uid, message="bound by another scheduler", partition=ledger.partition(uid)
                )
            await self.add_foreign(pod)
        if known is not None and began_terminating(pod, known) and ledger.size(uid) is not None:
            await self._resized(pod, again=True)  # spread stops counting it at once
        if finished(pod):
            await self._pod_gone(pod)

    async def on_namespace(self, event: str, namespace: Obj) -> None:
        """Namespaces' labels go on their pods' asks (pod affinity terms' namespaceSelector matches
        them), their annotations' limits on their applications (see shim_k8s.readers.namespaces). A pod or
        application already sent keeps what it was sent with. Annotations that cannot be used are
        reported on the namespace, once per change of them."""
        name = (namespace.get("metadata") or {}).get("name", "")
        if event == WatchEvent.DELETED:
            self.namespaces.pop(name, None)
            return
        old = self.namespaces.get(name)
        before = namespaces.annotations_of(old)
        self.namespaces[name] = namespace
        if partitions.pod_partition({}, old) != partitions.pod_partition({}, namespace):
            await self.wake([f"namespace/{name}"])  # its pods waiting for a partition look again
        if namespaces.annotations_of(namespace) == before:
            return
        for warning in namespaces.application_tags(namespace).warnings:
            log.warning("namespace annotation not used", namespace=name, detail=warning)
            await self.shim.kube.record_event(
                {**namespace, "kind": "Namespace"}, "NamespaceAnnotationIgnored", warning, warning=True
            )

    async def on_priority_class(self, event: str, pc: Obj) -> None:
        if event == WatchEvent.DELETED:
            self.priorities.remove(pc["metadata"]["name"])
            return
        self.priorities.upsert(pc)
        for pod in self.shim.state.ledger.class_arrived():  # a class that was missing now exists
            await self.shim.guarded("pods", pod, self.add_pod(pod))

    async def on_volume_object(self, kind: str, event: str, obj: Obj) -> None:
        """A claim, volume or storage class changed: the pods that waited for it look again.
        A CSINode changed: its node's attach limits go to the core."""
        self.volumes.update(kind, event, obj)
        if kind == "csinodes":
            node = self.shim.state.nodes.get(obj["metadata"]["name"])
            if node is not None:
                await self.shim.client.add_nodes(self.shim.nodes.node_info(node, create=False))
            return
        for pod in self.shim.state.ledger.woken_by(self.volumes.changed_keys(kind, obj)):
            await self.shim.guarded("pods", pod, self.add_pod(pod))

    # Pods -------------------------------------------------------------------------------------
    async def add_pod(self, pod: Obj, with_placeholders: set[str] | None = None) -> None:
        """A pod of ours is asked for (or, bound already, sent as an existing allocation); another
        scheduler's bound pod is counted on its node. All that is sent is read from the pod before
        anything is sent or remembered, so a pod that cannot be read is refused whole (K8sShim.guarded)."""
        shim = self.shim
        uid = key_of(pod)
        ledger = shim.state.ledger
        ledger.seen(pod)
        if finished(pod):
            return
        if (pod.get("spec") or {}).get("schedulerName") != shim.scheduler_name:
            if node_of(pod):
                await self.add_foreign(pod)  # never ours to place or move: its priority does not count
            return
        # One more member of its Workload API group, perhaps the one its waiting members lack: they
        # look again after it, whatever becomes of this one (unreadable, its class unknown: it counts).
        completes = shim.pod_groups.seen(pod)
        try:
            try:
                reading = self.reader.read(pod, asked=ledger.is_asked(uid))
            except UnknownPriorityClass as exc:
                ledger.waits_for_class(uid, pod)
                await shim.kube.record_event(pod, "PriorityClassNotFound", str(exc), warning=True)
                return
            app_id, ask = reading.app_id, reading.message
            partition, held = self._partition_of(pod, reading)
            if held is not None:
                await self._wait(pod, *held)
                return
            if partition is None:  # running where its application is not: it occupies its node there
                await self.add_foreign(pod, shim.partitions.node_was(reading.node))
                return
            if reading.volume_terms:
                ledger.asked_with_terms(uid, reading.volume_terms)
            if app_id not in shim.state.apps and not await self._add_application(
                pod, app_id, app_id in (with_placeholders or ()), partition
            ):
                return
            if ask is None:
                if reading.wait is not None:
                    await self._wait(pod, *reading.wait, keys=reading.wait_keys)
                return
            ask.taskGroupName = await shim.gangs.task_group_of(pod, app_id)
            if partition != partition_map.DEFAULT:
                ask.partitionName = partition
            ledger.sent_to(uid, partition)
            if reading.node:
                ledger.sent_running(uid, app_id, reading.node, reading.request)
            else:
                ledger.asked(uid, app_id, reading.request)
                for reason, message in reading.notes:  # said once, when it is first asked for
                    await shim.kube.record_event(pod, reason, message, warning=True)
            await shim.outbox.ask(ask)
        finally:
            if completes:
                await self.wake(completes)

    async def wake(self, keys: Iterable[str]) -> None:
        """The pods waiting on any of `keys` (shim_k8s.pod_groups' and volumes' wait keys) look again."""
        if keys:
            for pod in self.shim.state.ledger.woken_by(keys):
                await self.shim.guarded("pods", pod, self.add_pod(pod))

    async def on_pod_group_object(self, kind: str, event: str, obj: Obj) -> None:
        """A Workload or PodGroup changed: the pods waiting for it look again."""
        await self.wake(self.shim.pod_groups.on_object(kind, event, obj))

    def app_id(self, pod: Obj) -> str:
        return pod_identity.application_id(pod, self.shim.unique_app_ids)

    def _partition_of(
        self, pod: Obj, reading: PodReading
    ) -> tuple[str | None, tuple[str, str, tuple[str, ...]] | None]:
        """Where what is sent of the pod goes: (its partition, or None for a running pod that only
        occupies its node; (event reason, why, wait keys) when a pending pod waits for its partition)."""
        partitions, namespace = self.shim.partitions, self.reader.namespace_of(pod)
        if reading.node:
            where, counts = partitions.for_running(pod, namespace, reading.app_id, reading.node)
            return (where if counts else None), None
        where, wait = partitions.for_pending(pod, namespace, reading.app_id)
        if (reading.message is None and reading.wait is None) or wait is None:
            return where, None  # asked for already; or its partition is fine (it may wait otherwise)
        # Its partition first, whatever else it waits on: its application must not be sent there.
        space = (pod.get("metadata") or {}).get("namespace") or "default"
        keys = (partition_map.CONFIGURED, f"namespace/{space}")
        return where, (*wait, keys)

    def refused_pod(self, pod: Obj) -> str:
        """Keep a pod that cannot be read out of what the shim asks for and repairs, and say what that
        means for it."""
        state = self.shim.state
        uid = key_of(pod)
        state.ledger.refused(uid, readings(pod))
        spec = pod.get("spec")
        if not isinstance(spec, Mapping) or spec.get("schedulerName") != self.shim.scheduler_name:
            return "it is not counted on its node"
        if state.ledger.bound_by_us(uid):
            return "the core keeps what it knew of it"
        if not state.ledger.is_asked(uid):
            why = "pykorn cannot read this pod: see its Refused event"
            self.shim.pod_scheduled_false(pod, uid, "SchedulerError", why)
            return "it is not scheduled until this is corrected"
        return "the core keeps what it was asked before"

    async def volume_binding_failed(self, pod: Obj, why: str, nothing_there: bool) -> None:
        """Its volumes could not be bound where the core placed it (its allocation given back): asked
        again, where its volumes let it go now. When nothing could be bound on that node and its
        volumes still give the same nodes (two claims of it that fit one volume, say), it waits
        instead, and is looked at again when a claim, volume or class it depends on changes."""
        if nothing_there:
            wait, terms = self.volumes.placement(pod)
            if not wait and terms_key(terms) == self.shim.state.ledger.volume_terms(key_of(pod)):
                await self._wait(pod, "VolumesNotReady", why)
                return
        await self.add_pod(pod)

    async def _wait(self, pod: Obj, event_reason: str, why: str, keys: Iterable[str] | None = None) -> None:
        """Not asked for (gated, or its volumes not ready: placed blindly, it could land where its
        volume cannot be). Says why, once per reason: an event, and the PodScheduled condition:
        `SchedulingGated` as kube-scheduler's for gates, `SchedulingSkipped` for volumes (more nodes
        would not help; the cluster autoscaler must not add any for it)."""
        uid = key_of(pod)
        # Looked at again when it changes (gates), or what its volumes wait on changes.
        if keys is None:
            keys = () if event_reason == "SchedulingGated" else self.volumes.wait_keys(pod)
        self.shim.state.ledger.waits(uid, pod, keys)
        condition = "SchedulingGated" if event_reason == "SchedulingGated" else SKIPPED
        if self.shim.pod_scheduled_false(pod, uid, condition, why):
            await self.shim.kube.record_event(pod, event_reason, why, warning=True)

    async def _add_application(
        self, pod: Obj, app_id: str, placeholders_exist: bool, partition: str = partition_map.DEFAULT
    ) -> bool:
        """The application of its first pod: its user (YuniKorn's fallbacks reported on the pod), its
        gang, its namespace's limits; sent with the outbox's batch, its asks right after it, and its
        answer acted on when it comes (shim_k8s.outbox): when the core rejects it its pending pods fail.
        False when its pods are not to be asked for."""
        shim = self.shim
        user = pod_identity.user_info(pod)
        gang = await shim.gangs.of_new_app(pod, app_id, placeholders_exist)
        if gang is None:
            request = translate.application_request(pod, app_id, user=user)
        else:
            request = translate.application_request(
                pod, app_id, gang_size=task_groups.gang_size(list(gang.groups.values())),
                gang_style=gang.policy.style, placeholder_timeout_seconds=gang.policy.timeout_seconds,
                user=user,
            )  # fmt: skip
        namespace_tags = namespaces.application_tags(self.reader.namespace_of(pod)).tags
        if namespace_tags:
            request.tags.update(namespace_tags)
        if partition != partition_map.DEFAULT:
            request.partitionName = partition
        shim.partitions.app_is(app_id, partition)
        shim.state.apps.add(app_id)
        if gang is not None:
            shim.state.gangs[app_id] = gang
        for note in user.notes:
            await shim.bad.fallback("pods", pod, note.reason, note.message)

        answered = app_answers.on_answer(shim, pod, app_id, gang, self._ask_again)
        await shim.outbox.application(request, answered)
        return app_id in shim.state.apps

    async def _ask_again(self, uids: set[str]) -> None:
        """Pods whose ask the core refused before it knew their application, which it now accepted."""
        state = self.shim.state
        for uid in sorted(uids):
            pod = state.ledger.pod(uid)
            if pod is not None and not state.ledger.is_asked(uid) and not state.ledger.given_up(uid):
                await self.shim.guarded("pods", pod, self.add_pod(pod))
        await self.shim.outbox.flush()

    async def _pod_gone(self, pod: Obj) -> None:
        shim = self.shim
        uid = key_of(pod)
        shim.state.ledger.gone(uid, self.volumes.wait_keys(pod))
        shim.pod_groups.gone(uid)
        shim.bad.forget(uid)
        self.volumes.notify(f"pod/{uid}")  # a binding of its volumes under way stops
        await shim.outbox.flush()  # its ask, if it waits in the batch, goes before its release
        told = shim.state.ledger.forgotten(uid)
        if told.foreign:
            await shim.outbox.release("", uid, partition=told.partition)
        elif told.release:
            await shim.outbox.release(told.app_id or self.app_id(pod), uid, partition=told.partition)

    # Pods on nodes: other schedulers', orphans, resized -------------------------------------------
    async def add_foreign(self, pod: Obj, partition: str | None = None) -> None:
        """A pod on a node that belongs to no queue here (another scheduler's, or ours whose
        application is in another partition than its node): it occupies its node's room."""
        uid = key_of(pod)
        ledger = self.shim.state.ledger
        if ledger.is_foreign(uid) or finished(pod):
            return
        ledger.sent_to(uid, self.shim.partitions.node_was(node_of(pod)) if partition is None else partition)
        await self.shim.outbox.ask(self.foreign_allocation(pod))
        ledger.counted_foreign(uid)

    def foreign_allocation(self, pod: Obj) -> si_pb2.Allocation:
        alloc, request = self.reader.foreign(pod)
        ledger, uid = self.shim.state.ledger, key_of(pod)
        ledger.sized(uid, request)
        alloc.partitionName = ledger.partition(uid)  # its node's ("" the default)
        return alloc

    async def _resized(self, pod: Obj, again: bool = False) -> None:
        """A running pod sent again: resized in place (the core updates its node's, queue's, application's
        and user's usage), or `again` at its size when its deletion began (the allocation says so)."""
        ledger, uid, request = self.shim.state.ledger, key_of(pod), translate.pod_request(pod)
        if request == ledger.size(uid) and not again:
            return
        placed = ledger.placed(uid)
        if ledger.is_foreign(uid):
            alloc = self.foreign_allocation(pod)
        elif placed is None or ledger.deleting(uid):
            return  # the core holds nothing of it (any more): nothing to resize
        else:
            app_id, _ = placed
            alloc = self.reader.resized(pod, app_id, request)
            alloc.partitionName = ledger.partition(uid)
            ledger.sized(uid, request)
        log.info("pod resized in place", pod=uid, applicationID=alloc.applicationID, size=request)
        await self.shim.outbox.ask(alloc)
