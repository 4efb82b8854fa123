"""The scheduling side of gang scheduling: real tasks placed in their placeholders' stead.

Run at the start of each cycle over the applications whose gang runs (all placeholders allocated, or
the gang otherwise started): each pending real task of a task group takes one of that group's
placeholders, on the placeholder's node when the task may run there (its constraints; the room is the
placeholder's), else on the first node in policy order with room for it (YuniKorn's first-fit
fallback). A task larger than a placeholder releases that placeholder instead (YuniKorn: the sizes
of a task group's members must match its placeholders).
"""

from __future__ import annotations

from collections import defaultdict

from core.objects import change_events
from core.objects.allocation import Allocation
from core.objects.application import Application, AppState
from core.scheduler.node_search import admits_now, find_node
from core.scheduler.partition import Partition

_NOT_STARTED = (AppState.NEW, AppState.ACCEPTED)


def replace_placeholders(partition: Partition, now: float) -> int:
    """Start every replacement that can start now; returns how many did."""
    started = 0
    for app in list(partition.gangs.apps.values()):
        gang = app.gang
        assert gang is not None
        if gang.pending_real and gang.allocated_count and app.state not in _NOT_STARTED:
            started += _replace_for(partition, app, now)
    return started


def _replace_for(partition: Partition, app: Application, now: float) -> int:
    free: dict[str, list[Allocation]] = defaultdict(list)  # placeholders not yet given away, per group
    for alloc in app.allocations.values():
        if alloc.placeholder and not alloc.released_by_core and not alloc.releasing:  # not preempted
            free[alloc.task_group].append(alloc)
    started = 0
    for ask in list(app.sorted_asks()):
        if ask.placeholder or not ask.task_group:
            continue
        group = free.get(ask.task_group)
        if not group:
            continue
        ph = _usable_placeholder(partition, group, ask, now)
        if ph is None:
            continue
        node = partition.nodes.get(ph.node_id)
        if node is not None and admits_now(partition, node, ask):
            target = node.node_id
        else:
            other = find_node(partition, ask)
            if other is None:
                group.append(ph)  # still free for a later task
                ask.note_pending(
                    f"task group {ask.task_group}: may not run on its placeholder's node "
                    f"{ph.node_id}, and no other node has room",
                    now,
                )
                continue
            target = other.node_id
        partition.gangs.begin_replacement(app, ask, ph, target, now)
        started += 1
    return started


def _usable_placeholder(
    partition: Partition, group: list[Allocation], ask: Allocation, now: float
) -> Allocation | None:
    """Take the group's next placeholder the task fits in; release the ones it does not fit in."""
    while group:
        ph = group.pop()
        if ask.resource.fits_in(ph.resource):
            return ph
        partition.gangs.release_placeholder(
            ph, f"cancel placeholder: resource incompatible with {ask.key}", now
        )
        partition.events.append(change_events.placeholder_too_small(partition.rm_id, ph, ask, now))
    return None


def held_reason(app: Application, ask: Allocation) -> str:
    """Why a real task of a task group waits (it is not scheduled on its own)."""
    gang = app.gang
    assert gang is not None
    if app.state in _NOT_STARTED:
        return (
            f"waiting for placeholders of task group {ask.task_group}: the gang is not complete yet "
            f"({gang.allocated_count} placeholders allocated)"
        )
    return f"waiting for a placeholder of task group {ask.task_group} to take its place"
