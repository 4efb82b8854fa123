"""What the core decided, carried out against the Kubernetes API: an allocation becomes a binding, a
preemption an eviction plus an event, a placeholder the core replaced or gave up is deleted, a binding
that fails goes back to the core as a release with the reason. What the core says of pods and
applications is said on the pods: how an ask waits (the PodScheduled condition and an event, as
YuniKorn's shim), and a rejected or failed application fails its pending pods.

Each decision is queued as it arrives and carried out exactly once, however many arrive while earlier
ones are being bound: `process` starts each as a task of its own (the HTTP layer bounds how many
requests are in flight); a pod's decisions run one after the other, in the order the core sent them.
"""

from __future__ import annotations

import asyncio
from collections import deque
from collections.abc import Callable, Collection, Coroutine
from functools import partial
from typing import Any, Protocol

import structlog

from rmclient.client import SEND_ERRORS, SchedulerClient
from shim_k8s.api.kube import BindError
from shim_k8s.api.objects import Obj, key_of
from shim_k8s.gangs import Gangs
from shim_k8s.outbox import Outbox
from shim_k8s.pod_groups import PodGroups
from shim_k8s.readers import translate
from shim_k8s.readers.service_config import ServiceConfig
from shim_k8s.shim_state import ShimBase, finished, node_of
from shim_k8s.volumes.binding import NothingToBindHere, PodGone, VolumeBinder, VolumeBindError
from si.v1 import si_pb2

log = structlog.get_logger("pykorn.k8s")

# What the core decided, in arrival order: how an ask waits, bind an allocation, evict a victim, report
# a rejection.
Waiting = si_pb2.UpdateContainerSchedulingStateRequest
Decision = Waiting | si_pb2.Allocation | si_pb2.AllocationRelease | si_pb2.RejectedAllocation
# Bindings started at once. Each waits for the API client's rate and its 64 requests in flight; the
# rest wait as decisions in the queue, in order, not as tasks: a burst of 100,000 allocations made
# 100,000 tasks asleep on the rate limit, their timers and frames costing CPU and memory per pod that
# grew with the burst. Bindings with a volume step are not counted: they may wait on a provisioner.
MAX_BINDING = 128
# Releases the core decides that the shim carries out: preemptions (evict), and gang placeholders
# replaced or given up (delete), or a failed gang's real pods (an event).
CORE_RELEASES = frozenset({si_pb2.PREEMPTED_BY_SCHEDULER, si_pb2.PLACEHOLDER_REPLACED, si_pb2.TIMEOUT})


GANG_TIMEOUT = "ResourceReservationTimeout"  # YuniKorn's reason for a failed gang's pods
GANG_TIMEOUT_MESSAGE = "Scheduling has timed out due to insufficient resources"
# Application states after which the core no longer knows the application (YuniKorn's too).
_APPS_FORGOTTEN = frozenset({"Completed", "Expired", "Failed"})
UNSCHEDULABLE, SKIPPED = "Unschedulable", "SchedulingSkipped"  # PodScheduled=False reasons
# YuniKorn's shim's event on the pod when it starts waiting one way or the other.
_WAITING_EVENT = {
    UNSCHEDULABLE: "Task %s is pending for the requested resources become available",
    SKIPPED: "Task %s is skipped from scheduling because the queue quota has been exceed",
}


class ShimForDecisions(ShimBase, Protocol):
    """What of the shim carrying out a decision reads and calls."""

    @property
    def client(self) -> SchedulerClient: ...
    @property
    def outbox(self) -> Outbox: ...
    @property
    def gangs(self) -> Gangs: ...
    @property
    def pod_groups(self) -> PodGroups: ...
    @property
    def scheduler_name(self) -> str: ...
    def app_id(self, pod: Obj) -> str: ...
    async def add_pod(self, pod: Obj, with_placeholders: set[str] | None = None) -> None: ...
    @property
    def volume_binder(self) -> VolumeBinder: ...
    @property
    def service(self) -> ServiceConfig: ...
    async def volume_binding_failed(self, pod: Obj, why: str, nothing_there: bool) -> None: ...


# How the core refuses an ask whose application it does not hold (docs/interface.md, max_early_asks).
_NO_APPLICATION = (" is not known in partition ", " was rejected: ")


def _lacks_application(reason: str) -> bool:
    return any(text in reason for text in _NO_APPLICATION)


