"""The history's write path: the core's event log turned into history records on the event loop, and
a thread of its own writing them in batches, off the scheduling path.

- Reading: the event log hands the recorder every event as it is recorded (its tap: whatever the
  ring holds and whether event tracking is on), inside the engine's step, where it only keeps them;
  they are read in the loop's next turn. Each event becomes at most a small tuple; what an event does
  not carry (an application's queue, user and groups; an allocation's node and instance type) is read
  from the cluster's state at that moment. What can wait (digests, JSON, the rows' tuples) is left
  to the writer thread: the loop's share is under a microsecond per allocation.
- Holding: the records wait in a bounded buffer. When the database is slow or down, scheduling never
  waits: records are held up to `buffer_limit`, and beyond it the oldest are dropped, counted
  (`dropped`, the metric pykorn_history_records_dropped_total) and logged once per stretch of drops.
- Writing: the thread writes while the loop is idle (core.history.pacing), IDLE_BATCH records per
  transaction, and once the oldest record has waited DELAY, the buffer is half full or the core is
  stopping, BATCH per transaction whatever the loop does. A batch that fails stays in front and is
  tried again after a pause (doubling up to MAX_PAUSE), so writes resume where they stopped once the
  database is back. Every statement is idempotent
  (core.history.tables), so a batch written twice is harmless.
- Sampling: every `sample_every` seconds each queue's allocated and pending resources; and pruning:
  records older than the retention deleted, by the thread, once an hour.

Per allocation the event log holds several events (its node's, its user's, its application's); they
become one allocation row, and only the events that are not per allocation (applications' states,
nodes, queues, limits, configuration) are kept as event records.
"""

from __future__ import annotations

import asyncio
import threading
import time
from collections.abc import Callable, Sequence
from typing import Any

import structlog
from sqlalchemy.exc import DataError, IntegrityError

from core.events import ChangeDetail, ChangeType, EventType, RawEvent
from core.history.buffer import Buffer
from core.history.pacing import LoopActivity
from core.history.rows import ALLOC_RESIZED, ALLOC_STARTED, CONFIG_APPLIED, RAW_EVENT, Names, prepared
from core.history.store import TERMINAL, HistoryStore, Op, Record, encode
from core.objects.partition_key import PartitionKey
from core.off_loop import in_daemon_thread

log = structlog.get_logger("pykorn.history")

# Records per transaction: while the loop is idle a small batch, so that one begun just before the
# loop gets busy again is over soon (the writer gives way between two); when pressed (the oldest record
# has waited DELAY, or the buffer is half full) a large one.
IDLE_BATCH, BATCH = 100, 2_000
MAX_PAUSE = 30.0  # seconds between two attempts at a database that fails, at most
PRUNE_EVERY = 3600.0  # seconds
# Writing waits while the scheduler's loop is busy (core.history.pacing), until the oldest record held
# has waited DELAY seconds or the buffer is half full.
DELAY = 2.0
_APP = EventType.APP
# Per-allocation or per-ask details that are not records of their own (their facts are the allocation
# rows): skipped without a call.
_SKIPPED = frozenset({
    ChangeDetail.UG_USER_RESOURCE, ChangeDetail.UG_GROUP_RESOURCE, ChangeDetail.APP_REQUEST,
    ChangeDetail.REQUEST_CANCEL,
})  # fmt: skip
_NODE_ALLOC, _APP_ALLOC = ChangeDetail.NODE_ALLOC, ChangeDetail.APP_ALLOC

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


