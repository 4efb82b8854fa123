"""Order of queues and applications in a scheduling cycle, as YuniKorn orders them.

Queues (every parent sorts its children fairly): the child using the smallest share goes first. A
queue's share is the largest, over the types it uses, of usage against its guaranteed, or against its
fair max (the cluster overlaid with the maxes set down the path) for types it has no guarantee for.
Among equal shares, the one with more pending goes first.

Applications in a leaf: fifo (oldest submission first) or fair (smallest dominant share of usage
against the leaf's guaranteed first; for a type without a guarantee the raw quantity counts).
"""

from __future__ import annotations

from collections.abc import Mapping

from core.config.properties import SORT_FAIR
from core.objects.application import Application
from core.objects.queue import Queue


def fair_max(queue: Queue) -> dict[str, int]:
    """Root's max (the cluster), overlaid top-down with each queue's own max: the child's value wins."""
    out: dict[str, int] = {}
    for q in reversed(queue.path_to_root()):
        if q.max is not None:
            out.update(q.max.items())
    return out


def _share(used: int, base: int) -> float:
    if base <= 0:
        return 1.0 if used > 0 else 0.0
    return used / base


def queue_share(queue: Queue, maximum: Mapping[str, int] | None = None) -> float:
    guaranteed = queue.guaranteed or {}
    ceiling = maximum if maximum is not None else fair_max(queue)
    share = 0.0
    for name, used in queue.allocated.items():
        if used < 0:
            continue
        if name in guaranteed:
            share = max(share, _share(used, guaranteed[name]))
        elif name in ceiling:
            share = max(share, _share(used, ceiling[name]))
    return share


def _pending_share(queue: Queue, ceiling: Mapping[str, int]) -> float:
    return max((_share(v, ceiling.get(k, 0)) for k, v in queue.pending.items() if k in ceiling), default=0.0)


def fair_queue_key(queue: Queue) -> tuple[float, float, str]:
    ceiling = fair_max(queue)
    return (queue_share(queue, ceiling), -_pending_share(queue, ceiling), queue.full_name)


def sorted_children(queue: Queue) -> list[Queue]:
    """Children with something pending, in fair order; stopped queues are never scheduled."""
    candidates = [c for c in queue.children.values() if c.has_pending() and c.state != "Stopped"]
    return sorted(candidates, key=fair_queue_key)


def _dominant_shares(app: Application, guaranteed: Mapping[str, int]) -> tuple[float, ...]:
    shares = [
        (v / guaranteed[k]) if guaranteed.get(k, 0) > 0 else float(v)
        for k, v in app.allocated.items()
        if v > 0
    ]
    return tuple(sorted(shares, reverse=True))


def sorted_applications(queue: Queue) -> list[Application]:
    pending = [a for a in queue.applications.values() if a.has_pending()]
    if queue.props.sort_policy == SORT_FAIR:
        guaranteed = queue.guaranteed or {}
        return sorted(pending, key=lambda a: (_dominant_shares(a, guaranteed), a.submission_time, a.app_id))
    return sorted(pending, key=lambda a: (a.submission_time, a.app_id))
