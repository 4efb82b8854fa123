"""The history's recording, on the event loop: the core's event log turned into history records for
the writer thread (core.history.writer), off the scheduling path.

- Reading: the event log hands the recorder every event as it is recorded (its tap: whatever the
  ring holds and whether event tracking is on), inside the engine's step, where it only keeps them;
  they are read in the loop's next turn. Each event becomes at most a small tuple; what an event does
  not carry (an application's queue, user and groups; an allocation's node and instance type) is read
  from the cluster's state at that moment. What can wait (digests, JSON, the rows' tuples, the
  configuration diffs) is left to the writer thread: the loop's share is under a microsecond per
  allocation.
- Holding: the records wait in a bounded buffer (core.history.buffer). When the database is slow or
  down, scheduling never waits: records are held up to `buffer_limit`, and beyond it the oldest are
  dropped, counted (the metric pykorn_history_records_dropped_total) and logged once per stretch.
- Sampling: every `sample_every` seconds each queue's allocated and pending resources.
- Configuration changes: the cluster's hook hands over each configuration put in force.

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

from core.events import ChangeDetail, ChangeType, EventType, RawEvent
from core.history.buffer import Buffer
from core.history.rows import ALLOC_RESIZED, ALLOC_STARTED, CONFIG_APPLIED, RAW_EVENT, Names
from core.history.store import TERMINAL, HistoryStore, Op, Record, encode
from core.history.writer import HistoryWriter
from core.objects.partition_key import PartitionKey
from core.off_loop import in_daemon_thread

log = structlog.get_logger("pykorn.history")

# Writing waits while the scheduler's loop is busy (core.history.writer), until the oldest record held
# has waited DELAY seconds or the buffer is half full.
DELAY = 2.0
# Seconds after an RM registers before the rows it did not send again are closed (core.history.reconcile):
# long enough for it to have sent its applications and allocations again.
SETTLE = 120.0
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
        self.writer = HistoryWriter(store, self.buffer, clock, retention, delay)
        self.sample_every = sample_every
        self.unreadable = 0  # events that could not be turned into records (a fault of pykorn's)
        self._log = context.events
        self._raw: list[RawEvent] = []  # events given by the log's tap, not read yet
        self._log.tap = self._take
        context.on_config_applied = self._config_applied
        self._loop: asyncio.AbstractEventLoop | None = None
        self._partition_of: dict[tuple[str, str], str] = {}  # (rmID, application) -> its partition
        # (rmID, application) -> (its partition, the application): its allocations' lookups, until it ends
        self._apps: dict[tuple[str, str], tuple[Names, Any]] = {}
        self._scheduled = False
        self._sampler: asyncio.Task[None] | None = None
        self.settle = SETTLE
        # By rmID: its reconciliation, due a while after its last registration (a new registration
        # replaces it: the state the RM sends again is the new registration's).
        self._settling: dict[str, asyncio.TimerHandle] = {}

    # Life ------------------------------------------------------------------------------------
    @property
    def written(self) -> int:
        return self.writer.written

    @property
    def healthy(self) -> bool:
        return self.writer.healthy

    def start(self) -> None:
        """On the event loop: the loop's thread is the one the writer gives way to."""
        self._loop = asyncio.get_running_loop()
        self.writer.start(threading.get_ident())
        self._sampler = asyncio.create_task(self._sample_loop())

    async def schema_ready(self, seconds: float) -> bool:
        """Wait up to `seconds` for the writer to bring the schema to this pykorn's (the core serves
        after, so its first work is not shared with a migration); whether it is."""
        migrated = self.writer.migrated
        return await in_daemon_thread(lambda: migrated.wait(seconds), name="pykorn-history-wait")

    def stopping(self) -> None:
        """The core's stop began: the writer writes what is held at full speed from now on."""
        self.writer.stopping()

    async def stop(self, seconds: float) -> None:
        """On the event loop: what came read, then the writer given up to `seconds` to write it."""
        self._log.tap = None
        self.context.on_config_applied = None
        if self._sampler is not None:
            self._sampler.cancel()
        for handle in self._settling.values():
            handle.cancel()
        self._drain()
        writer = self.writer
        await in_daemon_thread(lambda: writer.stop(seconds), name="pykorn-history-stop")

    def _take(self, events: Sequence[RawEvent]) -> None:
        """The log's tap, inside an engine step: the events kept (a copy of the references), read in
        the loop's next turn, once."""
        self._raw.extend(events)
        if not self._scheduled and self._loop is not None:
            self._scheduled = True
            self._loop.call_soon(self._drain)

    def _config_applied(self, rm_id: str, change: str, before: str, after: str, who: str) -> None:
        """The cluster's hook: a configuration put in force (its diff made by the writer thread). A
        registration: once the RM has had time to send its state again, what it did not send is
        closed in the history (core.history.reconcile)."""
        at = self.clock()
        self.buffer.put([(CONFIG_APPLIED, (rm_id, at, change, who, before, after))])
        if change == "registered" and self._loop is not None:
            earlier = self._settling.pop(rm_id, None)
            if earlier is not None:
                earlier.cancel()
            self._settling[rm_id] = self._loop.call_later(self.settle, self.reconcile, rm_id, at)

    def reconcile(self, rm_id: str, registered_at: float) -> None:
        """What the core holds of the RM now, for the writer to close the rows open since before
        `registered_at` that it does not hold. The events not read yet are read first: an end still
        among them goes before the snapshot that no longer holds its allocation."""
        self._settling.pop(rm_id, None)
        self._drain()
        live_allocations: set[tuple[str, str, str]] = set()
        live_apps: set[tuple[str, str]] = set()
        for key, part in self.context.partitions.items():
            if key.rm_id == rm_id:
                for app_id, app in part.applications.items():
                    live_apps.add((key.name, app_id))
                    live_allocations.update((key.name, app_id, k) for k in app.allocations)
        self.buffer.put([("reconcile", (rm_id, registered_at, live_allocations, live_apps))])

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
        nodes: dict[str, str] | None = None  # allocation key -> node, from the turn's NODE_ALLOC events
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
                    if alloc is not None:
                        node = alloc.node_id
                    else:  # gone already: its node from its NODE_ALLOC event (one pass a turn)
                        nodes = _nodes_in(raw) if nodes is None else nodes
                        node = nodes.get(event[7], "")
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
            queue, user = app.queue.full_name, app.user
            groups, tags = encode(list(app.groups)), encode(dict(app.tags))
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


def _nodes_in(raw: Sequence[RawEvent]) -> dict[str, str]:
    """Each allocation placed in the turn, by key: its node (from its NODE_ALLOC event). Read only for
    an allocation gone before its start was read (allocated and released in one step)."""
    nodes: dict[str, str] = {}
    for e in raw:
        if e[4] is _NODE_ALLOC and e[3] is ChangeType.ADD:
            nodes.setdefault(e[7], e[2])  # the first placement of the key in the turn, as it was read
    return nodes
