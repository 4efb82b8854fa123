"""Scheduler events in the shape of si's EventRecord, kept in a bounded ring for the REST API and the
event stream to serve. Free of transport types: rmproxy or the REST layer turns them into EventRecords."""

from __future__ import annotations

from collections import deque
from collections.abc import Iterator
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


class EventLog:
    """The most recent events, oldest dropped first."""

    def __init__(self, capacity: int = DEFAULT_CAPACITY) -> None:
        self._events: deque[Event] = deque(maxlen=capacity)

    def add(self, event: Event) -> None:
        self._events.append(event)

    def __iter__(self) -> Iterator[Event]:
        return iter(self._events)

    def __len__(self) -> int:
        return len(self._events)
