"""What the core decided, carried out against the Kubernetes API: an allocation becomes a binding, a
preemption an eviction plus an event, a placeholder the core replaced or gave up is deleted, a binding
that fails goes back to the core as a release with the reason.

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
from shim_k8s import translate
from shim_k8s.api.objects import Obj
from shim_k8s.shim_state import ShimState, node_of
from si.v1 import si_pb2

log = structlog.get_logger("pykorn.k8s")

# What the core decided, in arrival order: how an ask waits, bind an allocation, evict a victim, report
# a rejection.
Waiting = si_pb2.UpdateContainerSchedulingStateRequest
Decision = Waiting | si_pb2.Allocation | si_pb2.AllocationRelease | si_pb2.RejectedAllocation
# Releases the core decides that the shim carries out: preemptions (evict), and gang placeholders
# replaced or given up (delete), or a failed gang's real pods (an event).
CORE_RELEASES = frozenset({si_pb2.PREEMPTED_BY_SCHEDULER, si_pb2.PLACEHOLDER_REPLACED, si_pb2.TIMEOUT})


GANG_TIMEOUT = "ResourceReservationTimeout"  # YuniKorn's reason for a failed gang's pods
GANG_TIMEOUT_MESSAGE = "Scheduling has timed out due to insufficient resources"


class BindError(RuntimeError):
    pass


class KubeActions(Protocol):
    """What the shim asks of the Kubernetes API."""

    async def bind(self, pod: Obj, node: str) -> None: ...  # pods/binding; raises BindError

    async def evict(self, pod: Obj, reason: str) -> None: ...  # policy/v1 Eviction

    async def record_event(self, obj: Obj, reason: str, message: str, warning: bool = False) -> None: ...

    async def create_pod(self, pod: Obj) -> None: ...  # a placeholder pod

    async def delete_pod(self, pod: Obj) -> None: ...  # a placeholder the core released; gone already is fine

    # PodScheduled: False, with kube-scheduler's reason (Unschedulable, SchedulerError, SchedulingGated)
    async def set_unschedulable(self, pod: Obj, message: str, reason: str = "Unschedulable") -> None: ...

    async def fail_pod(self, pod: Obj, reason: str, message: str) -> None: ...  # phase Failed, as YuniKorn


class ShimBase(Protocol):
    """What every part of the shim (decisions, gangs, reconciliation) reads of it."""

    @property
    def state(self) -> ShimState: ...
    @property
    def kube(self) -> KubeActions: ...
    def in_background(self, work: Coroutine[Any, Any, None]) -> None: ...


class Shim(ShimBase, Protocol):
    """What of the shim carrying out a decision reads and calls."""

    @property
    def client(self) -> SchedulerClient: ...
    async def flush(self) -> None: ...
    async def add_pod(self, pod: Obj, with_placeholders: set[str] | None = None) -> None: ...
    async def on_pending(self, uid: str, reason: str, skipped: bool) -> None: ...
    async def fail_pod(self, pod: Obj, app_id: str, reason: str, message: str) -> None: ...


class Decisions:
    def __init__(self, shim: Shim, wake: Callable[[], None] | None = None) -> None:
        """`wake`: called when telling the core failed (it went away), so the main loop reconnects."""
        self.shim = shim
        self._wake = wake
        self.queue: deque[Decision] = deque()  # arrived, not started
        self._running: dict[str, asyncio.Task[None]] = {}  # per pod: its latest decision being carried out
        self._background: set[asyncio.Task[None]] = set()  # writes nothing waits for (status patches)

    def arrived(self, response: si_pb2.AllocationResponse) -> bool:
        """Queue what the core decided; whether there is anything to carry out. How asks wait goes
        first: it was so before the allocations of the same answer."""
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
        runs as a task; a pod's next decision waits for its previous one."""
        while self.queue:
            decision = self.queue.popleft()
            key = decision.allocationKey
            task = asyncio.create_task(self._carry_out(decision, self._running.get(key)))
            self._running[key] = task
            task.add_done_callback(partial(self._carried_out, key))

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
            await self.shim.on_pending(decision.allocationKey, decision.reason, skipped)
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
        pod = state.pods.get(uid)
        if pod is None:
            return
        node = node_of(pod)
        if node and node not in state.nodes:
            # Running on a node the core does not know (yet: its event comes later, or it was refused):
            # sent again once the node is added.
            state.orphans.setdefault(node, set()).add(uid)
        if rejected.applicationID not in state.apps and uid in state.asked and not node:
            # Its application completed in the core while the ask was on its way: add both again.
            state.asked.pop(uid, None)
            await shim.add_pod(pod)
            await shim.flush()
            return
        await shim.kube.record_event(pod, "SchedulingRejected", rejected.reason, warning=True)

    async def _bind(self, alloc: si_pb2.Allocation) -> None:
        shim = self.shim
        state = shim.state
        uid = alloc.allocationKey
        pod = state.pods.get(uid)
        if pod is None or uid in state.bound_by_us or node_of(pod):
            return  # a confirmation of a pod already running there: never bind twice
        state.bound_by_us.add(uid)  # before the API answers: its echo must not look like a stranger's
        try:
            await shim.kube.bind(pod, alloc.nodeID)
        except BindError as exc:
            # The core must not count a pod that never got there.
            state.bound_by_us.discard(uid)
            state.asked.pop(uid, None)  # asked again by the reconciliation, once the API may take it
            state.placed.pop(uid, None)
            reason = f"binding to {alloc.nodeID} failed: {exc}"
            await shim.flush()
            await shim.client.release(alloc.applicationID, uid, message=reason)
            await shim.kube.record_event(pod, "BindingFailed", reason, True)
            return
        state.asked.pop(uid, None)
        await shim.kube.record_event(pod, "Scheduled", f"bound to {alloc.nodeID} by pykorn")

    async def _evict(self, release: si_pb2.AllocationRelease) -> None:
        shim = self.shim
        pod = shim.state.pods.get(release.allocationKey)
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
        pod = state.pods.get(uid)
        if pod is None:
            return
        if translate.is_placeholder(pod):
            held_room = uid in state.bound_by_us
            state.asked.pop(uid, None)
            # Still ours (not bound_by_us dropped: the echo of its binding may come yet, and must not
            # look like another scheduler's pod); its DELETED event then sends nothing more.
            state.deleting.add(uid)
            try:
                await shim.kube.delete_pod(pod)
            except BaseException:
                state.deleting.discard(uid)  # still there: the reconciliation may see to it
                raise
            if held_room:
                await shim.flush()
                await shim.client.release_many(
                    [(release.applicationID, uid)], termination=release.terminationType
                )
            return
        # A Hard gang failed: the core dropped this pod's ask; the pod fails, as YuniKorn's do.
        await shim.fail_pod(
            pod, release.applicationID, GANG_TIMEOUT, f"{GANG_TIMEOUT_MESSAGE} ({release.message})"
        )
