"""The Kubernetes shim's logic: Kubernetes objects in, core decisions out, nothing tied to HTTP.

Informers (a later layer) call `on_node`, `on_pod`, `on_priority_class` and `on_configmap` with the
objects as the API serves them; the shim keeps the core told (nodes, applications, asks, pods of other
schedulers as foreign allocations, queue configuration) and carries the core's answers out through
`KubeActions`: an allocation becomes a binding, a preemption an eviction plus an event, a binding that
fails goes back to the core as a release with the reason. `sync` lists what exists and (re)builds the
core's state, which is how a start and a core restart are handled.

The shim is a handler of the RM client: each decision the core sends is queued as it arrives and
carried out exactly once, however many arrive while earlier ones are being bound. `process_core`
starts each as a task of its own (the HTTP layer bounds how many requests are in flight); a pod's
decisions run one after the other, in the order the core sent them.

Inside `batch()` (the main loop, around what the informers delivered at once) asks are gathered and
sent in one request at the end; anything that must not overtake them (a release, a node change, an
application) sends them first.
"""

from __future__ import annotations

import asyncio
import contextlib
from collections import deque
from collections.abc import AsyncIterator, Callable, Collection, Coroutine, Iterable, Mapping
from functools import partial
from typing import Any, Protocol

import structlog

from rmclient.client import SEND_ERRORS, ResponseHandler, SchedulerClient
from shim_k8s import namespaces, service_config, task_groups, translate
from shim_k8s.configmaps import ConfigMaps
from shim_k8s.priority import PodPriority, PriorityResolver, UnknownPriorityClass
from shim_k8s.reconcile import Reconciler
from shim_k8s.shim_state import AppGang, ShimState, finished, node_of
from shim_k8s.volumes import Volumes
from si.v1 import si_pb2

log = structlog.get_logger("pykorn.k8s")

ASK_BATCH = 1_000  # asks gathered in a batch before they are sent anyway
Obj = Mapping[str, Any]
# What the core decided, in arrival order: bind an allocation, evict a victim, report a rejection.
Decision = si_pb2.Allocation | si_pb2.AllocationRelease | si_pb2.RejectedAllocation


class BindError(RuntimeError):
    pass


class KubeActions(Protocol):
    """What the shim asks of the Kubernetes API."""

    async def bind(self, pod: Obj, node: str) -> None: ...  # pods/binding; raises BindError

    async def evict(self, pod: Obj, reason: str) -> None: ...  # policy/v1 Eviction

    async def record_event(self, obj: Obj, reason: str, message: str, warning: bool = False) -> None: ...

    async def create_pod(self, pod: Obj) -> None: ...  # a placeholder pod

    async def delete_pod(self, pod: Obj) -> None: ...  # a placeholder the core released; gone already is fine

    async def set_unschedulable(self, pod: Obj, message: str) -> None: ...  # PodScheduled: False


