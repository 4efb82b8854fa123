"""The history's write path: the core's event log turned into history records on the event loop, and
a thread of its own writing them in batches, off the scheduling path.

- Reading: the recorder follows the event log (core.events) the way the REST API's event stream does,
  woken by the log after each engine step and reading in the loop's next turn. Each event becomes at
  most a few small tuples; what an event does not carry (an application's queue, user and groups; an
  allocation's node and instance type) is read from the cluster's state at that moment.
- Holding: the records wait in a bounded buffer. When the database is slow or down, scheduling never
  waits: records are held up to `buffer_limit`, and beyond it the oldest are dropped, counted
  (`dropped`, the metric pykorn_history_records_dropped_total) and logged once per stretch of drops.
- Writing: the thread takes what is buffered in batches of up to BATCH, one transaction each; a batch
  that fails stays in front and is tried again after a pause (doubling up to MAX_PAUSE), so writes
  resume where they stopped once the database is back. Every statement is idempotent
  (core.history.tables), so a batch written twice is harmless.
- Sampling: every `sample_every` seconds each queue's allocated and pending resources; and pruning:
  records older than the retention deleted, by the thread, once an hour.

Per allocation the event log holds several events (its node's, its user's, its application's); they
become one allocation row, and only the events that are not per allocation (applications' states,
nodes, queues, limits, configuration) are kept as event records.
"""

from __future__ import annotations

import asyncio
import hashlib
import threading
import time
from collections import deque
from collections.abc import Callable
from itertools import islice
from typing import Any

import structlog

from core.events import ChangeDetail, ChangeType, Event, EventType
from core.history.store import TERMINAL, HistoryStore, Op
from core.objects.partition_key import PartitionKey

log = structlog.get_logger("pykorn.history")

BATCH = 2_000  # records per transaction
MAX_PAUSE = 30.0  # seconds between two attempts at a database that fails, at most
PRUNE_EVERY = 3600.0  # seconds
READ_AT_ONCE = 4096  # events taken from the log per look

# Events recorded once per pod or per allocation: their facts go into allocation rows.
_PER_ALLOCATION = frozenset({
    (EventType.NODE, ChangeDetail.NODE_ALLOC),
    (EventType.USERGROUP, ChangeDetail.UG_USER_RESOURCE),
    (EventType.USERGROUP, ChangeDetail.UG_GROUP_RESOURCE),
    (EventType.APP, ChangeDetail.APP_ALLOC),
    (EventType.APP, ChangeDetail.APP_REQUEST),
    (EventType.APP, ChangeDetail.REQUEST_CANCEL),
    (EventType.APP, ChangeDetail.ALLOC_CANCEL),
    (EventType.APP, ChangeDetail.ALLOC_PREEMPT),
    (EventType.APP, ChangeDetail.ALLOC_TIMEOUT),
    (EventType.APP, ChangeDetail.ALLOC_REPLACED),
    (EventType.APP, ChangeDetail.ALLOC_NODEREMOVED),
})  # fmt: skip
_STATES = {
    ChangeDetail.APP_ACCEPTED: "Accepted",
    ChangeDetail.APP_RUNNING: "Running",
    ChangeDetail.APP_COMPLETING: "Completing",
    ChangeDetail.APP_COMPLETED: "Completed",
    ChangeDetail.APP_FAILING: "Failing",
    ChangeDetail.APP_FAILED: "Failed",
    ChangeDetail.APP_RESUMING: "Resuming",
    ChangeDetail.APP_EXPIRED: "Expired",
    ChangeDetail.APP_REJECT: "Rejected",
}
# How an allocation ended, by its APP REMOVE event's detail.
_ENDINGS = {
    ChangeDetail.ALLOC_CANCEL: "STOPPED",
    ChangeDetail.ALLOC_PREEMPT: "PREEMPTED",
    ChangeDetail.ALLOC_TIMEOUT: "TIMEOUT",
    ChangeDetail.ALLOC_REPLACED: "PLACEHOLDER_REPLACED",
    ChangeDetail.ALLOC_NODEREMOVED: "NODE_REMOVED",
}


