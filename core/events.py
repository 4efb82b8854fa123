"""Scheduler events in the shape of si's EventRecord, kept in a bounded ring for the REST API and the
event stream to serve. Free of transport types: rmproxy or the REST layer turns them into EventRecords."""

from __future__ import annotations

from collections import deque
from collections.abc import Callable, Iterator
from dataclasses import dataclass, field

DEFAULT_CAPACITY = 10_000


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
