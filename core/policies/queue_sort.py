"""Order of queues and applications in a scheduling cycle."""

from __future__ import annotations

from core.objects.application import Application
from core.objects.queue import Queue
from core.resources import Resource


def usage_share(used: Resource, base: Resource | None) -> float:
    """The largest share of `used` against `base` over the types `base` sets; 0 without a base."""
    if not base:
        return 0.0
    share = 0.0
    for name, limit in base.items():
        value = used.get(name)
        if limit > 0:
            share = max(share, value / limit)
        elif value > 0:
            share = float("inf")
    return share


def fair_queue_key(queue: Queue) -> tuple[float, float, str]:
    """Fair: the queue using the smallest share of its guaranteed (else max) goes first;
    among equals, the one with more pending goes first."""
    base = queue.guaranteed if queue.guaranteed else queue.max
    pending = float(sum(queue.pending.values()))
    return (usage_share(queue.allocated, base), -pending, queue.full_name)


def sorted_children(queue: Queue) -> list[Queue]:
    return sorted((c for c in queue.children.values() if c.has_pending()), key=fair_queue_key)


def sorted_applications(queue: Queue) -> list[Application]:
    """FIFO: oldest submission first."""
    return sorted(
        (a for a in queue.applications.values() if a.has_pending()),
        key=lambda a: (a.submission_time, a.app_id),
    )
