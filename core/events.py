"""Scheduler events in the shape of si's EventRecord, kept in a bounded ring for the REST API and the
event stream to serve. Free of transport types: rmproxy or the REST layer turns them into EventRecords."""

from __future__ import annotations

import asyncio
from collections import deque
from collections.abc import Callable, Iterator
from dataclasses import dataclass, field

DEFAULT_CAPACITY = 10_000
FOLLOW_BACKLOG = 1_000  # events a follower may fall behind by before it is cut off


@dataclass(frozen=True)
class Event:
    rm_id: str
    type: str  # si EventRecord.Type name: REQUEST | APP | NODE | QUEUE | USERGROUP
    object_id: str
    change_type: str  # NONE | SET | ADD | REMOVE
    change_detail: str  # si EventRecord.ChangeDetail name, e.g. QUEUE_PREEMPTION
    message: str
    time: float
    reference_id: str = ""
    resource: dict[str, int] = field(default_factory=dict)


Listener = Callable[[int, "Event"], None]


class EventLog:
    """The most recent events, oldest dropped first, each numbered in order of arrival from 0.

    The numbers let a reader page through the ring (`since`) and notice what fell out of it: the
    lowest number still held rises as the ring drops old events.
    """

    def __init__(self, capacity: int = DEFAULT_CAPACITY) -> None:
        self._events: deque[tuple[int, Event]] = deque(maxlen=capacity)
        self._next_id = 0
        self._listeners: list[Listener] = []

    def add(self, event: Event) -> int:
        event_id = self._next_id
        self._next_id += 1
        self._events.append((event_id, event))
        for listener in list(self._listeners):
            listener(event_id, event)
        return event_id

    def subscribe(self, listener: Listener) -> Callable[[], None]:
        """Call `listener` with every event added from now on; the returned function unsubscribes.

        Listeners run inside the engine's step, so they must only hand the event on (a queue put).
        """
        self._listeners.append(listener)
        return lambda: self._listeners.remove(listener) if listener in self._listeners else None

    @property
    def lowest_id(self) -> int:
        """The number of the oldest event held (the next one's number when the ring is empty)."""
        return self._events[0][0] if self._events else self._next_id

    @property
    def highest_id(self) -> int:
        """The number of the newest event held (-1 before the first one)."""
        return self._next_id - 1

    def since(self, start: int, count: int) -> list[tuple[int, Event]]:
        """Up to `count` events numbered `start` or later, oldest first."""
        offset = max(0, start - self.lowest_id)
        return [self._events[i] for i in range(offset, min(len(self._events), offset + max(0, count)))]

    def __iter__(self) -> Iterator[Event]:
        return (event for _, event in self._events)

    def __len__(self) -> int:
        return len(self._events)


class Follower:
    """Hands on the events a log records from now on that `accept` passes, for one stream reader.

    At most `backlog` events wait unread; one more and the follower is cut off (`cut_off` is set and
    `next` returns None) rather than let a slow reader make the core buffer without bound. The reader
    can come back and page the gap by number. `end` stops it cleanly (the core shutting down).
    """

    def __init__(
        self,
        log: EventLog,
        accept: Callable[[Event], bool] | None = None,
        backlog: int = FOLLOW_BACKLOG,
    ) -> None:
        self.cut_off = False
        self._accept = accept
        self._queue: asyncio.Queue[tuple[int, Event] | None] = asyncio.Queue(maxsize=backlog)
        self._unsubscribe = log.subscribe(self._hand_on)

    def _hand_on(self, event_id: int, event: Event) -> None:
        if self._accept is not None and not self._accept(event):
            return
        try:
            self._queue.put_nowait((event_id, event))
        except asyncio.QueueFull:
            self.cut_off = True
            self._finish()

    def _finish(self) -> None:
        self._unsubscribe()
        while True:  # drop what is unread so the end marker always fits
            try:
                self._queue.get_nowait()
            except asyncio.QueueEmpty:
                break
        self._queue.put_nowait(None)

    async def next(self) -> tuple[int, Event] | None:
        """The next event with its number; None once the follower is cut off or ended."""
        return await self._queue.get()

    def end(self) -> None:
        """Stop after the events already waiting (the core is shutting down)."""
        if self.cut_off:
            return
        self._unsubscribe()
        if self._queue.full():
            self._queue.get_nowait()  # the end marker must fit; the reader would be cut off anyway
        self._queue.put_nowait(None)

    def close(self) -> None:
        """Stop listening (the reader went away); safe to call more than once."""
        self._unsubscribe()
