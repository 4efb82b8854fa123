"""Order of queues and applications in a scheduling cycle, as YuniKorn orders them.

Queues (every parent sorts its children fairly): the child using the smallest share goes first. A
queue's share is the largest, over the types it uses, of usage against its guaranteed, or against its
fair max (the cluster overlaid with the maxes set down the path) for types it has no guarantee for.
Among equal shares, the one with more pending goes first.

Applications in a leaf: fifo (oldest submission first) or fair (smallest dominant share of usage
against the leaf's guaranteed first; for a type without a guarantee the raw quantity counts).

With `application.sort.priority` enabled (the default), priority comes first: a parent orders its
children by their current priority (see core.objects.priority), a leaf its applications by the
highest priority of their pending asks; the orders above break ties. Disabled, priority plays no part.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping
from functools import cmp_to_key

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


def queue_share(queue: Queue, maximum: Mapping[str, int] | None = None) -> float:
    # Asked of every child with something pending on every pick: the dicts themselves, no calls.
    guaranteed: Mapping[str, int] = queue.guaranteed._values if queue.guaranteed is not None else {}
    ceiling = maximum  # the fair max, walked up the path only when a type without a guarantee is used
    share = 0.0
    for name, used in queue.allocated._values.items():
        if used < 0:
            continue
        if name in guaranteed:
            base = guaranteed[name]
        else:
            if ceiling is None:
                ceiling = fair_max(queue)
            if name not in ceiling:
                continue
            base = ceiling[name]
        this = (used / base) if base > 0 else (1.0 if used > 0 else 0.0)
        if this > share:
            share = this
    return share


def _strictly_more(left: Mapping[str, int], right: Mapping[str, int]) -> bool:
    """YuniKorn's StrictlyGreaterThan(left - right, zero): no type less, at least one type more."""
    more = False
    for name in left.keys() | right.keys():
        diff = left.get(name, 0) - right.get(name, 0)
        if diff < 0:
            return False
        more = more or diff > 0
    return more


def _compare_queues(left: tuple[float, Queue], right: tuple[float, Queue]) -> int:
    # Lower share first; on a tie, more pending (the quantities themselves, as YuniKorn) first.
    # With priority sorting on (the parent's application.sort.priority), priority comes before both.
    parent = left[1].parent
    by_priority = parent is not None and parent.props.sort_priority_enabled
    if by_priority and left[1].current_priority != right[1].current_priority:
        return -1 if left[1].current_priority > right[1].current_priority else 1
    if left[0] != right[0]:
        return -1 if left[0] < right[0] else 1
    if _strictly_more(left[1].pending, right[1].pending):
        return -1
    if _strictly_more(right[1].pending, left[1].pending):
        return 1
    return -1 if left[1].full_name < right[1].full_name else int(left[1].full_name > right[1].full_name)


def sorted_children(queue: Queue) -> list[Queue]:
    """Children with something pending, in fair order; stopped queues are never scheduled."""
    children = [c for c in queue.children.values() if c.has_pending() and c.state != "Stopped"]
    if len(children) < 2:
        return children  # nothing to order: most parents, on most picks, have one child asking
    candidates = [(queue_share(c), c) for c in children]
    if len(candidates) == 2:  # the common shape: one comparison, not a sort
        first, second = candidates
        return [first[1], second[1]] if _compare_queues(first, second) < 0 else [second[1], first[1]]
    return [c for _, c in sorted(candidates, key=cmp_to_key(_compare_queues))]


def _dominant_shares(app: Application, guaranteed: Mapping[str, int]) -> tuple[float, ...]:
    shares = [
        (v / guaranteed[k]) if guaranteed.get(k, 0) > 0 else float(v)
        for k, v in app.allocated.items()
        if v > 0
    ]
    return tuple(sorted(shares, reverse=True))


AppKey = tuple[int, tuple[float, ...], float, str]
_NO_SHARES: tuple[float, ...] = ()


def app_sort_key(queue: Queue) -> Callable[[Application], AppKey]:
    """The leaf's order as a key: with application.sort.priority enabled, the application holding the
    highest-priority pending ask first; then the policy: fifo (oldest submission) or fair (smallest
    dominant share). Keys are unique (the application ID ends them)."""
    by_priority = queue.props.sort_priority_enabled
    if queue.props.sort_policy == SORT_FAIR:
        guaranteed: Mapping[str, int] = queue.guaranteed or {}
        return lambda a: (
            -a.ask_max_priority if by_priority else 0,
            _dominant_shares(a, guaranteed),
            a.submission_time,
            a.app_id,
        )
    return lambda a: (-a.ask_max_priority if by_priority else 0, _NO_SHARES, a.submission_time, a.app_id)


def sorted_applications(queue: Queue) -> list[Application]:
    """The leaf's applications with pending asks, in its order (app_sort_key)."""
    return sorted(queue.pending_apps.values(), key=app_sort_key(queue))
