"""Events for what a configuration reload changed in a queue tree (si EventRecord QUEUE_* details).

A snapshot is taken before the tree is reconciled and compared with the tree after it, so one reload
yields one event per queue and kind of change, whatever path the reconcile took to get there.
"""

from __future__ import annotations

from collections.abc import Iterable
from dataclasses import dataclass

from core.events import ChangeDetail, ChangeType, Event, EventType
from core.objects.queue import Queue, QueueState
from core.resources import Resource


@dataclass(frozen=True)
class QueueShape:
    """What of a queue a configuration sets, as it was before a reload."""

    max: Resource | None
    guaranteed: Resource | None
    is_leaf: bool
    state: QueueState
    properties: dict[str, str]
    max_applications: int
    quota_delay: float  # quota.preemption.delay in seconds (the quota timers compare it too)
    managed: bool  # from the configuration (a dynamic queue is not)


def snapshot(queues: Iterable[Queue]) -> dict[str, QueueShape]:
    return {
        q.full_name: QueueShape(
            q.max if not q.is_root else None, q.guaranteed, q.is_leaf, q.state,
            dict(q.effective_properties), q.max_applications, q.props.quota_preemption_delay, q.managed,
        )
        for q in queues
    }  # fmt: skip


def _text(res: Resource | None) -> str:
    return "unlimited" if res is None else str(res.as_dict())


def reload_events(
    rm_id: str, before: dict[str, QueueShape], queues: Iterable[Queue], now: float
) -> list[Event]:
    """One event per change a reload made: queues added, draining or removed, and changed limits."""
    events: list[Event] = []

    def add(
        name: str, change: ChangeType, detail: ChangeDetail, message: str, res: Resource | None = None
    ) -> None:
        resource = res.as_dict() if res is not None else {}
        events.append(Event(rm_id, EventType.QUEUE, name, change, detail, message, now, resource=resource))

    after = {q.full_name: q for q in queues}
    for name, queue in after.items():
        old = before.get(name)
        if old is None:
            add(name, ChangeType.ADD, ChangeDetail.DETAILS_NONE, "queue added by the configuration")
            continue
        if queue.state != old.state:
            add(
                name,
                ChangeType.SET,
                ChangeDetail.QUEUE_CONFIG,
                f"queue state {old.state.value} -> {queue.state.value}",
            )
        if queue.is_leaf != old.is_leaf:
            leaf = "true" if queue.is_leaf else "false"
            add(name, ChangeType.SET, ChangeDetail.QUEUE_TYPE, f"leaf queue: {leaf}")  # YuniKorn's text
        if not queue.is_root and queue.max != old.max:
            add(
                name,
                ChangeType.SET,
                ChangeDetail.QUEUE_MAX,
                f"max {_text(old.max)} -> {_text(queue.max)}",
                queue.max,
            )
        if queue.guaranteed != old.guaranteed:
            message = f"guaranteed {_text(old.guaranteed)} -> {_text(queue.guaranteed)}"
            add(name, ChangeType.SET, ChangeDetail.QUEUE_GUARANTEED, message, queue.guaranteed)
        if queue.effective_properties != old.properties or queue.max_applications != old.max_applications:
            add(name, ChangeType.SET, ChangeDetail.QUEUE_CONFIG, "properties or maxapplications changed")
    for name in before.keys() - after.keys():
        if before[name].managed:
            add(
                name,
                ChangeType.REMOVE,
                ChangeDetail.DETAILS_NONE,
                "queue removed: no longer in the configuration",
            )
        else:
            add(name, ChangeType.REMOVE, ChangeDetail.QUEUE_DYNAMIC, "queue removed: empty, and dynamic")
    return events
