"""The Kubernetes shim's logic: Kubernetes objects in, core decisions out, nothing tied to HTTP.

Informers (a later layer) call `on_node`, `on_pod`, `on_priority_class` and `on_configmap` with the
objects as the API serves them; the shim keeps the core told (nodes, applications, asks, pods of other
schedulers as foreign allocations, queue configuration) and carries the core's answers out through
`KubeActions`: an allocation becomes a binding, a preemption an eviction plus an event, a binding that
fails goes back to the core as a release with the reason. `sync` lists what exists and (re)builds the
core's state, which is how a start and a core restart are handled.

The shim is a handler of the RM client: each decision the core sends is queued as it arrives and
carried out exactly once by shim_k8s.decisions.

Inside `batch()` (the main loop, around what the informers delivered at once) asks are gathered and
sent in one request at the end; anything that must not overtake them (a release, a node change, an
application) sends them first.
"""

from __future__ import annotations

import contextlib
from collections.abc import AsyncIterator, Callable, Collection, Coroutine, Iterable, Mapping
from functools import partial
from typing import Any

import grpc
import structlog

from rmclient.client import SEND_ERRORS, ResponseHandler, SchedulerClient
from rmclient.reconnect import is_refusal
from shim_k8s import namespaces, service_config, task_groups, translate
from shim_k8s.api import object_shapes
from shim_k8s.api.objects import Obj, key_of, name_of
from shim_k8s.bad_objects import INTERNAL, BadObjects, Refused
from shim_k8s.configmaps import ConfigMaps
from shim_k8s.decisions import GANG_TIMEOUT, GANG_TIMEOUT_MESSAGE, Decisions, KubeActions
from shim_k8s.gangs import Gangs
from shim_k8s.priority import PodPriority, PriorityResolver, UnknownPriorityClass
from shim_k8s.reconcile import Reconciler
from shim_k8s.shim_state import ShimState, finished, node_of
from shim_k8s.volumes import VOLUME_KINDS, Volumes
from si.v1 import si_pb2

log = structlog.get_logger("pykorn.k8s")

