"""Scheduler events in the shape of si's EventRecord, kept in a bounded ring for the REST API and the
event stream to serve. Free of transport types: rmproxy or the REST layer turns them into EventRecords.

Several events are recorded for every allocation made and released (as YuniKorn records them: on the
application, the node, the user and the group), so the scheduling path records each as a plain tuple
in Event's field order (`RawEvent`, a fifth of an Event's cost to make) and the ring keeps it so; a
reader gets Events (`as_event`).
"""

from __future__ import annotations

import asyncio
from collections import deque
from collections.abc import Callable, Iterator, Mapping, Sequence
from enum import StrEnum
from itertools import islice
from types import MappingProxyType
from typing import NamedTuple

DEFAULT_CAPACITY = 10_000


class EventType(StrEnum):
    """si EventRecord.Type, by name (UNKNOWN_EVENTRECORD_TYPE is never recorded)."""

    REQUEST = "REQUEST"
    APP = "APP"
    NODE = "NODE"
    QUEUE = "QUEUE"
    USERGROUP = "USERGROUP"


class ChangeType(StrEnum):
    """si EventRecord.ChangeType, by name."""

    NONE = "NONE"
    SET = "SET"
    ADD = "ADD"
    REMOVE = "REMOVE"


class ChangeDetail(StrEnum):
    """si EventRecord.ChangeDetail, by name: every value the interface defines (a unit test holds the
    two together), whether or not pykorn records it yet."""

    DETAILS_NONE = "DETAILS_NONE"
    REQUEST_CANCEL = "REQUEST_CANCEL"
    REQUEST_ALLOC = "REQUEST_ALLOC"
    REQUEST_TIMEOUT = "REQUEST_TIMEOUT"
    APP_ALLOC = "APP_ALLOC"
    APP_REQUEST = "APP_REQUEST"
    APP_REJECT = "APP_REJECT"
    APP_NEW = "APP_NEW"
    APP_ACCEPTED = "APP_ACCEPTED"
    APP_RUNNING = "APP_RUNNING"
    APP_COMPLETING = "APP_COMPLETING"
    APP_COMPLETED = "APP_COMPLETED"
    APP_FAILING = "APP_FAILING"
    APP_FAILED = "APP_FAILED"
    APP_RESUMING = "APP_RESUMING"
    APP_EXPIRED = "APP_EXPIRED"
    APP_CANNOTRUN_QUEUE = "APP_CANNOTRUN_QUEUE"
    APP_RUNNABLE_QUEUE = "APP_RUNNABLE_QUEUE"
    APP_CANNOTRUN_QUOTA = "APP_CANNOTRUN_QUOTA"
    APP_RUNNABLE_QUOTA = "APP_RUNNABLE_QUOTA"
    NODE_DECOMISSION = "NODE_DECOMISSION"
    NODE_SCHEDULABLE = "NODE_SCHEDULABLE"
    NODE_ALLOC = "NODE_ALLOC"
    NODE_CAPACITY = "NODE_CAPACITY"
    NODE_OCCUPIED = "NODE_OCCUPIED"
    NODE_RESERVATION = "NODE_RESERVATION"
    QUEUE_CONFIG = "QUEUE_CONFIG"
    QUEUE_DYNAMIC = "QUEUE_DYNAMIC"
    QUEUE_TYPE = "QUEUE_TYPE"
    QUEUE_MAX = "QUEUE_MAX"
    QUEUE_GUARANTEED = "QUEUE_GUARANTEED"
    QUEUE_APP = "QUEUE_APP"
    QUEUE_ALLOC = "QUEUE_ALLOC"
    QUEUE_PREEMPTION = "QUEUE_PREEMPTION"
    ALLOC_CANCEL = "ALLOC_CANCEL"
    ALLOC_PREEMPT = "ALLOC_PREEMPT"
    ALLOC_TIMEOUT = "ALLOC_TIMEOUT"
    ALLOC_REPLACED = "ALLOC_REPLACED"
    ALLOC_NODEREMOVED = "ALLOC_NODEREMOVED"
    UG_USER_LIMIT = "UG_USER_LIMIT"
    UG_GROUP_LIMIT = "UG_GROUP_LIMIT"
    UG_APP_LINK = "UG_APP_LINK"
    UG_USER_RESOURCE = "UG_USER_RESOURCE"
    UG_GROUP_RESOURCE = "UG_GROUP_RESOURCE"


NO_RESOURCE: Mapping[str, int] = MappingProxyType({})


class Event(NamedTuple):
    rm_id: str
    type: EventType
    object_id: str
    change_type: ChangeType
    change_detail: ChangeDetail
    message: str
    time: float
    reference_id: str = ""
    resource: Mapping[str, int] = NO_RESOURCE  # never changed once recorded (a Resource is immutable)


# An event as the scheduling path records it: Event's fields, in order, in a plain tuple.
RawEvent = tuple[str, EventType, str, ChangeType, ChangeDetail, str, float, str, Mapping[str, int]]


def as_event(raw: RawEvent) -> Event:
    return raw if type(raw) is Event else Event._make(raw)


Listener = Callable[[int], None]  # called with the newest event's number after events are added