class HistoryRecorder:
    def __init__(
        self,
        store: HistoryStore,
        context: Any,  # core.scheduler.cluster.ClusterContext (its partitions and event log)
        clock: Callable[[], float] = time.time,
        buffer_limit: int = 200_000,
        sample_every: float = 60.0,
        retention: float = 30 * 86400.0,
        delay: float = DELAY,
    ) -> None:
        self.store = store
        self.context = context
        self.clock = clock
        self.buffer = Buffer(buffer_limit)
        self.delay = delay
        self.sample_every = sample_every
        self.retention = retention
        self.written = 0  # records written (the metrics)
        self.failures = 0  # batches the database refused or did not answer
        self.healthy = True  # the last batch was written
        self.unreadable = 0  # events that could not be turned into records (a fault of pykorn's)
        self.ready = False  # the schema is this pykorn's (migrated by the thread before it writes)
        self._migrated = threading.Event()  # ready, for a waiter on another thread
        self._log = context.events
        self._raw: list[RawEvent] = []  # events given by the log's tap, not read yet
        self._log.tap = self._take
        context.on_config_applied = self._config_applied
        self._loop: asyncio.AbstractEventLoop | None = None
        self._partition_of: dict[tuple[str, str], str] = {}  # (rmID, application) -> its partition
        # (rmID, application) -> (its partition, the application): its allocations' lookups, until it ends
        self._apps: dict[tuple[str, str], tuple[Names, Any]] = {}
        self._scheduled = False
        self._stop = threading.Event()
        self._thread = threading.Thread(target=self._write_loop, name="pykorn-history", daemon=True)
        self._sampler: asyncio.Task[None] | None = None
        self._activity: LoopActivity | None = None  # the loop's thread, seen from the writer (start())

    # Life ------------------------------------------------------------------------------------
    def start(self) -> None:
        self._loop = asyncio.get_running_loop()
        self._activity = LoopActivity(threading.get_ident())
        self._thread.start()
        self._sampler = asyncio.create_task(self._sample_loop())

    async def schema_ready(self, seconds: float) -> bool:
        """Wait up to `seconds` for the thread to bring the schema to this pykorn's (the core serves
        after, so its first work is not shared with a migration); whether it is."""
        return await in_daemon_thread(lambda: self._migrated.wait(seconds), name="pykorn-history-wait")

    def stop(self, seconds: float = 1.0) -> None:
        """Read what came, then give the thread `seconds` to write it."""
        self._log.tap = None
        self.context.on_config_applied = None
        if self._sampler is not None:
            self._sampler.cancel()
        self._drain()
        self._stop.set()
        self.buffer.wake()
        self._thread.join(seconds)
        if len(self.buffer):
            log.warning("history records not written at the stop", left=len(self.buffer))
        self.store.close()

    def _take(self, events: Sequence[RawEvent]) -> None:
        """The log's tap, inside an engine step: the events kept (a copy of the references), read in
        the loop's next turn, once."""
        self._raw.extend(events)
        if not self._scheduled and self._loop is not None:
            self._scheduled = True
            self._loop.call_soon(self._drain)

    def _config_applied(self, rm_id: str, change: str, before: str, after: str, who: str) -> None:
        """The cluster's hook: a configuration put in force (its diff made by the writer thread)."""
        self.buffer.put([(CONFIG_APPLIED, (rm_id, self.clock(), change, who, before, after))])

    # Reading the events ----------------------------------------------------------------------
    def _drain(self) -> None:
        """Every event taken since the last turn, into records. The ones repeated per ask or per
        allocation (most of them) are handled inline here, tested by identity in the order of how
        often they come: a call or a hash per event would be most of the cost. An allocation's record
        keeps what the loop must read now (the allocation, its application's names); its row is made
        by the writer thread."""
        self._scheduled = False
        raw, self._raw = self._raw, []
        ops: list[Record] = []
        append, record = ops.append, self._record
        add, change_set, app_request = ChangeType.ADD, ChangeType.SET, ChangeDetail.APP_REQUEST
        node_alloc, app_alloc, started, resized = _NODE_ALLOC, _APP_ALLOC, ALLOC_STARTED, ALLOC_RESIZED
        # This turn's applications by ID: their names and themselves (most allocations in a turn are
        # of few applications; an ID of two RMs is looked up again).
        seen: dict[str, tuple[Names, Any]] = {}
        for event in raw:
            detail = event[4]
            if detail is app_request or detail is node_alloc:  # the node comes from the allocation
                continue
            try:
                if detail is app_alloc:
                    change = event[3]
                    if event[1] is not _APP or (change is not add and change is not change_set):
                        continue
                    found = seen.get(event[2])
                    if found is None or found[0][0] != event[0]:
                        found = seen[event[2]] = self._names(event[0], event[2])
                    names, app = found
                    alloc = app.allocations.get(event[7]) if app is not None else None
                    node = alloc.node_id if alloc is not None else _node_in(raw, event[7])
                    kind = started if change is add else resized  # SET: resized in place
                    append((kind, (names, event, node, alloc.instance_type if alloc is not None else "")))
                    continue
                if detail in _SKIPPED:
                    continue
                record(event, ops)
            except Exception:  # one event that cannot be read is lost, never the others
                self.unreadable += 1
                log.exception("history could not record an event", event=repr(event)[:300])
        if ops:
            self.buffer.put(ops)

    def _record(self, event: RawEvent, ops: list[Record]) -> None:
        kind, detail = event[1], event[4]
        if kind is _APP:
            self._app_event(event, ops)
        if (kind, detail) not in _PER_ALLOCATION:
            ops.append((RAW_EVENT, event))  # its row made by the writer thread (a digest costs)

    def _app_event(self, event: RawEvent, ops: list[Record]) -> None:
        rm_id, app_id, change, detail, at = event[0], event[2], event[3], event[4], event[6]
        if change is ChangeType.REMOVE and detail in _ENDINGS:
            partition = self._partition(rm_id, app_id)
            ops.append(Op("alloc_end", (rm_id, partition, app_id, event[7], at, _ENDINGS[detail])))
            return
        if detail is ChangeDetail.APP_NEW:
            partition, app = self._find(rm_id, app_id)
            if app is None:  # refused at once (its APP_REJECT follows and writes its row), or gone
                return
            self._partition_of[rm_id, app_id] = partition
            queue, user = (app.queue.full_name, app.user) if app is not None else ("", "")
            groups = encode(list(app.groups)) if app is not None else "[]"
            tags = encode(dict(app.tags)) if app is not None else "{}"
            ops.append(Op("app_new", (rm_id, partition, app_id, queue, user, groups, tags, at)))
            return
        if change is ChangeType.REMOVE and detail is ChangeDetail.DETAILS_NONE:  # left its partition
            ops.append(Op("app_removed", (rm_id, self._partition(rm_id, app_id), app_id, at)))
            self._apps.pop((rm_id, app_id), None)
            self._partition_of.pop((rm_id, app_id), None)
            return
        partition = self._partition(rm_id, app_id)
        if detail is ChangeDetail.APP_REJECT:
            found = self._rejected(rm_id, app_id)
            if found is None:  # a second submission of a live ID: the live one stays as it is
                return
            partition = found.pop("partition")
            ops.append(Op("app_rejected", (
                rm_id, partition, app_id, found["queue"], found["user"], encode(found["groups"]),
                encode(found["tags"]), at, event[5],
            )))  # fmt: skip
        elif detail is ChangeDetail.APP_ACCEPTED:
            ops.append(Op("app_accepted", (rm_id, partition, app_id, at)))
        elif detail is ChangeDetail.APP_RUNNING:
            ops.append(Op("app_running", (rm_id, partition, app_id, at)))
        elif detail is ChangeDetail.APP_EXPIRED:
            self._partition_of.pop((rm_id, app_id), None)  # its final state and reason stay as they were
        elif detail in _STATES:
            state = _STATES[detail]
            if state in TERMINAL:
                reason = event[5] if state != "Completed" else None
                ops.append(Op("app_finished", (rm_id, partition, app_id, state, at, reason)))
                self._apps.pop((rm_id, app_id), None)
            else:
                ops.append(Op("app_state", (rm_id, partition, app_id, state)))

    def _partition(self, rm_id: str, app_id: str) -> str:
        return self._partition_of.get((rm_id, app_id)) or self._find(rm_id, app_id)[0]

    def _names(self, rm_id: str, app_id: str) -> tuple[Names, Any]:
        """An application's names for its allocations' rows (partition, queue, user), and the
        application (None when gone), kept until it ends."""
        found = self._apps.get((rm_id, app_id))
        if found is None:
            partition = self._partition(rm_id, app_id)
            part = self.context.partitions.get(PartitionKey(rm_id, partition))
            app = part.applications.get(app_id) if part is not None else None
            queue, user = (app.queue.full_name, app.user) if app is not None else ("", "")
            found = ((rm_id, partition, app_id, queue, user), app)
            if app is not None:
                self._apps[rm_id, app_id] = found
        return found

    def _find(self, rm_id: str, app_id: str) -> tuple[str, Any]:
        """The partition (of the RM's) holding the application, and the application; ("default", None)
        when none does."""
        for key, part in self.context.partitions.items():
            if key.rm_id == rm_id:
                app = part.applications.get(app_id)
                if app is not None:
                    return key.name, app
        return "default", None

    def _rejected(self, rm_id: str, app_id: str) -> dict[str, Any] | None:
        """What a refused application was submitted as; None when the ID is live (a duplicate refused)."""
        for key, part in self.context.partitions.items():
            if key.rm_id == rm_id and app_id in part.applications:
                return None
        for key, part in self.context.partitions.items():
            if key.rm_id == rm_id and app_id in part.rejected:
                found = part.rejected[app_id]
                return {
                    "partition": key.name, "queue": found.queue_name, "user": found.user,
                    "groups": list(found.groups), "tags": dict(found.tags),
                }  # fmt: skip
        return {"partition": "default", "queue": "", "user": "", "groups": [], "tags": {}}

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
                self._migrated.set()
            except Exception as exc:
                self.healthy = False
                log.warning("history database not reachable; records held", error=repr(exc)[:300])
                if self._stop.wait(pause):
                    return
                pause = min(MAX_PAUSE, pause * 2)
        pause = 0.5
        while not (self._stop.is_set() and not len(self.buffer)):
            self.buffer.wait(0.5)
            most = self._due() if len(self.buffer) else 0
            batch = self.buffer.take(most) if most else []
            if batch:
                try:
                    self.store.write(prepared(batch, self.store.last_config))
                except (DataError, IntegrityError) as exc:  # a record the database will never take
                    log.warning("history batch refused; written one by one", error=repr(exc)[:300])
                    self._write_each(batch)
                    continue
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

    def _due(self) -> int:
        """How many records to write now: BATCH when stopping, when the oldest record has waited
        `delay` or the buffer is half full; IDLE_BATCH when the loop is not busy (looking takes the
        activity's window); else none."""
        buffer = self.buffer
        if self._stop.is_set() or buffer.waited() >= self.delay or len(buffer) * 2 >= buffer.limit:
            return BATCH
        if self._activity is None or not self._activity.busy(self._stop):
            return IDLE_BATCH
        return 0

    def _write_each(self, batch: list[Record]) -> None:
        """A batch with a record the database refuses for what it holds: each record on its own, the
        refused ones dropped and counted (trying them again would stop every write after them)."""
        refused = 0
        for record in batch:
            try:
                self.store.write(prepared([record], self.store.last_config))
            except (DataError, IntegrityError) as exc:
                refused += 1
                log.warning("history record refused by the database; dropped", kind=record[0],
                            error=repr(exc)[:300])  # fmt: skip
        self.buffer.done(len(batch))
        self.buffer.dropped += refused  # after done(): these were written over, not pushed out
        self.written += len(batch) - refused

    def _prune(self) -> None:
        try:
            gone = self.store.prune(self.clock() - self.retention)
        except Exception as exc:
            log.warning("history pruning failed", error=repr(exc)[:300])
            return
        if gone:
            log.info("history pruned", records=gone, retention_days=round(self.retention / 86400, 2))


def _node_in(raw: Sequence[RawEvent], key: str) -> str:
    """The node of an allocation gone before its start was read: its NODE_ALLOC event's (rare: allocated
    and released in one step)."""
    for event in raw:
        if event[4] is _NODE_ALLOC and event[7] == key and event[3] is ChangeType.ADD:
            return event[2]
    return ""