ASK_BATCH = 1_000  # asks gathered in a batch before they are sent anyway


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
        self.priorities = PriorityResolver()
        self.volumes = Volumes()  # claims, volumes and storage classes, kept across core restarts
        self.namespaces: dict[str, Obj] = {}  # by name, from the namespace informer; kept the same way
        # YuniKorn's admissionController.filtering.generateUniqueAppId: a pod naming no application is
        # one of its own, not one of its namespace's.
        self.unique_app_ids = False
        self.state = ShimState()
        self.settings = ConfigMaps()  # yunikorn-defaults and yunikorn-configs, and what they set
        self._wake = wake
        self.decisions = Decisions(self, wake)  # what the core decided, carried out
        self.gangs = Gangs(self)  # task groups, placeholder pods, gang progress events
        self._outbox: list[si_pb2.Allocation] = []  # asks gathered in a batch
        self._batching = 0
        self._apps_answered: set[str] = set()
        self._apps_rejected: dict[str, str] = {}  # application -> the core's reason, until handled
        self._nodes_answered = 0
        self.reconciler = Reconciler(self)
        self.bad = BadObjects(kube)  # objects refused or given a fallback: events, metrics, logs
        self._handlers: dict[str, Callable[[str, Obj], Coroutine[Any, Any, None]]] = {
            "nodes": self.on_node,
            "pods": self.on_pod,
            "priorityclasses": self.on_priority_class,
            "configmaps": self.on_configmap,
            "namespaces": self.on_namespace,
            **{kind: partial(self.on_volume_object, kind) for kind in VOLUME_KINDS},
        }

    # What the core sends (called by the client as each response arrives) -----------------------
    def on_allocations(self, response: si_pb2.AllocationResponse) -> None:
        for alloc in response.new:
            self.state.placed[alloc.allocationKey] = (alloc.applicationID, alloc.nodeID)
        for release in response.released:
            self.state.placed.pop(release.allocationKey, None)
        if self.decisions.arrived(response) and self._wake is not None:
            self._wake()

    def on_applications(self, response: si_pb2.ApplicationResponse) -> None:
        self._apps_answered.update(a.applicationID for a in response.accepted)
        for rejected in response.rejected:  # the pod that added it fails its pods (_add_application)
            self._apps_answered.add(rejected.applicationID)
            self._apps_rejected[rejected.applicationID] = rejected.reason
        for update in response.updated:
            self._application_changed(update)

    def _application_changed(self, update: si_pb2.UpdatedApplication) -> None:
        """An application's new state: a failed one fails its pending pods (as YuniKorn's shim: reason
        ResourceReservationTimeout for a Hard gang that timed out); one the core forgot is forgotten
        here too, so its next pod adds it again; a gang's progress is said on its originator."""
        app_id, state = update.applicationID, update.state
        gang = self.state.gangs.get(app_id)
        if gang is not None:
            self.gangs.progress(app_id, gang, state)
        if state in ("Failing", "Failed"):
            if TIMEOUT_REASON in update.message:
                reason, message = TIMEOUT_REASON, TIMEOUT_MESSAGE
            else:
                reason, message = "ApplicationFailed", update.message or f"application {app_id} failed"
            self.in_background(self._fail_application(app_id, reason, message))
        if state in _APPS_FORGOTTEN:
            self.state.apps.discard(app_id)
            self.state.gangs.pop(app_id, None)

    def on_nodes(self, response: si_pb2.NodeResponse) -> None:
        self._nodes_answered += len(response.accepted) + len(response.rejected)

    def on_stream_closed(self, stream: str, error: str | None) -> None:
        if self._wake is not None:
            self._wake()

    # Asks, in batches --------------------------------------------------------------------------
    @contextlib.asynccontextmanager
    async def batch(self) -> AsyncIterator[None]:
        """Gather the asks made inside, and send them in one request at the end."""
        self._batching += 1
        try:
            yield
        finally:
            self._batching -= 1
        if not self._batching:
            await self.flush()

    async def flush(self) -> None:
        """Send the asks gathered so far."""
        if self._outbox:
            asks, self._outbox = self._outbox, []
            await self.client.asks(asks)

    async def _send_ask(self, ask: si_pb2.Allocation) -> None:
        self._outbox.append(ask)
        if not self._batching or len(self._outbox) >= ASK_BATCH:
            await self.flush()

    async def _until_answered(self, done: Callable[[], bool], what: str) -> None:
        """Until `done`; ConnectionError when the core goes away first (the re-sync sends it again)."""
        client = self.client
        await client.wait_for(lambda: done() or client.lost is not None, what=f"the core's answer to {what}")
        if client.lost is not None:
            raise ConnectionError(f"the core went away before answering {what}: {client.lost}")

    # One object's fault stays with it ----------------------------------------------------------
    async def handle(self, kind: str, event: str, obj: Obj) -> None:
        """An informer's event, handed to its handler; an object that cannot be used is refused (see
        shim_k8s.bad_objects) and everything else goes on."""
        handler = self._handlers.get(kind)
        if handler is None:
            return
        if kind != "pods" and event != "DELETED":
            # Few and rarely changing: checked whole before anything is kept of them, so that a bad one
            # never stands in for the last good one (pods, many and often, are read once, as sent).
            found = object_shapes.diagnose(kind, obj)
            if found:
                await self._refuse(kind, obj, Refused(found))
                return
        try:  # as `guarded`, inline: every event of the cluster passes here
            await handler(event, obj)
        except SEND_ERRORS:
            raise
        except Exception as exc:
            await self._refuse(kind, obj, exc)

    async def guarded(self, kind: str, obj: Obj, work: Coroutine[Any, Any, None]) -> None:
        """Run `work` on `obj`; if reading `obj` fails, refuse it. Losing the core is not the object's
        fault: that is raised, for the re-sync."""
        try:
            await work
        except SEND_ERRORS:
            raise
        except Exception as exc:
            await self._refuse(kind, obj, exc)

    async def _refuse(self, kind: str, obj: Obj, exc: Exception) -> None:
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
            why = f"{why}; {self._refused_pod(obj)}"
        else:
            why = f"{why}; {_REFUSED_MEANS.get(kind, 'it is not used as it is now')}"
        await self.bad.refuse(kind, obj, reason, why)

    def _refused_pod(self, pod: Obj) -> str:
        """Keep the pod out of what the shim asks for and repairs, and say what that means for it."""
        uid = key_of(pod)
        self.state.refused[uid] = _readings(pod)
        spec = pod.get("spec")
        if not isinstance(spec, Mapping) or spec.get("schedulerName") != self.scheduler_name:
            return "it is not counted on its node"
        if uid in self.state.bound_by_us:
            return "the core keeps what it knew of it"
        if uid not in self.state.asked:
            why = "pykorn cannot read this pod: see its Refused event"
            self._pod_scheduled_false(pod, uid, "SchedulerError", why)
            return "it is not scheduled until this is corrected"
        return "the core keeps what it was asked before"

    async def _report_notes(self, kind: str, obj: Obj, notes: Iterable[translate.Note]) -> None:
        for note in notes:
            await self.bad.fallback(kind, obj, note.reason, note.message)

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

    async def register(self) -> None:
        """Register with the ConfigMaps' queue configuration; one the core refuses gives way to the last
        one it took (`registration_refused`). Any other failure is raised (registering cannot succeed)."""
        try:
            await self.client.register(config=self.config)
        except SEND_ERRORS as exc:
            if not self.registration_refused(exc):
                raise
            await self.client.register(config=self.config)
        self.settings.accepted = self.config

    def registration_refused(self, exc: BaseException) -> bool:
        """A registration failed. When the core refused the ConfigMaps' queue configuration: said on the
        ConfigMap (ConfigRejected, with the core's reasons), the last one the core took (at a first
        start, none: the core's own default) is registered with until the ConfigMaps change, and True:
        register again. A bad ConfigMap never keeps the shim from scheduling. False for any other
        failure, or a refusal of the last good one too (not the ConfigMap's fault): the caller raises."""
        text = self.config
        if not isinstance(exc, grpc.aio.AioRpcError) or not is_refusal(exc) or text == self.settings.accepted:
            return False
        reason = exc.details() or repr(exc)
        self.settings.refused = text
        log.warning("queue configuration refused at registration", reason=reason)
        shown = self.settings.shown()
        if shown is not None:
            message = f"queue configuration refused, the last one the core took is used: {reason}"
            self.in_background(self.kube.record_event(
                {**shown, "kind": "ConfigMap"}, "ConfigRejected", message, warning=True
            ))  # fmt: skip
        return True

    def load(
        self, priority_classes: Iterable[Obj] = (), configmap: Obj | None = None, defaults: Obj | None = None
    ) -> None:
        """Take the priority classes, and from the ConfigMaps (`yunikorn-configs`, over
        `yunikorn-defaults`) the settings and the queue configuration a (re-)registration goes with."""
        for pc in priority_classes:
            try:
                found = object_shapes.diagnose("priorityclasses", pc)
                if found:
                    raise Refused(found)
                self.priorities.upsert(pc)
            except Exception as exc:
                self.in_background(self._refuse("priorityclasses", pc, exc))
        warnings = self.settings.load(self._readable(configmap), self._readable(defaults))
        if self.service.placeholder_image:
            self.placeholder_image = self.service.placeholder_image
        self.unique_app_ids = self.service.generate_unique_app_ids
        self._report(warnings)

    def _readable(self, configmap: Obj | None) -> Obj | None:
        """The ConfigMap if it can be read; otherwise it is refused, and the last good one of its name
        stays (at the first start, none)."""
        try:
            service_config.flatten(configmap)
        except Refused as exc:
            self.in_background(self._refuse("configmaps", configmap or {}, exc))
            return self.settings.seen.get(name_of(configmap))
        return configmap

    @property
    def config(self) -> str:
        """The queue configuration a registration sends (ConfigMaps.to_register)."""
        return self.settings.to_register

    @property
    def service(self) -> service_config.ServiceConfig:
        return self.settings.service

    def _report(self, warnings: list[str]) -> None:
        """Warnings about the ConfigMaps' keys: logged, and as events on the ConfigMap, once each."""
        shown = self.settings.shown()
        for warning in warnings:
            log.warning("configuration key not used as written", detail=warning)
            if shown is not None:
                self.in_background(self.kube.record_event(
                    {**shown, "kind": "ConfigMap"}, "ConfigKeyIgnored", warning, warning=True
                ))  # fmt: skip

    async def resend(self, nodes: Iterable[Obj], pods: Iterable[Obj]) -> None:
        """After registering: tell a core that knows nothing of this RM everything that exists."""
        self.state = ShimState()
        self.decisions.queue.clear()  # decisions of a core that is gone; the new one decides afresh
        self._outbox.clear()
        infos = []
        for node in nodes:
            try:
                found = object_shapes.diagnose("nodes", node)
                if found:
                    raise Refused(found)
                infos.append(self._node_info(node, create=True))
                self.state.nodes[node["metadata"]["name"]] = node
            except Exception as exc:
                await self._refuse("nodes", node, exc)
        if infos:
            answered = self._nodes_answered
            await self.client.add_nodes(*infos)
            await self._until_answered(lambda: self._nodes_answered >= answered + len(infos), "the nodes")
        pod_list = list(pods)
        # Gangs that were reserved before (placeholders exist) or already run (a pod of theirs is
        # bound): no new placeholders for them, as YuniKorn's shim skips reserving on recovery.
        with_placeholders = {app for app in map(self._reserved_app, pod_list) if app}
        bound = [p for p in pod_list if _bound(p)]
        pending = [p for p in pod_list if not _bound(p)]
        for pod in bound:  # running pods first: the core counts them before it places anything
            await self.guarded("pods", pod, self.add_pod(pod, with_placeholders))
        async with self.batch():
            for pod in pending:
                await self.guarded("pods", pod, self.add_pod(pod, with_placeholders))

    def _reserved_app(self, pod: Obj) -> str:
        """The application of a pod of ours that is a placeholder or already bound; "" otherwise, or
        when the pod cannot be read (add_pod then refuses it)."""
        try:
            if pod["spec"]["schedulerName"] == self.scheduler_name and (
                translate.is_placeholder(pod) or node_of(pod)
            ):
                return self.app_id(pod)
        except Exception:
            return ""
        return ""

    # Informer events --------------------------------------------------------------------------
    async def on_node(self, event: str, node: Obj) -> None:
        await self.flush()  # pods sent already on this node must not arrive after it is gone
        name = node["metadata"]["name"]
        known = self.state.nodes.get(name)
        if event == "DELETED":
            if self.state.nodes.pop(name, None) is not None:
                await self.client.node_action(name, si_pb2.NodeInfo.DECOMISSION)
            self.bad.forget(key_of(node))
            return
        info = self._node_info(node, create=known is None)  # read before anything changes
        self.state.nodes[name] = node
        answered = self._nodes_answered
        await self.client.add_nodes(info)
        if known is None:
            await self._adopt_orphans(name, answered)
            return
        was, now = translate.node_is_cordoned(known), translate.node_is_cordoned(node)
        if was != now:  # cordon drains; uncordon makes it schedulable again
            action = si_pb2.NodeInfo.DRAIN_NODE if now else si_pb2.NodeInfo.DRAIN_TO_SCHEDULABLE
            await self.client.node_action(name, action)

    async def on_pod(self, event: str, pod: Obj) -> None:
        uid = key_of(pod)
        if event == "DELETED":
            await self._pod_gone(pod)
            return
        known = self.state.pods.get(uid)
        self.state.pods[uid] = pod
        bound_elsewhere = bool(node_of(pod)) and uid not in self.state.bound_by_us
        if uid in self.state.refused:
            if _readings(pod) == self.state.refused[uid]:
                if finished(pod):
                    await self._pod_gone(pod)
                return  # a change of its status (our own condition, say): still unreadable, said so
            del self.state.refused[uid]  # corrected, perhaps: looked at afresh
            self.bad.forget(uid)
            known = None
        if known is None and bound_elsewhere:
            await self._add_foreign(pod)  # arrived already on a node: we did not place it
        elif known is None:
            await self.add_pod(pod)
        elif uid in self.state.sizes and node_of(pod) and node_of(known) and not finished(pod):
            if _sizing(pod) != _sizing(known):  # its resources were resized in place, perhaps
                await self._resized(pod)
        elif uid in self.state.waiting_for_volumes and not node_of(pod):
            # A pod that waits (for its volumes, or its scheduling gates) changed: look again.
            self.state.waiting_for_volumes.pop(uid, None)
            await self.add_pod(pod)
        elif not node_of(known) and bound_elsewhere:
            # Bound by someone else while we were asking for it: withdraw the ask; it occupies its node.
            if uid in self.state.asked:
                app_id = self.state.asked.pop(uid)
                self.state.placed.pop(uid, None)
                await self.flush()
                await self.client.release(app_id, uid, message="bound by another scheduler")
            await self._add_foreign(pod)
        if finished(pod):
            await self._pod_gone(pod)

    async def _add_foreign(self, pod: Obj) -> None:
        uid = key_of(pod)
        if uid in self.state.foreign or finished(pod):
            return
        await self._send_ask(self._foreign_allocation(pod))
        self.state.foreign.add(uid)

    def _foreign_allocation(self, pod: Obj) -> si_pb2.Allocation:
        """Another scheduler's pod on its node: it occupies room there, no queue's; the size sent is
        remembered, so that an in-place resize is seen."""
        request = translate.pod_request(pod)
        labels = self._namespace_labels(pod)
        alloc = translate.bound_pod_allocation(
            pod, _FOREIGN_PRIORITY, ours=False, namespace_labels=labels, request=request
        )
        self.state.sizes[key_of(pod)] = request
        return alloc

    async def _adopt_orphans(self, name: str, answered: int) -> None:
        """The pods the core refused because it did not know their node: sent again now it does (once
        the core answered the node, counted from `answered`)."""
        orphans = self.state.orphans.pop(name, set())
        if not orphans:
            return
        await self._until_answered(lambda: self._nodes_answered > answered, f"node {name}")
        for uid in orphans:
            pod = self.state.pods.get(uid)
            if pod is None or node_of(pod) != name:
                continue
            if uid in self.state.foreign:
                await self.guarded("pods", pod, self._send_ask(self._foreign_allocation(pod)))
            else:
                await self.guarded("pods", pod, self.add_pod(pod))

    async def _resized(self, pod: Obj) -> None:
        """A running pod whose resources changed (an in-place resize, as the kubelet reports it): the
        core is sent its new size, and updates its node's, queue's, application's and user's usage."""
        uid = key_of(pod)
        request = translate.pod_request(pod)
        if request == self.state.sizes.get(uid):
            return
        if uid in self.state.foreign:
            alloc = self._foreign_allocation(pod)
        elif uid not in self.state.placed or uid in self.state.deleting:
            return  # the core holds nothing of it (any more): nothing to resize
        else:
            app_id, _ = self.state.placed[uid]
            alloc = translate.bound_pod_allocation(
                pod, self.priorities.resolve(pod), ours=True, app_id=app_id, request=request,
                namespace_labels=self._namespace_labels(pod),
            )  # fmt: skip
            self.state.sizes[uid] = request
        log.info("pod resized in place", pod=uid, applicationID=alloc.applicationID, size=request)
        await self._send_ask(alloc)

    async def on_namespace(self, event: str, namespace: Obj) -> None:
        """Namespaces' labels go on their pods' asks (pod affinity terms' namespaceSelector matches
        them), their annotations' limits on their applications (see shim_k8s.namespaces). A pod or
        application already sent keeps what it was sent with. Annotations that cannot be used are
        reported on the namespace, once per change of them."""
        name = (namespace.get("metadata") or {}).get("name", "")
        if event == "DELETED":
            self.namespaces.pop(name, None)
            return
        before = namespaces.annotations_of(self.namespaces.get(name))
        self.namespaces[name] = namespace
        if namespaces.annotations_of(namespace) == before:
            return
        for warning in namespaces.application_tags(namespace).warnings:
            log.warning("namespace annotation not used", namespace=name, detail=warning)
            await self.kube.record_event(
                {**namespace, "kind": "Namespace"}, "NamespaceAnnotationIgnored", warning, warning=True
            )

    def app_id(self, pod: Obj) -> str:
        return translate.application_id(pod, self.unique_app_ids)

    def _namespace_of(self, pod: Obj) -> Obj | None:
        return self.namespaces.get((pod.get("metadata") or {}).get("namespace", "default"))

    def _namespace_labels(self, pod: Obj) -> Mapping[str, str]:
        return ((self._namespace_of(pod) or {}).get("metadata") or {}).get("labels") or {}

    async def on_priority_class(self, event: str, pc: Obj) -> None:
        if event == "DELETED":
            self.priorities.remove(pc["metadata"]["name"])
            return
        self.priorities.upsert(pc)
        for pod in list(self.state.waiting_for_class.values()):  # a class that was missing now exists
            self.state.waiting_for_class.pop(key_of(pod), None)
            await self.guarded("pods", pod, self.add_pod(pod))

    async def on_configmap(self, event: str, configmap: Obj) -> None:
        """A change to yunikorn-configs or yunikorn-defaults (see shim_k8s.configmaps): the queue
        configuration goes to the core unless service.enableConfigHotRefresh is false."""
        name = (configmap.get("metadata") or {}).get("name", "")
        if name not in service_config.CONFIGMAP_NAMES:
            return
        text, warnings = self.settings.change(name, None if event == "DELETED" else configmap)
        self._report(warnings)
        if text is None:
            return
        response = await self.client.update_configuration(text)
        if response.accepted:
            self.settings.queues = self.settings.accepted = text
            log.info("queue configuration updated from the configmap")
        else:
            message = "queue configuration refused, the previous one stays: " + "; ".join(response.errors)
            shown = {**configmap, "kind": "ConfigMap"}
            await self.kube.record_event(shown, "ConfigRejected", message, warning=True)

    # Pods -------------------------------------------------------------------------------------
    async def add_pod(self, pod: Obj, with_placeholders: set[str] | None = None) -> None:
        """A pod of ours is asked for (or, bound already, sent as an existing allocation); another
        scheduler's bound pod is counted on its node. All that is sent is read from the pod before
        anything is sent or remembered, so a pod that cannot be read is refused whole (see `guarded`)."""
        uid = key_of(pod)
        self.state.pods[uid] = pod
        if finished(pod):
            return
        if (pod.get("spec") or {}).get("schedulerName") != self.scheduler_name:
            if node_of(pod):
                await self._add_foreign(pod)  # never ours to place or move: its priority does not count
            return
        try:
            priority = self.priorities.resolve(pod)
        except UnknownPriorityClass as exc:
            self.state.waiting_for_class[uid] = pod
            await self.kube.record_event(pod, "PriorityClassNotFound", str(exc), warning=True)
            return
        app_id, node = self.app_id(pod), node_of(pod)
        labels = self._namespace_labels(pod)
        ask, wait, request, ignored = None, None, {}, []
        if node:  # recovered: it already runs where it was bound
            request = translate.pod_request(pod)
            ask = translate.bound_pod_allocation(
                pod, priority, ours=True, task_group="", namespace_labels=labels, app_id=app_id,
                request=request,
            )  # fmt: skip
        elif uid not in self.state.asked:
            wait, volume_terms = self._why_wait(pod)
            if wait is None:
                request = translate.pod_request(pod)
                ignored = translate.ignored_placement(pod)
                ask = translate.pod_ask(
                    pod, priority, app_id, task_group="", volume_terms=volume_terms, namespace_labels=labels,
                    request=request,
                )  # fmt: skip
        if app_id not in self.state.apps and not await self._add_application(
            pod, app_id, app_id in (with_placeholders or ())
        ):
            return
        if ask is None:
            if wait is not None:
                await self._wait(pod, *wait)
            return
        ask.taskGroupName = await self.gangs.task_group_of(pod, app_id)
        self.state.sizes[uid] = request
        if node:
            self.state.bound_by_us.add(uid)
            self.state.placed[uid] = (app_id, node)
        else:
            self.state.asked[uid] = app_id
            if ignored:
                message = f"not honoured by pykorn yet, the pod is placed without them: {'; '.join(ignored)}"
                await self.kube.record_event(pod, "PlacementConstraintsIgnored", message, warning=True)
        await self._send_ask(ask)

    def _why_wait(self, pod: Obj) -> tuple[tuple[str, str] | None, list[list[Any]]]:
        """Whether the pod may be asked for yet: ((event reason, why) it waits, or None) and, when it
        may, the node selector terms of its bound volumes."""
        gates = [g.get("name", "") for g in (pod.get("spec") or {}).get("schedulingGates") or []]
        if gates:  # Kubernetes: a gated pod is not scheduled until every gate is removed
            return (
                "SchedulingGated",
                f"waiting for its scheduling gates to be removed: {', '.join(gates)}",
            ), []
        why, volume_terms = self.volumes.placement(pod)
        return (("VolumesNotReady", why) if why else None), volume_terms

    async def _add_application(self, pod: Obj, app_id: str, placeholders_exist: bool) -> bool:
        """The application of its first pod: its user (YuniKorn's fallbacks reported on the pod), its
        gang, its namespace's limits; sent and answered before any ask of it. False when the core
        rejected it (its pending pods are failed)."""
        user = translate.user_info(pod)
        gang = await self.gangs.of_new_app(pod, app_id, placeholders_exist)
        if gang is None:
            request = translate.application_request(pod, app_id, user=user)
        else:
            request = translate.application_request(
                pod, app_id, gang_size=task_groups.gang_size(list(gang.groups.values())),
                gang_style=gang.policy.style, placeholder_timeout_seconds=gang.policy.timeout_seconds,
                user=user,
            )  # fmt: skip
        request.tags.update(namespaces.application_tags(self._namespace_of(pod)).tags)
        self.state.apps.add(app_id)
        if gang is not None:
            self.state.gangs[app_id] = gang
        self._apps_answered.discard(app_id)
        await self._report_notes("pods", pod, user.notes)
        await self.flush()  # what came before it first: the order the informers saw
        await self.client.add_applications(request)
        # Before its first ask: the asks travel on another stream and must not overtake it.
        await self._until_answered(lambda: app_id in self._apps_answered, f"application {app_id}")
        refused = self._apps_rejected.pop(app_id, None)
        if refused is not None:
            # As YuniKorn's shim: its pods fail with the core's reason, and the application is
            # forgotten, so that a later pod of the same ID is a new submission.
            self.state.apps.discard(app_id)
            self.state.gangs.pop(app_id, None)
            log.warning("application rejected", applicationID=app_id, reason=refused)
            await self._fail_application(app_id, "ApplicationRejected", refused)
            return False
        if gang is not None and not gang.placeholders_exist:
            await self.gangs.create_placeholders(pod, app_id, gang)
        return True

    # Gangs ------------------------------------------------------------------------------------
    async def _fail_application(self, app_id: str, reason: str, message: str) -> None:
        """The core will not schedule the application: each pending pod of it fails, as YuniKorn's shim
        fails them (phase Failed with the reason and message, an ApplicationFailed event)."""
        for uid, pod in list(self.state.pods.items()):
            if uid in self.state.given_up or node_of(pod) or finished(pod) or translate.is_placeholder(pod):
                continue
            if (pod.get("spec") or {}).get("schedulerName") != self.scheduler_name:
                continue
            try:
                of = self.state.asked.get(uid) or self.app_id(pod)
            except Exception:
                continue
            if of == app_id:
                await self.fail_pod(pod, app_id, reason, message)

    async def fail_pod(self, pod: Obj, app_id: str, reason: str, message: str) -> None:
        """One pod the core will not schedule: failed (once), and nothing asked for it again."""
        uid = key_of(pod)
        if uid in self.state.given_up:
            return
        self.state.given_up.add(uid)
        self.state.asked.pop(uid, None)
        self.state.waiting_for_class.pop(uid, None)
        self.state.waiting_for_volumes.pop(uid, None)
        self.state.unschedulable[uid] = f"{reason}:{message}"
        why = f"Application {app_id} scheduling failed, reason: {message}"
        await self.kube.record_event(pod, "ApplicationFailed", why, warning=True)
        try:
            await self.kube.fail_pod(pod, reason, message)
        except Exception as exc:  # the API would not take it: said, and the pod stays pending, not asked
            log.warning("failing a pod failed", pod=uid, applicationID=app_id, error=repr(exc))

    async def on_volume_object(self, kind: str, event: str, obj: Obj) -> None:
        """A claim, volume or storage class changed: the pods that waited for their volumes look again."""
        self.volumes.update(kind, event, obj)
        for pod in list(self.state.waiting_for_volumes.values()):
            self.state.waiting_for_volumes.pop(key_of(pod), None)
            await self.guarded("pods", pod, self.add_pod(pod))

    async def _wait(self, pod: Obj, event_reason: str, why: str) -> None:
        """Not asked for (gated, or its volumes not ready: placed blindly, it could land where its
        volume cannot be). Says why, once per reason: an event, and the PodScheduled condition:
        `SchedulingGated` as kube-scheduler's for gates, `SchedulingSkipped` for volumes (more nodes
        would not help; the cluster autoscaler must not add any for it)."""
        uid = key_of(pod)
        self.state.waiting_for_volumes[uid] = pod
        condition = "SchedulingGated" if event_reason == "SchedulingGated" else SKIPPED
        if self._pod_scheduled_false(pod, uid, condition, why):
            await self.kube.record_event(pod, event_reason, why, warning=True)

    async def on_pending(self, uid: str, reason: str, skipped: bool) -> None:
        """The core says how an ask of ours waits, and why: the pod's PodScheduled condition says so,
        as YuniKorn's shim does. `Unschedulable` (the cluster autoscaler's signal) only when the pod fits
        its queue, limits and gang and no node has room; `SchedulingSkipped` when something of its own
        holds it (a queue's max, maxapplications, a limit, its gang's placeholders, its required
        node): more nodes would not help. A PodUnschedulable event when the kind changes. The API
        server sets the condition to True when the pod is bound."""
        pod = self.state.pods.get(uid)
        if pod is None or uid not in self.state.asked or uid in self.state.bound_by_us or node_of(pod):
            return
        condition = SKIPPED if skipped else UNSCHEDULABLE
        before = self.state.unschedulable.get(uid, "")
        if self._pod_scheduled_false(pod, uid, condition, reason) and not before.startswith(f"{condition}:"):
            name = (pod.get("metadata") or {}).get("name", uid)
            message = _WAITING_EVENT[condition] % name
            self.in_background(self.kube.record_event(pod, "PodUnschedulable", message))

    def _pod_scheduled_false(self, pod: Obj, uid: str, reason: str, message: str) -> bool:
        """The pod's PodScheduled=False condition with this reason and message, patched once per change
        (True: patched now)."""
        said = f"{reason}:{message}"
        if self.state.unschedulable.get(uid) == said:
            return False
        self.state.unschedulable[uid] = said
        self.in_background(self.kube.set_unschedulable(pod, message, reason))
        return True

    def in_background(self, work: Coroutine[Any, Any, None]) -> None:
        """A write nothing waits for (a status patch): the loop goes on meanwhile."""
        self.decisions.in_background(work)

    async def _pod_gone(self, pod: Obj) -> None:
        uid = key_of(pod)
        self.state.pods.pop(uid, None)
        self.state.unschedulable.pop(uid, None)
        self.state.waiting_for_class.pop(uid, None)
        self.state.waiting_for_volumes.pop(uid, None)
        self.state.sizes.pop(uid, None)
        self.state.refused.pop(uid, None)
        self.bad.forget(uid)
        await self.flush()  # its ask, if it waits in the batch, goes before its release
        if uid in self.state.deleting:  # a placeholder the core released: it knows
            self.state.deleting.discard(uid)
            self.state.bound_by_us.discard(uid)
        elif uid in self.state.foreign:
            self.state.foreign.discard(uid)
            await self.client.release("", uid)
        elif uid in self.state.asked or uid in self.state.bound_by_us:
            asked_as = self.state.asked.pop(uid, "")
            self.state.bound_by_us.discard(uid)
            app_id, _ = self.state.placed.pop(uid, (asked_as, ""))
            await self.client.release(app_id or asked_as or self.app_id(pod), uid)
        self.state.given_up.discard(uid)

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

    def _node_info(self, node: Obj, create: bool) -> si_pb2.NodeInfo:
        if not create:
            return translate.node_info(node, si_pb2.NodeInfo.UPDATE)
        action = si_pb2.NodeInfo.CREATE_DRAIN if translate.node_is_cordoned(node) else si_pb2.NodeInfo.CREATE
        return translate.node_info(node, action)