def _key(obj: Obj) -> str:
    meta = obj.get("metadata") or {}
    return meta.get("uid") or f"{meta.get('namespace', '')}/{meta.get('name', '')}"


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
        self._decisions: deque[Decision] = deque()
        self._running: dict[str, asyncio.Task[None]] = {}  # per pod: its latest decision being carried out
        self._background: set[asyncio.Task[None]] = set()  # status patches
        self._outbox: list[si_pb2.Allocation] = []  # asks gathered in a batch
        self._batching = 0
        self._apps_answered: set[str] = set()
        self._nodes_answered = 0
        self.reconciler = Reconciler(self)

    # What the core sends (called by the client as each response arrives) -----------------------
    def on_allocations(self, response: si_pb2.AllocationResponse) -> None:
        for alloc in response.new:
            self.state.placed[alloc.allocationKey] = (alloc.applicationID, alloc.nodeID)
        for release in response.released:
            self.state.placed.pop(release.allocationKey, None)
        self._decisions.extend(response.new)
        self._decisions.extend(r for r in response.released if r.terminationType in _CORE_RELEASES)
        self._decisions.extend(response.rejectedAllocations)
        if self._decisions and self._wake is not None:
            self._wake()

    def on_applications(self, response: si_pb2.ApplicationResponse) -> None:
        self._apps_answered.update(a.applicationID for a in response.accepted)
        self._apps_answered.update(r.applicationID for r in response.rejected)
        for update in response.updated:
            if update.state in _APPS_FORGOTTEN:  # the core forgot it: the next pod of it adds it again
                self.state.apps.discard(update.applicationID)
                self.state.gangs.pop(update.applicationID, None)

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
        await self.client.register(config=self.config)
        await self.resend(nodes, pods)

    def load(
        self, priority_classes: Iterable[Obj] = (), configmap: Obj | None = None, defaults: Obj | None = None
    ) -> None:
        """Take the priority classes, and from the ConfigMaps (`yunikorn-configs`, over
        `yunikorn-defaults`) the settings and the queue configuration a (re-)registration goes with."""
        for pc in priority_classes:
            self.priorities.upsert(pc)
        warnings = self.settings.load(configmap, defaults)
        if self.service.placeholder_image:
            self.placeholder_image = self.service.placeholder_image
        self.unique_app_ids = self.service.generate_unique_app_ids
        self._report(warnings)

    @property
    def config(self) -> str:
        """The queue configuration the core has (a registration sends it)."""
        return self.settings.queues

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
        self._decisions.clear()  # decisions of a core that is gone; the new one decides afresh
        self._outbox.clear()
        node_list = list(nodes)
        for node in node_list:
            self.state.nodes[node["metadata"]["name"]] = node
        if node_list:
            answered = self._nodes_answered
            await self.client.add_nodes(*(self._node_info(n, create=True) for n in node_list))
            await self._until_answered(lambda: self._nodes_answered >= answered + len(node_list), "the nodes")
        pod_list = list(pods)
        # Gangs that were reserved before (placeholders exist) or already run (a pod of theirs is
        # bound): no new placeholders for them, as YuniKorn's shim skips reserving on recovery.
        ours = [p for p in pod_list if (p.get("spec") or {}).get("schedulerName") == self.scheduler_name]
        with_placeholders = {self.app_id(p) for p in ours if task_groups.is_placeholder(p) or node_of(p)}
        bound = [p for p in pod_list if node_of(p)]
        pending = [p for p in pod_list if not node_of(p)]
        for pod in bound:  # running pods first: the core counts them before it places anything
            await self.add_pod(pod, with_placeholders)
        async with self.batch():
            for pod in pending:
                await self.add_pod(pod, with_placeholders)

    # Informer events --------------------------------------------------------------------------
    async def on_node(self, event: str, node: Obj) -> None:
        await self.flush()  # pods sent already on this node must not arrive after it is gone
        name = node["metadata"]["name"]
        known = self.state.nodes.get(name)
        if event == "DELETED":
            self.state.nodes.pop(name, None)
            await self.client.node_action(name, si_pb2.NodeInfo.DECOMISSION)
            return
        self.state.nodes[name] = node
        if known is None:
            await self.client.add_nodes(self._node_info(node, create=True))
            return
        await self.client.add_nodes(translate.node_info(node, si_pb2.NodeInfo.UPDATE))
        was, now = translate.node_is_cordoned(known), translate.node_is_cordoned(node)
        if was != now:  # cordon drains; uncordon makes it schedulable again
            action = si_pb2.NodeInfo.DRAIN_NODE if now else si_pb2.NodeInfo.DRAIN_TO_SCHEDULABLE
            await self.client.node_action(name, action)

    async def on_pod(self, event: str, pod: Obj) -> None:
        uid = _key(pod)
        if event == "DELETED":
            await self._pod_gone(pod)
            return
        known = self.state.pods.get(uid)
        self.state.pods[uid] = pod
        bound_elsewhere = bool(node_of(pod)) and uid not in self.state.bound_by_us
        if known is None and bound_elsewhere:
            await self._add_foreign(pod)  # arrived already on a node: we did not place it
        elif known is None:
            await self.add_pod(pod)
        elif uid in self.state.waiting_for_volumes and not node_of(pod):
            # A pod that waits (for its volumes, or its scheduling gates) changed: look again.
            self.state.waiting_for_volumes.pop(uid, None)
            await self.add_pod(pod)
        elif not node_of(known) and bound_elsewhere:
            # Bound by someone else while we were asking for it: withdraw the ask; it occupies its node.
            if uid in self.state.asked:
                self.state.asked.discard(uid)
                self.state.placed.pop(uid, None)
                await self.flush()
                await self.client.release(self.app_id(pod), uid, message="bound by another scheduler")
            await self._add_foreign(pod)
        if finished(pod):
            await self._pod_gone(pod)

    async def _add_foreign(self, pod: Obj) -> None:
        uid = _key(pod)
        if uid in self.state.foreign or finished(pod):
            return
        self.state.foreign.add(uid)
        priority = PodPriority(
            0, allow_preempt_other=False, allow_preempt_self=False
        )  # never scheduled by us
        labels = self._namespace_labels(pod)
        await self._send_ask(
            translate.bound_pod_allocation(pod, priority, ours=False, namespace_labels=labels)
        )

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
            self.state.waiting_for_class.pop(_key(pod), None)
            await self.add_pod(pod)

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
            self.settings.queues = text
            log.info("queue configuration updated from the configmap")
        else:
            message = "queue configuration refused, the previous one stays: " + "; ".join(response.errors)
            shown = {**configmap, "kind": "ConfigMap"}
            await self.kube.record_event(shown, "ConfigRejected", message, warning=True)

    # Pods -------------------------------------------------------------------------------------
    async def add_pod(self, pod: Obj, with_placeholders: set[str] | None = None) -> None:
        uid = _key(pod)
        self.state.pods[uid] = pod
        if finished(pod):
            return
        ours = (pod.get("spec") or {}).get("schedulerName") == self.scheduler_name
        try:
            priority = self.priorities.resolve(pod)
        except UnknownPriorityClass as exc:
            self.state.waiting_for_class[uid] = pod
            await self.kube.record_event(pod, "PriorityClassNotFound", str(exc), warning=True)
            return
        if not ours:
            if node_of(pod):
                await self._add_foreign(pod)
            return
        app_id = self.app_id(pod)
        if app_id not in self.state.apps:
            self.state.apps.add(app_id)
            self._apps_answered.discard(app_id)
            gang = await self._gang_of_new_app(pod, app_id, app_id in (with_placeholders or ()))
            request = translate.application_request(pod, app_id)
            if gang is not None:
                request = translate.application_request(
                    pod, app_id, gang_size=task_groups.gang_size(list(gang.groups.values())),
                    gang_style=gang.policy.style, placeholder_timeout_seconds=gang.policy.timeout_seconds,
                )  # fmt: skip
            request.tags.update(namespaces.application_tags(self._namespace_of(pod)).tags)
            await self.flush()  # what came before it first: the order the informers saw
            await self.client.add_applications(request)
            # Before its first ask: the asks travel on another stream and must not overtake it.
            await self._until_answered(lambda: app_id in self._apps_answered, f"application {app_id}")
            if gang is not None and not gang.placeholders_exist:
                await self._create_placeholders(pod, app_id, gang)
        group = await self._task_group_of(pod, app_id)
        if node_of(pod):
            self.state.bound_by_us.add(uid)  # recovered: it already runs where it was bound
            self.state.placed[uid] = (app_id, node_of(pod))
            alloc = translate.bound_pod_allocation(
                pod, priority, ours=True, task_group=group, namespace_labels=self._namespace_labels(pod),
                app_id=app_id,
            )  # fmt: skip
            await self._send_ask(alloc)
        elif uid not in self.state.asked:
            gates = [g.get("name", "") for g in (pod.get("spec") or {}).get("schedulingGates") or []]
            if gates:  # Kubernetes: a gated pod is not scheduled until every gate is removed
                why = f"waiting for its scheduling gates to be removed: {', '.join(gates)}"
                await self._wait(pod, "SchedulingGated", why)
                return
            why, volume_terms = self.volumes.placement(pod)
            if why:
                await self._wait(pod, "VolumesNotReady", why)
                return
            self.state.asked.add(uid)
            ignored = translate.ignored_placement(pod)
            if ignored:
                message = f"not honoured by pykorn yet, the pod is placed without them: {'; '.join(ignored)}"
                await self.kube.record_event(pod, "PlacementConstraintsIgnored", message, warning=True)
            ask = translate.pod_ask(
                pod, priority, app_id, task_group=group, volume_terms=volume_terms,
                namespace_labels=self._namespace_labels(pod),
            )  # fmt: skip
            await self._send_ask(ask)

    # Gangs ------------------------------------------------------------------------------------
    async def _gang_of_new_app(self, pod: Obj, app_id: str, placeholders_exist: bool) -> AppGang | None:
        """The task groups the application's first pod declares; a declaration that cannot be used
        is reported on the pod, and the application is then scheduled without a gang (as YuniKorn)."""
        if self.service.disable_gang_scheduling:
            return None  # service.disableGangScheduling: task groups are not looked at, as YuniKorn
        try:
            groups = task_groups.task_groups(pod)
        except task_groups.TaskGroupError as exc:
            await self.kube.record_event(
                pod, "TaskGroupsError", f"gang scheduling off for {app_id}: {exc}", True
            )
            return None
        if not groups:
            return None
        policy = task_groups.gang_policy(pod)
        for warning in policy.warnings:
            await self.kube.record_event(pod, "SchedulingPolicyParameters", warning, warning=True)
        gang = AppGang(
            {g.name: g for g in groups}, policy, placeholders_exist or task_groups.is_placeholder(pod)
        )
        self.state.gangs[app_id] = gang
        return gang

    async def _create_placeholders(self, originator: Obj, app_id: str, gang: AppGang) -> None:
        """One placeholder pod per member of each task group; they come back through the informer and
        are asked for like any pod of ours."""
        gang.placeholders_exist = True
        queue = translate.queue_name(originator)
        placeholders = [
            task_groups.placeholder_pod(
                originator,
                app_id,
                queue,
                group,
                self.placeholder_image,
                self.scheduler_name,
                self._placeholder_identity(),
            )
            for group in gang.groups.values()
            for _ in range(group.min_member)
        ]
        await asyncio.gather(*(self.kube.create_pod(p) for p in placeholders))
        log.info("placeholders created", applicationID=app_id,
                 placeholders=sum(g.min_member for g in gang.groups.values()))  # fmt: skip

    def _placeholder_identity(self) -> dict[str, int]:
        service = self.service
        chosen = {
            "runAsUser": service.placeholder_run_as_user,
            "runAsGroup": service.placeholder_run_as_group,
            "fsGroup": service.placeholder_fs_group,
        }
        return {key: value for key, value in chosen.items() if value is not None}

    async def _task_group_of(self, pod: Obj, app_id: str) -> str:
        """The task group a pod names, when its application declares it; otherwise none, with an event."""
        name = task_groups.task_group_name(pod)
        if not name or self.service.disable_gang_scheduling:
            return ""
        gang = self.state.gangs.get(app_id)
        if gang is not None and name in gang.groups:
            return name
        declared = sorted(gang.groups) if gang is not None else []
        await self.kube.record_event(
            pod, "TaskGroupNotDeclared",
            f"task group {name!r} is not among the task groups of {app_id} ({declared or 'none'}): "
            "scheduled as an ordinary pod", True,
        )  # fmt: skip
        return ""

    async def on_volume_object(self, kind: str, event: str, obj: Obj) -> None:
        """A claim, volume or storage class changed: the pods that waited for their volumes look again."""
        self.volumes.update(kind, event, obj)
        for pod in list(self.state.waiting_for_volumes.values()):
            self.state.waiting_for_volumes.pop(_key(pod), None)
            await self.add_pod(pod)

    async def _wait(self, pod: Obj, event_reason: str, why: str) -> None:
        """Not asked for (gated, or its volumes not ready: placed blindly, it could land where its
        volume cannot be). Says why, once per reason: an event, and the PodScheduled condition."""
        uid = _key(pod)
        self.state.waiting_for_volumes[uid] = pod
        if self.state.unschedulable.get(uid) == why:
            return
        self.state.unschedulable[uid] = why
        await self.kube.record_event(pod, event_reason, why, warning=True)
        self.in_background(self.kube.set_unschedulable(pod, why))

    async def on_pending(self, uid: str, reason: str) -> None:
        """The core says why an ask of ours still waits: the pod's PodScheduled condition says so, as
        kube-scheduler's does (reason Unschedulable: the cluster autoscaler's signal). The API server
        sets the condition to True when the pod is bound."""
        pod = self.state.pods.get(uid)
        if pod is None or uid not in self.state.asked or uid in self.state.bound_by_us or node_of(pod):
            return
        if self.state.unschedulable.get(uid) == reason:
            return
        self.state.unschedulable[uid] = reason
        self.in_background(self.kube.set_unschedulable(pod, reason))

    def in_background(self, work: Coroutine[Any, Any, None]) -> None:
        """A write nothing waits for (a status patch): the loop goes on meanwhile."""
        task = asyncio.create_task(work)
        self._background.add(task)
        task.add_done_callback(self._background.discard)

    async def _pod_gone(self, pod: Obj) -> None:
        uid = _key(pod)
        self.state.pods.pop(uid, None)
        self.state.unschedulable.pop(uid, None)
        self.state.waiting_for_class.pop(uid, None)
        self.state.waiting_for_volumes.pop(uid, None)
        await self.flush()  # its ask, if it waits in the batch, goes before its release
        if uid in self.state.deleting:  # a placeholder the core released: it knows
            self.state.deleting.discard(uid)
            self.state.bound_by_us.discard(uid)
        elif uid in self.state.foreign:
            self.state.foreign.discard(uid)
            await self.client.release("", uid)
        elif uid in self.state.asked or uid in self.state.bound_by_us:
            self.state.asked.discard(uid)
            self.state.bound_by_us.discard(uid)
            self.state.placed.pop(uid, None)
            await self.client.release(self.app_id(pod), uid)
        self.state.given_up.discard(uid)

    # Reconciliation (shim_k8s.reconcile) ----------------------------------------------------------
    async def reconcile(self, api_pods: Iterable[Obj]) -> int:
        """Repair what differs between what the core holds for us and the pods the API lists; returns
        how many repairs were made (see shim_k8s.reconcile)."""
        if self._decisions:
            return 0  # decisions not started yet would look like mismatches: next round
        return await self.reconciler.round(api_pods)

    @property
    def busy(self) -> Collection[str]:
        """Pods with a decision being carried out."""
        return self._running.keys()

    # The core's answers -----------------------------------------------------------------------
    @property
    def has_decisions(self) -> bool:
        return bool(self._decisions)

    @property
    def carrying_out(self) -> int:
        """Decisions started and not done yet."""
        return len(self._running)

    async def process_core(self) -> None:
        """Start carrying out what the core decided, each decision once: bind, evict, report. Each
        runs as a task; a pod's next decision waits for its previous one."""
        while self._decisions:
            decision = self._decisions.popleft()
            key = decision.allocationKey
            task = asyncio.create_task(self._carry_out(decision, self._running.get(key)))
            self._running[key] = task
            task.add_done_callback(partial(self._carried_out, key))

    async def carry_out(self) -> None:
        """Start what the core decided and wait until all of it, and the writes behind it, is done."""
        while True:
            await self.process_core()
            running = [*self._running.values(), *self._background]
            if not running:
                return
            await asyncio.wait(running)

    def _carried_out(self, key: str, task: asyncio.Task[None]) -> None:
        if self._running.get(key) is task:
            del self._running[key]
        if task.cancelled():
            return
        error = task.exception()
        if isinstance(error, SEND_ERRORS):  # telling the core failed: it went away; the re-sync repairs
            self.client.connection_lost(repr(error))
            if self._wake is not None:
                self._wake()
        elif error is not None:
            log.error("carrying out a decision failed", allocationKey=key, error=repr(error))

    async def _carry_out(self, decision: Decision, before: asyncio.Task[None] | None) -> None:
        if before is not None:
            await asyncio.wait([before])  # the same pod's earlier decision first
        if isinstance(decision, si_pb2.Allocation):
            await self._bind(decision)
        elif isinstance(decision, si_pb2.AllocationRelease):
            if decision.terminationType == si_pb2.PREEMPTED_BY_SCHEDULER:
                await self._evict(decision)
            else:
                await self._gang_release(decision)
        else:
            await self._rejected(decision)

    async def _rejected(self, rejected: si_pb2.RejectedAllocation) -> None:
        uid = rejected.allocationKey
        pod = self.state.pods.get(uid)
        if pod is None:
            return
        if rejected.applicationID not in self.state.apps and uid in self.state.asked and not node_of(pod):
            # Its application completed in the core while the ask was on its way: add both again.
            self.state.asked.discard(uid)
            await self.add_pod(pod)
            await self.flush()
            return
        await self.kube.record_event(pod, "SchedulingRejected", rejected.reason, warning=True)

    async def _bind(self, alloc: si_pb2.Allocation) -> None:
        uid = alloc.allocationKey
        pod = self.state.pods.get(uid)
        if pod is None or uid in self.state.bound_by_us or node_of(pod):
            return  # a confirmation of a pod already running there: never bind twice
        self.state.bound_by_us.add(uid)  # before the API answers: its echo must not look like a stranger's
        try:
            await self.kube.bind(pod, alloc.nodeID)
        except BindError as exc:
            # The core must not count a pod that never got there.
            self.state.bound_by_us.discard(uid)
            self.state.asked.discard(uid)  # asked again by the reconciliation, once the API may take it
            self.state.placed.pop(uid, None)
            reason = f"binding to {alloc.nodeID} failed: {exc}"
            await self.flush()
            await self.client.release(alloc.applicationID, uid, message=reason)
            await self.kube.record_event(pod, "BindingFailed", reason, True)
            return
        self.state.asked.discard(uid)
        await self.kube.record_event(pod, "Scheduled", f"bound to {alloc.nodeID} by pykorn")

    async def _evict(self, release: si_pb2.AllocationRelease) -> None:
        pod = self.state.pods.get(release.allocationKey)
        if pod is None:
            return
        await self.kube.record_event(pod, "Preempted", release.message, warning=True)
        await self.kube.evict(pod, release.message)

    async def _gang_release(self, release: si_pb2.AllocationRelease) -> None:
        """A placeholder the core replaced or gave up: delete its pod, and tell the core it is gone
        (with the same termination type) when it held room; or a real pod of a failed gang."""
        uid = release.allocationKey
        pod = self.state.pods.get(uid)
        if pod is None:
            return
        if task_groups.is_placeholder(pod):
            held_room = uid in self.state.bound_by_us
            self.state.asked.discard(uid)
            # Still ours (not bound_by_us dropped: the echo of its binding may come yet, and must not
            # look like another scheduler's pod); its DELETED event then sends nothing more.
            self.state.deleting.add(uid)
            try:
                await self.kube.delete_pod(pod)
            except BaseException:
                self.state.deleting.discard(uid)  # still there: the reconciliation may see to it
                raise
            if held_room:
                await self.flush()
                await self.client.release_many(
                    [(release.applicationID, uid)], termination=release.terminationType
                )
            return
        # A Hard gang failed: the core dropped this pod's ask; say so on the pod.
        self.state.asked.discard(uid)
        self.state.given_up.add(uid)
        await self.kube.record_event(pod, "GangSchedulingFailed", release.message, warning=True)

    def _node_info(self, node: Obj, create: bool) -> si_pb2.NodeInfo:
        if not create:
            return translate.node_info(node, si_pb2.NodeInfo.UPDATE)
        action = si_pb2.NodeInfo.CREATE_DRAIN if translate.node_is_cordoned(node) else si_pb2.NodeInfo.CREATE
        return translate.node_info(node, action)


# Releases the core decides that the shim carries out: preemptions (evict), and gang placeholders
# replaced or given up (delete), or a failed gang's real pods (an event).
_CORE_RELEASES = frozenset({si_pb2.PREEMPTED_BY_SCHEDULER, si_pb2.PLACEHOLDER_REPLACED, si_pb2.TIMEOUT})


# Application states after which the core no longer knows the application (YuniKorn's too).
_APPS_FORGOTTEN = frozenset({"Completed", "Expired"})