class Decisions:
    def __init__(self, shim: ShimForDecisions, wake: Callable[[], None] | None = None) -> None:
        """`wake`: called when telling the core failed (it went away), so the main loop reconnects."""
        self.shim = shim
        self._wake = wake
        self.queue: deque[Decision] = deque()  # arrived, not started
        self._running: dict[str, asyncio.Task[None]] = {}  # per pod: its latest decision being carried out
        self._background: set[asyncio.Task[None]] = set()  # writes nothing waits for (status patches)
        self._binding = 0  # bindings started and not done (MAX_BINDING)
        self.bindings = {"bound": 0, "failed": 0}  # bindings the API took or refused (the metrics)

    def arrived(self, response: si_pb2.AllocationResponse) -> bool:
        """Note what the core now holds for us, and queue what it decided; whether there is anything to
        carry out. How asks wait goes first: it was so before the allocations of the same answer."""
        ledger = self.shim.state.ledger
        # Releases first: a pod given back and asked again at once (its volumes' binding failed) may
        # have its release confirmed in the same answer as its new allocation.
        for release in response.released:
            ledger.core_released(release.allocationKey, release.partitionName)
        for alloc in response.new:
            ledger.core_placed(alloc.allocationKey, alloc.applicationID, alloc.nodeID)
        self.queue.extend(response.schedulingStates)
        self.queue.extend(response.new)
        self.queue.extend(r for r in response.released if r.terminationType in CORE_RELEASES)
        self.queue.extend(response.rejectedAllocations)
        return bool(self.queue)

    @property
    def busy(self) -> Collection[str]:
        """Pods with a decision being carried out."""
        return self._running.keys()

    def in_background(self, work: Coroutine[Any, Any, None]) -> None:
        """A write nothing waits for (a status patch): the loop goes on meanwhile."""
        task = asyncio.create_task(work)
        self._background.add(task)
        task.add_done_callback(self._background.discard)

    async def process(self) -> None:
        """Start carrying out what the core decided, each decision once: bind, evict, report. Each
        runs as a task; a pod's next decision waits for its previous one. At most MAX_BINDING plain
        bindings run at once: the queue waits behind the next one until one of them is done."""
        self._start()

    def _start(self) -> None:
        while self.queue:
            decision = self.queue[0]
            counted = isinstance(decision, si_pb2.Allocation) and self._plain_binding(decision)
            if counted and self._binding >= MAX_BINDING:
                return  # started again as a binding ends (_bound)
            self.queue.popleft()
            key = decision.allocationKey
            task = asyncio.create_task(self._carry_out(decision, self._running.get(key)))
            self._running[key] = task
            task.add_done_callback(partial(self._carried_out, key))
            if counted:
                self._binding += 1
                task.add_done_callback(self._bound)

    def _plain_binding(self, alloc: si_pb2.Allocation) -> bool:
        pod = self.shim.state.ledger.pod(alloc.allocationKey)
        try:
            return pod is None or not self.shim.volume_binder.volumes.delayed_claims(pod)
        except Exception:  # an odd pod: its binding says what is wrong with it; here it just counts
            return True

    def _bound(self, task: asyncio.Task[None]) -> None:
        self._binding -= 1
        self._start()

    async def carry_out(self) -> None:
        """Start what the core decided and wait until all of it, and the writes behind it, is done."""
        while True:
            await self.process()
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
            self.shim.client.connection_lost(repr(error))
            if self._wake is not None:
                self._wake()
        elif error is not None:
            log.error("carrying out a decision failed", allocationKey=key, error=repr(error))

    async def _carry_out(self, decision: Decision, before: asyncio.Task[None] | None) -> None:
        if before is not None:
            await asyncio.wait([before])  # the same pod's earlier decision first
        if isinstance(decision, Waiting):
            skipped = decision.state == Waiting.SKIPPED
            await self.on_pending(decision.allocationKey, decision.reason, skipped)
        elif isinstance(decision, si_pb2.Allocation):
            await self._bind(decision)
        elif isinstance(decision, si_pb2.AllocationRelease):
            if decision.terminationType == si_pb2.PREEMPTED_BY_SCHEDULER:
                await self._evict(decision)
            else:
                await self._gang_release(decision)
        else:
            await self._rejected(decision)

    async def _rejected(self, rejected: si_pb2.RejectedAllocation) -> None:
        shim = self.shim
        state = shim.state
        uid = rejected.allocationKey
        pod = state.ledger.pod(uid)
        if pod is None:
            return
        node = node_of(pod)
        if node and node not in state.nodes:
            # Running on a node the core does not know (yet: its event comes later, or it was refused):
            # sent again once the node is added.
            state.ledger.orphaned(uid, node)
        app_id = rejected.applicationID
        asked = state.ledger.is_asked(uid)
        if app_id not in state.apps and asked and not node and app_id not in shim.outbox.refused:
            # Its application completed in the core while the ask was on its way: add both again. (Not
            # one the core rejected: its asks come back refused with it, and its pods fail.)
            state.ledger.unasked(uid)
            await shim.add_pod(pod)
            await shim.outbox.flush()
            return
        if app_id in state.apps and asked and not node and _lacks_application(rejected.reason):
            # The application is live here, and the core read the ask before it (and could not hold
            # it), or knew only an older rejection of the ID: asked again once the core accepts it.
            state.ledger.unasked(uid)
            if shim.outbox.awaiting(app_id):
                state.ledger.ask_again_when_accepted(app_id, uid)
            else:
                await shim.add_pod(pod)
                await shim.outbox.flush()
            return
        await shim.kube.record_event(pod, "SchedulingRejected", rejected.reason, warning=True)

    async def _bind(self, alloc: si_pb2.Allocation) -> None:
        shim = self.shim
        state = shim.state
        uid = alloc.allocationKey
        pod = state.ledger.pod(uid)
        if pod is None or state.ledger.bound_by_us(uid) or node_of(pod):
            return  # a confirmation of a pod already running there: never bind twice
        if shim.volume_binder.volumes.delayed_claims(pod) and not await self._bind_volumes(alloc, pod):
            self.bindings["failed"] += 1  # its volumes could not be bound: the pod was not
            return
        state.ledger.binding(uid)  # before the API answers: its echo must not look like a stranger's
        try:
            await shim.kube.bind(pod, alloc.nodeID)
        except BindError as exc:
            # Asked again by the reconciliation, once the API may take it.
            self.bindings["failed"] += 1
            await self._not_bound(alloc, pod, f"binding to {alloc.nodeID} failed: {exc}")
            return
        self.bindings["bound"] += 1
        state.ledger.bound(uid)
        shim.pod_groups.bound(pod)  # a v1alpha2 PodGroup's status, once its minimum is bound
        await shim.kube.record_event(pod, "Scheduled", f"bound to {alloc.nodeID} by pykorn")

    async def _bind_volumes(self, alloc: si_pb2.Allocation, pod: Obj) -> bool:
        """kube-scheduler's PreBind: the pod's WaitForFirstConsumer claims bound on the chosen node
        (shim_k8s.volumes.binding). False when the pod is not to be bound: its allocation is given back,
        and the pod waits for its volumes to change (nothing could be done on that node) or is asked
        again (its binding failed or timed out; a claim provisioned for the node keeps it there)."""
        shim = self.shim
        uid = alloc.allocationKey
        node = shim.state.nodes.get(alloc.nodeID)
        if not shim.volume_binder.volumes.delayed_claims(pod):
            return True
        state = shim.state

        def still_wanted() -> bool:  # the pod still there, and the core that placed it
            return state.ledger.pod(uid) is not None and shim.client.lost is None

        try:
            if node is None:
                raise VolumeBindError(f"node {alloc.nodeID} is gone")
            await shim.volume_binder.bind(pod, node, shim.service.volume_bind_timeout, still_wanted)
            return True
        except PodGone:
            return False  # its deletion released it; or the core went, and the re-sync asks again
        except Exception as exc:  # a binding that failed, or could not be made: given back, never lost
            why = f"binding volumes on {alloc.nodeID} failed: {exc}"
            if not isinstance(exc, VolumeBindError):
                log.error(
                    "binding volumes failed", pod=uid, applicationID=alloc.applicationID, error=repr(exc)
                )
            await self._not_bound(alloc, pod, why)
            current = shim.state.ledger.pod(uid)
            if current is not None:
                await shim.volume_binding_failed(current, why, isinstance(exc, NothingToBindHere))
            return False

    async def _not_bound(self, alloc: si_pb2.Allocation, pod: Obj, reason: str) -> None:
        """The pod did not get to its node: the core must not count it there."""
        self.shim.state.ledger.not_bound(alloc.allocationKey)
        uid = alloc.allocationKey
        await self.shim.outbox.release(
            alloc.applicationID, uid, message=reason, partition=alloc.partitionName
        )
        await self.shim.kube.record_event(pod, "BindingFailed", reason, True)

    async def _evict(self, release: si_pb2.AllocationRelease) -> None:
        shim = self.shim
        pod = shim.state.ledger.pod(release.allocationKey)
        if pod is None:
            return
        await shim.kube.record_event(pod, "Preempted", release.message, warning=True)
        await shim.kube.evict(pod, release.message)

    async def _gang_release(self, release: si_pb2.AllocationRelease) -> None:
        """A placeholder the core replaced or gave up: delete its pod, and tell the core it is gone
        (with the same termination type) when it held room; or a real pod of a failed gang."""
        shim = self.shim
        state = shim.state
        uid = release.allocationKey
        pod = state.ledger.pod(uid)
        if pod is None:
            return
        if translate.is_placeholder(pod):
            # Still ours (bound by us: the echo of its binding may come yet, and must not look like
            # another scheduler's pod); its DELETED event then sends nothing more.
            held_room = state.ledger.placeholder_deleting(uid)
            try:
                await shim.kube.delete_pod(pod)
            except BaseException:
                state.ledger.deletion_failed(uid)  # still there: the reconciliation may see to it
                raise
            if held_room:
                await shim.outbox.release_many(
                    [(release.applicationID, uid)], release.terminationType, release.partitionName
                )
            return
        # A Hard gang failed: the core dropped this pod's ask; the pod fails, as YuniKorn's do.
        await self.fail_pod(
            pod, release.applicationID, GANG_TIMEOUT, f"{GANG_TIMEOUT_MESSAGE} ({release.message})"
        )

    # What the core says of applications and waiting asks, said on the pods ---------------------
    def application_changed(self, update: si_pb2.UpdatedApplication) -> None:
        """An application's new state: a failed one fails its pending pods (as YuniKorn's shim: reason
        ResourceReservationTimeout for a Hard gang that timed out); one the core forgot is forgotten
        here too, so its next pod adds it again; a gang's progress is said on its originator."""
        state = self.shim.state
        app_id, app_state = update.applicationID, update.state
        gang = state.gangs.get(app_id)
        if gang is not None:
            self.shim.gangs.progress(app_id, gang, app_state)
        if app_state in ("Failing", "Failed"):
            if GANG_TIMEOUT in update.message:  # the core's message is the reason
                reason, message = GANG_TIMEOUT, GANG_TIMEOUT_MESSAGE
            else:
                reason, message = "ApplicationFailed", update.message or f"application {app_id} failed"
            self.in_background(self.fail_application(app_id, reason, message))
        if app_state in _APPS_FORGOTTEN:
            state.apps.discard(app_id)
            state.gangs.pop(app_id, None)

    async def fail_application(self, app_id: str, reason: str, message: str) -> None:
        """The core will not schedule the application: each pending pod of it fails, as YuniKorn's shim
        fails them (phase Failed with the reason and message, an ApplicationFailed event)."""
        shim = self.shim
        ledger = shim.state.ledger
        for uid, pod in ledger.pods():
            if ledger.given_up(uid) or node_of(pod) or finished(pod) or translate.is_placeholder(pod):
                continue
            if (pod.get("spec") or {}).get("schedulerName") != shim.scheduler_name:
                continue
            try:
                of = ledger.asked_as(uid) or shim.app_id(pod)
            except Exception:
                continue
            if of == app_id:
                await self.fail_pod(pod, app_id, reason, message)

    async def fail_pod(self, pod: Obj, app_id: str, reason: str, message: str) -> None:
        """One pod the core will not schedule: failed (once), and nothing asked for it again."""
        state = self.shim.state
        uid = key_of(pod)
        if not state.ledger.gave_up(uid, f"{reason}:{message}"):
            return
        why = f"Application {app_id} scheduling failed, reason: {message}"
        await self.shim.kube.record_event(pod, "ApplicationFailed", why, warning=True)
        try:
            await self.shim.kube.fail_pod(pod, reason, message)
        except Exception as exc:  # the API would not take it: said, and the pod stays pending, not asked
            log.warning("failing a pod failed", pod=uid, applicationID=app_id, error=repr(exc))

    async def on_pending(self, uid: str, reason: str, skipped: bool) -> None:
        """The core says how an ask of ours waits, and why: the pod's PodScheduled condition says so,
        as YuniKorn's shim does. `Unschedulable` (the cluster autoscaler's signal) only when the pod fits
        its queue, limits and gang and no node has room; `SchedulingSkipped` when something of its own
        holds it (a queue's max, maxapplications, a limit, its gang's placeholders, its required
        node): more nodes would not help. A PodUnschedulable event when the kind changes. The API
        server sets the condition to True when the pod is bound."""
        ledger = self.shim.state.ledger
        pod = ledger.pod(uid)
        if pod is None or not ledger.is_asked(uid) or ledger.bound_by_us(uid) or node_of(pod):
            return
        condition = SKIPPED if skipped else UNSCHEDULABLE
        if not skipped:
            self.shim.pod_groups.waits(pod, reason)  # its PodGroup's status says so too
        before = ledger.condition(uid)
        if self.pod_scheduled_false(pod, uid, condition, reason) and not before.startswith(f"{condition}:"):
            name = (pod.get("metadata") or {}).get("name", uid)
            message = _WAITING_EVENT[condition] % name
            self.in_background(self.shim.kube.record_event(pod, "PodUnschedulable", message))

    def pod_scheduled_false(self, pod: Obj, uid: str, reason: str, message: str) -> bool:
        """The pod's PodScheduled=False condition with this reason and message, patched once per change
        (True: patched now)."""
        if not self.shim.state.ledger.said_condition(uid, f"{reason}:{message}"):
            return False
        self.in_background(self.shim.kube.set_unschedulable(pod, message, reason))
        return True