UNSCHEDULABLE, SKIPPED = "Unschedulable", "SchedulingSkipped"  # PodScheduled=False reasons
# YuniKorn's shim's event on the pod when it starts waiting one way or the other.
_WAITING_EVENT = {
    UNSCHEDULABLE: "Task %s is pending for the requested resources become available",
    SKIPPED: "Task %s is skipped from scheduling because the queue quota has been exceed",
}
_FOREIGN_PRIORITY = PodPriority(0, allow_preempt_other=False, allow_preempt_self=False)  # never ours to move


def _readings(pod: Obj) -> tuple[object, object]:
    """What the shim reads of a pod, its metadata and spec (not its status, which the kubelet and the
    shim's own condition patches change): a refused pod is looked at again when this changes."""
    meta = pod.get("metadata") if isinstance(pod, Mapping) else None
    if isinstance(meta, Mapping):
        meta = {k: v for k, v in meta.items() if k not in ("resourceVersion", "managedFields")}
    return meta, pod.get("spec") if isinstance(pod, Mapping) else None


def _sizing(pod: Obj) -> tuple[object, ...]:
    """What a running pod's size is computed from, cheap to gather: compared before computing it (the
    kubelet changes its status often, its containers' sizes rarely)."""
    spec, status = pod.get("spec") or {}, pod.get("status") or {}
    statuses = [*(status.get("containerStatuses") or ()), *(status.get("initContainerStatuses") or ())]
    conditions = status.get("conditions") or ()
    sizes = [(s.get("name"), s.get("allocatedResources"), s.get("resources")) for s in statuses if _is_obj(s)]
    return (
        spec.get("containers"), spec.get("initContainers"), spec.get("resources"), spec.get("overhead"),
        sizes, [c for c in conditions if _is_obj(c) and c.get("type") == "PodResizePending"],
        status.get("resize"),
    )  # fmt: skip


def _is_obj(value: object) -> bool:
    return isinstance(value, Mapping)


def _bound(pod: Obj) -> bool:
    """On a node already; a pod too malformed to say is taken as pending (add_pod refuses it)."""
    spec = pod.get("spec") if isinstance(pod, Mapping) else None
    return isinstance(spec, Mapping) and bool(spec.get("nodeName"))


# Application states after which the core no longer knows the application (YuniKorn's too).
_APPS_FORGOTTEN = frozenset({"Completed", "Expired", "Failed"})
TIMEOUT_REASON, TIMEOUT_MESSAGE = GANG_TIMEOUT, GANG_TIMEOUT_MESSAGE  # the core's message is the reason