class EventLog:
    """The most recent events, oldest dropped first, each numbered in order of arrival from 0.

    The numbers let a reader page through the ring (`since`) and notice what fell out of it: the
    lowest number still held rises as the ring drops old events.
    """

    def __init__(self, capacity: int = DEFAULT_CAPACITY) -> None:
        self._events: deque[RawEvent] = deque(maxlen=capacity)
        self._next_id = 0  # the oldest held is numbered _next_id - len(_events)
        self._listeners: list[Listener] = []
        # YuniKorn's event.trackingEnabled: while off, nothing is recorded (events are dropped unnumbered).
        self.tracking = True
        # Given every event as it comes, whatever the ring holds and tracking is (the history database:
        # a ring of 10,000 can drop a busy slice's events before the loop's next turn reads them).
        self.tap: Callable[[Sequence[RawEvent]], None] | None = None

    def add(self, event: RawEvent) -> int:
        """Record `event`; its number, or -1 while tracking is off."""
        if not self.tracking:
            if self.tap is not None:
                self.tap((event,))
            return -1
        self.extend((event,))
        return self._next_id - 1

    def extend(self, events: Sequence[RawEvent]) -> None:
        """Record `events` in order (nothing while tracking is off)."""
        if self.tap is not None and events:
            self.tap(events)
        if not self.tracking or not events:
            return
        self._events.extend(events)  # the ring's maxlen drops the oldest
        self._next_id += len(events)
        if self._listeners:
            for listener in list(self._listeners):
                listener(self._next_id - 1)

    def subscribe(self, listener: Listener) -> Callable[[], None]:
        """Call `listener` with the newest event's number whenever events are added from now on; the
        returned function unsubscribes. Listeners run inside the engine's step, so they must only
        hand the news on (wake a reader)."""
        self._listeners.append(listener)
        return lambda: self._listeners.remove(listener) if listener in self._listeners else None

    @property
    def lowest_id(self) -> int:
        """The number of the oldest event held (the next one's number when the ring is empty)."""
        return self._next_id - len(self._events)

    @property
    def highest_id(self) -> int:
        """The number of the newest event held (-1 before the first one)."""
        return self._next_id - 1

    def since(self, start: int, count: int) -> list[tuple[int, Event]]:
        """Up to `count` events numbered `start` or later, oldest first, with their numbers."""
        lowest = self.lowest_id
        offset = max(0, start - lowest)
        held = islice(self._events, offset, offset + max(0, count))
        return [(lowest + offset + i, as_event(raw)) for i, raw in enumerate(held)]

    @property
    def capacity(self) -> int:
        return self._events.maxlen or 0

    def resize(self, capacity: int) -> None:
        """Hold at most `capacity` events from now on: the newest kept, as YuniKorn resizes its ring;
        numbers go on (a reader behind the dropped ones is cut off, as by any drop)."""
        if capacity != self.capacity:
            self._events = deque(self._events, maxlen=capacity)

    def __iter__(self) -> Iterator[Event]:
        return (as_event(raw) for raw in self._events)

    def __len__(self) -> int:
        return len(self._events)


class Follower:
    """A reader's place in the log: the events from a number on that `accept` passes, held ones first,
    then each new one as it is recorded.

    The follower copies nothing: it keeps a cursor into the ring, so a burst of events costs a slow
    reader nothing until the ring has dropped events it has not read yet. Then it is cut off (`next`
    returns None with `cut_off` set and `cursor` naming the first event it missed), rather than let
    it skip events without knowing. `end` stops it after the events recorded so far (a shutdown).
    """

    BATCH = 256  # events taken from the ring at a time

    def __init__(
        self, log: EventLog, accept: Callable[[Event], bool] | None = None, start: int | None = None
    ) -> None:
        self.cursor = log.highest_id + 1 if start is None else max(start, log.lowest_id)
        self.cut_off = False
        self._log = log
        self._accept = accept
        self._buffer: deque[tuple[int, Event]] = deque()
        self._end_at: int | None = None  # set by end(): no event from this number on is handed out
        self._wake = asyncio.Event()
        self._unsubscribe = log.subscribe(lambda _newest: self._wake.set())

    async def next(self) -> tuple[int, Event] | None:
        """The next accepted event with its number; None once cut off or ended."""
        while True:
            while self._buffer:
                event_id, event = self._buffer.popleft()
                if self._end_at is not None and event_id >= self._end_at:
                    self._buffer.clear()
                    break
                if self._accept is None or self._accept(event):
                    return event_id, event
            if self._end_at is not None and self.cursor >= self._end_at:
                return None
            if self.cursor < self._log.lowest_id:  # the ring dropped events this reader never saw
                self.cut_off = True
                return None
            self._wake.clear()
            batch = self._log.since(self.cursor, self.BATCH)
            if batch:
                self._buffer.extend(batch)
                self.cursor = batch[-1][0] + 1
                continue
            await self._wake.wait()

    def end(self) -> None:
        """Stop after the events recorded so far (the core is shutting down)."""
        if self._end_at is None:
            self._end_at = self._log.highest_id + 1
        self._wake.set()

    def close(self) -> None:
        """Stop listening (the reader went away); safe to call more than once."""
        self._unsubscribe()