class Buffer:
    """Records between the loop and the writer thread: bounded, oldest dropped first when full."""

    def __init__(self, limit: int) -> None:
        self.limit = limit
        self._records: deque[Op] = deque()
        self._ready = threading.Condition()
        self.dropped = 0
        self._dropping = False  # within a stretch of drops (logged once per stretch)

    def put(self, ops: list[Op]) -> None:
        with self._ready:
            records = self._records
            records.extend(ops)
            over = len(records) - self.limit
            if over > 0:
                for _ in range(over):
                    records.popleft()
                self.dropped += over
                if not self._dropping:
                    self._dropping = True
                    log.warning("history records dropped: the database is behind", held=self.limit)
            elif self._dropping and len(records) < self.limit // 2:
                self._dropping = False
            self._ready.notify()

    def take(self, most: int, wait: float) -> list[Op]:
        """Up to `most` records from the front, left in place (`done` removes them once written); waits
        up to `wait` seconds for any."""
        with self._ready:
            if not self._records:
                self._ready.wait(wait)
            return list(islice(self._records, most))

    def done(self, count: int) -> None:
        with self._ready:
            for _ in range(min(count, len(self._records))):
                self._records.popleft()

    def __len__(self) -> int:
        return len(self._records)


class HistoryRecorder:
    def __init__(
        self,
        store: HistoryStore,
        context: Any,  # core.scheduler.cluster.ClusterContext (its partitions and event log)
        clock: Callable[[], float] = time.time,
        buffer_limit: int = 200_000,
        sample_every: float = 60.0,
        retention: float = 30 * 86400.0,
    ) -> None:
        self.store = store
        self.context = context
        self.clock = clock
        self.buffer = Buffer(buffer_limit)
        self.sample_every = sample_every
        self.retention = retention
        self.written = 0  # records written (the metrics)
        self.failures = 0  # batches the database refused or did not answer
        self.healthy = True  # the last batch was written
        self.ready = False  # the schema is this pykorn's (migrated by the thread before it writes)
        self._log = context.events
        self._cursor = self._log.highest_id + 1
        self._partition_of: dict[tuple[str, str], str] = {}  # (rmID, application) -> its partition
        self._node_of: dict[str, str] = {}  # allocation key -> node, from its NODE_ALLOC event
        self._scheduled = False
        self._stop = threading.Event()
        self._thread = threading.Thread(target=self._write_loop, name="pykorn-history", daemon=True)
        self._sampler: asyncio.Task[None] | None = None
        self._unsubscribe: Callable[[], None] | None = None

    # Life ------------------------------------------------------------------------------------
    def start(self) -> None:
        loop = asyncio.get_running_loop()
        self._unsubscribe = self._log.subscribe(lambda _newest: self._wake(loop))
        self._thread.start()
        self._sampler = asyncio.create_task(self._sample_loop())

    def stop(self, seconds: float = 1.0) -> None:
        """Read what the log holds, then give the thread `seconds` to write it."""
        if self._unsubscribe is not None:
            self._unsubscribe()
        if self._sampler is not None:
            self._sampler.cancel()
        self._drain()
        self._stop.set()
        with self.buffer._ready:
            self.buffer._ready.notify()
        self._thread.join(seconds)
        if len(self.buffer):
            log.warning("history records not written at the stop", left=len(self.buffer))
        self.store.close()

    def _wake(self, loop: asyncio.AbstractEventLoop) -> None:
        """Called by the log inside an engine step: read in the loop's next turn, once."""
        if not self._scheduled:
            self._scheduled = True
            loop.call_soon(self._drain)

    # Reading the log -------------------------------------------------------------------------
    def _drain(self) -> None:
        self._scheduled = False
        log_ = self._log
        if self._cursor < log_.lowest_id:  # the ring dropped events before they were read
            missed = log_.lowest_id - self._cursor
            self.buffer.dropped += missed
            log.warning("history missed events the log no longer held", missed=missed)
            self._cursor = log_.lowest_id
        ops: list[Op] = []
        while True:
            batch = log_.since(self._cursor, READ_AT_ONCE)
            if not batch:
                break
            for _, event in batch:
                self._record(event, ops)
            self._cursor = batch[-1][0] + 1
        if ops:
            self.buffer.put(ops)

    def _record(self, event: Event, ops: list[Op]) -> None:
        kind, detail = event.type, event.change_detail
        if kind is EventType.NODE:
            if detail is ChangeDetail.NODE_ALLOC:
                if event.change_type is ChangeType.ADD:
                    self._node_of[event.reference_id] = event.object_id
                return
        elif kind is EventType.APP:
            self._app_event(event, ops)
        if (kind, detail) not in _PER_ALLOCATION:
            ops.append(Op("event", _event_row(event)))

    def _app_event(self, event: Event, ops: list[Op]) -> None:
        rm_id, app_id, detail, at = event.rm_id, event.object_id, event.change_detail, event.time
        change = event.change_type
        if detail is ChangeDetail.APP_NEW:
            partition, app = self._find(rm_id, app_id)
            self._partition_of[rm_id, app_id] = partition
            ops.append(Op("app_new", {
                "rm_id": rm_id, "partition": partition, "app_id": app_id, "at": at,
                "queue": app.queue.full_name if app else "", "user": app.user if app else "",
                "groups": list(app.groups) if app else [], "tags": dict(app.tags) if app else {},
            }))  # fmt: skip
            return
        partition = self._partition_of.get((rm_id, app_id)) or self._find(rm_id, app_id)[0]
        key = {"rm_id": rm_id, "partition": partition, "app_id": app_id}
        if detail is ChangeDetail.APP_ALLOC and change is ChangeType.ADD:
            ops.append(Op("alloc_start", self._allocation(key, event)))
        elif change is ChangeType.REMOVE and detail in _ENDINGS:
            self._node_of.pop(event.reference_id, None)
            ops.append(Op("alloc_end", {
                **key, "allocation_key": event.reference_id, "at": at, "termination": _ENDINGS[detail],
            }))  # fmt: skip
        elif detail is ChangeDetail.APP_REJECT:
            rejected = self._rejected(rm_id, app_id)
            ops.append(Op("app_rejected", {**key, **rejected, "at": at, "reason": event.message}))
            ops.append(Op("app_finished", {**key, "state": "Rejected", "at": at, "reason": event.message}))
        elif detail is ChangeDetail.APP_ACCEPTED:
            ops.append(Op("app_accepted", {**key, "at": at}))
        elif detail is ChangeDetail.APP_RUNNING:
            ops.append(Op("app_running", {**key, "at": at}))
        elif detail in _STATES:
            state = _STATES[detail]
            if state in TERMINAL:
                reason = event.message if state != "Completed" else None
                ops.append(Op("app_finished", {**key, "state": state, "at": at, "reason": reason}))
                if state == "Expired":
                    self._partition_of.pop((rm_id, app_id), None)
            else:
                ops.append(Op("app_state", {**key, "state": state}))

    def _allocation(self, key: dict[str, str], event: Event) -> dict[str, Any]:
        """An allocation's start: its node and instance type from the cluster (or, gone already, from
        its node's event), its application's queue and user."""
        node = self._node_of.pop(event.reference_id, "")
        queue = user = instance_type = ""
        part = self.context.partitions.get(PartitionKey(key["rm_id"], key["partition"]))
        app = part.applications.get(key["app_id"]) if part is not None else None
        if app is not None:
            queue, user = app.queue.full_name, app.user
            alloc = app.allocations.get(event.reference_id)
            if alloc is not None:
                node, instance_type = alloc.node_id or node, alloc.instance_type
        return {
            **key, "allocation_key": event.reference_id, "at": event.time, "queue": queue, "user": user,
            "node": node, "instance_type": instance_type, "resources": dict(event.resource),
        }  # fmt: skip

    def _find(self, rm_id: str, app_id: str) -> tuple[str, Any]:
        """The partition (of the RM's) holding the application, and the application; ("default", None)
        when none does."""
        for key, part in self.context.partitions.items():
            if key.rm_id == rm_id:
                app = part.applications.get(app_id)
                if app is not None:
                    return key.name, app
        return "default", None

    def _rejected(self, rm_id: str, app_id: str) -> dict[str, Any]:
        for key, part in self.context.partitions.items():
            if key.rm_id == rm_id and app_id in part.rejected:
                found = part.rejected[app_id]
                return {
                    "partition": key.name, "queue": found.queue_name, "user": found.user,
                    "groups": list(found.groups), "tags": dict(found.tags),
                }  # fmt: skip
        return {"queue": "", "user": "", "groups": [], "tags": {}}

    # Sampling --------------------------------------------------------------------------------
    async def _sample_loop(self) -> None:
        while True:
            await asyncio.sleep(self.sample_every)
            self.sample()

    def sample(self) -> None:
        """Each queue's allocated and pending resources now, one record each."""
        now = self.clock()
        ops = [
            Op(
                "queue_sample",
                {
                    "rm_id": key.rm_id,
                    "partition": key.name,
                    "queue": queue.full_name,
                    "at": now,
                    "allocated": queue.allocated.as_dict(),
                    "pending": queue.pending.as_dict(),
                },
            )
            for key, part in list(self.context.partitions.items())
            for queue in part.tree
        ]
        if ops:
            self.buffer.put(ops)

    # Writing (the thread) --------------------------------------------------------------------
    def _write_loop(self) -> None:
        pause = 0.5
        pruned_at = 0.0
        while not self.ready:  # the schema first: a database down at the start is waited for
            try:
                self.store.migrate()
                self.ready = True
            except Exception as exc:
                log.warning("history database not reachable; records held", error=repr(exc)[:300])
                if self._stop.wait(pause):
                    return
                pause = min(MAX_PAUSE, pause * 2)
        pause = 0.5
        while not (self._stop.is_set() and not len(self.buffer)):
            batch = self.buffer.take(BATCH, wait=0.5)
            if batch:
                try:
                    self.store.write(batch)
                except Exception as exc:  # the database refused or did not answer: held, tried again
                    self.failures += 1
                    if self.healthy:
                        log.warning("history database write failed; records held", error=repr(exc)[:300])
                    self.healthy = False
                    if self._stop.wait(pause):
                        return  # stopping: what is held is said at the stop
                    pause = min(MAX_PAUSE, pause * 2)
                    continue
                if not self.healthy:
                    log.info("history database writes resumed", held=len(self.buffer))
                self.healthy, pause = True, 0.5
                self.buffer.done(len(batch))
                self.written += len(batch)
            if self.retention > 0 and time.monotonic() - pruned_at > PRUNE_EVERY:
                pruned_at = time.monotonic()
                self._prune()

    def _prune(self) -> None:
        try:
            gone = self.store.prune(self.clock() - self.retention)
        except Exception as exc:
            log.warning("history pruning failed", error=repr(exc)[:300])
            return
        if gone:
            log.info("history pruned", records=gone, retention_days=round(self.retention / 86400, 2))


def _event_row(event: Event) -> dict[str, Any]:
    fields = (
        f"{event.rm_id}\x1f{event.type}\x1f{event.object_id}\x1f{event.change_type}\x1f{event.change_detail}"
        f"\x1f{event.message}\x1f{event.time!r}\x1f{event.reference_id}"
    )
    return {
        "digest": hashlib.sha1(fields.encode(), usedforsecurity=False).hexdigest(),
        "at": event.time, "rm_id": event.rm_id, "type": str(event.type), "object_id": event.object_id,
        "change_type": str(event.change_type), "change_detail": str(event.change_detail),
        "message": event.message, "reference_id": event.reference_id, "resource": dict(event.resource),
    }  # fmt: skip
