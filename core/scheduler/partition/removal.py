"""What goes out of a partition on its RM's word: a node, an application, an allocation or an ask,
with what each records as YuniKorn does (how an allocation ended, on its application; its ask going
with it; NODE_ALLOC where its node stays)."""

from __future__ import annotations

from core.events import ChangeDetail, ChangeType
from core.objects import change_events
from core.objects.allocation import Allocation
from core.objects.application import AppEvent, Application
from core.resources import sum_resources
from core.scheduler.partition import Partition, applications
from core.scheduler.rejection import Rejection
from core.scheduler.results import Termination

# How an allocation the RM released ended, as its application's event says (YuniKorn's mapping; a
# release without a termination type reads as its node removed there too).
_ENDED_AS: dict[Termination | None, ChangeDetail] = {
    None: ChangeDetail.ALLOC_NODEREMOVED,
    Termination.STOPPED_BY_RM: ChangeDetail.ALLOC_CANCEL,
    Termination.TIMEOUT: ChangeDetail.ALLOC_TIMEOUT,
    Termination.PREEMPTED_BY_SCHEDULER: ChangeDetail.ALLOC_PREEMPT,
    Termination.PLACEHOLDER_REPLACED: ChangeDetail.ALLOC_REPLACED,
}

# Terminations of releases the core decided; the RM's release of that type confirms it.
_CORE_DECIDED = frozenset(
    {Termination.TIMEOUT, Termination.PLACEHOLDER_REPLACED, Termination.PREEMPTED_BY_SCHEDULER}
)


def remove_node(part: Partition, node_id: str, now: float = 0.0) -> list[Allocation]:
    """Remove a node; returns the allocations that ran there, now released."""
    node = part.node(node_id)
    for ref in list(node.reservations):
        part.reservations.release(ref)
    released = []
    for alloc in list(node.allocations.values()):
        if alloc.foreign:  # YuniKorn walks its own allocations only: nothing recorded for these
            part.foreign.pop(alloc.key, None)
            part.occupied_total = part.occupied_total - alloc.resource
            continue
        if alloc.replaces is not None:  # a real task bound here in a placeholder's stead: pending again
            part.gangs.cancel_replacement(
                part.applications[alloc.application_id], alloc, back_to_pending=True
            )
            continue
        # YuniKorn's ALLOC_NODEREMOVED on the application; the node goes with its allocations.
        part.unallocate(alloc, now, ChangeDetail.ALLOC_NODEREMOVED, on_node=False)
        released.append(alloc)
    part.pod_rules.node_removed(node)
    del part.nodes[node_id]
    part.largest_node.changed()
    part.node_index.remove(node_id)
    part.total_capacity = part.total_capacity - node.capacity
    part.room_changed()
    part.parking.everything()  # its topology domain went: spread counts change
    return released


def remove_application(part: Partition, app_id: str, now: float) -> list[Allocation]:
    """The RM removes an application: its asks go, its allocations are released, it completes."""
    app = applications.application(part, app_id)
    released = _release_all(part, app, now, asks_go=True)
    # The application is gone for good: take it through Completing to Completed at once.
    part.lifecycle.transition(app, AppEvent.COMPLETE, now, "removed by the resource manager")
    part.lifecycle.transition(app, AppEvent.COMPLETE, now, "removed by the resource manager")
    app.removed_by_rm = True
    applications.retire(part, app)
    return released


def release_by_rm(
    part: Partition, app_id: str, key: str, now: float, termination: Termination | None = None
) -> list[Allocation]:
    """RM-initiated release of one allocation or ask (or all of an app's when key is empty).

    Returns the released allocations; removed asks are not returned, as the RM never ran them.
    A placeholder released as PLACEHOLDER_REPLACED confirms its replacement: its real task is
    placed (in `gang_allocations`), and nothing is returned.
    """
    if not app_id and key in part.foreign:
        _drop_foreign(part, part.foreign[key], now)
        return []
    if termination in _CORE_DECIDED and part.victims.confirmed_late((app_id, key)):
        # The RM confirms a release the core asked for, of an allocation that went meanwhile (its
        # node was removed, its application failed): done already, nothing to refuse.
        part.log.debug("release confirmed after the allocation went", applicationID=app_id, allocationKey=key)
        return []
    app = applications.application(part, app_id)
    released: list[Allocation] = []
    if not key:
        confirmed = termination in _CORE_DECIDED
        released = _release_all(part, app, now, termination != Termination.TIMEOUT, confirmed)
        if app.app_id in part.applications:  # a Hard gang's last placeholder may have failed it
            part.lifecycle.complete_if_idle(app, now)
        return released
    if key in app.allocations:
        alloc = app.allocations[key]
        if alloc.placeholder and termination == Termination.PLACEHOLDER_REPLACED:
            part.gangs.confirm_replacement(app, alloc, now)
            return []
        released = [alloc]
    elif key in app.replacing:  # the RM ended a real task before its placeholder's release came back
        real = app.replacing[key]
        part.gangs.cancel_replacement(app, real, back_to_pending=False)
        part.events.append(change_events.ask_removed(part.rm_id, real, ChangeDetail.REQUEST_CANCEL, now))
    elif key in app.asks:
        part.cancel_ask(app, key, now)
    else:
        raise Rejection(f"application {app_id} has no ask or allocation with key {key}")
    detail = _ENDED_AS[termination]
    for alloc in released:
        part.unallocate(alloc, now, detail, confirmed=termination in _CORE_DECIDED)
        if termination != Termination.TIMEOUT:  # as YuniKorn: its ask goes with it, but on a timeout
            part.events.append(change_events.ask_removed(part.rm_id, alloc, ChangeDetail.REQUEST_CANCEL, now))
    if app.app_id in part.applications:  # a Hard gang's last placeholder may have failed it
        part.lifecycle.complete_if_idle(app, now)
    return released


def _release_all(
    part: Partition, app: Application, now: float, asks_go: bool, confirmed: bool = False
) -> list[Allocation]:
    """Everything an application holds and asks for goes at once, as YuniKorn's RemoveAllAllocations
    and RemoveAllocationAsk(""): ALLOC_CANCEL for each allocation, the user's (and group's) usage down
    by their total in one event each, and REQUEST_CANCEL for every request, those allocated too (none
    for the allocations on a TIMEOUT release, `asks_go` False)."""
    cancel = ChangeDetail.REQUEST_CANCEL
    for key in list(app.asks):
        part.cancel_ask(app, key, now)
    for real in list(app.replacing.values()):
        part.gangs.cancel_replacement(app, real, back_to_pending=False)
        part.events.append(change_events.ask_removed(part.rm_id, real, cancel, now))
    released = list(app.allocations.values())
    for alloc in released:
        part.unallocate(alloc, now, ChangeDetail.ALLOC_CANCEL, confirmed=confirmed, by_user=False)
        if asks_go:
            part.events.append(change_events.ask_removed(part.rm_id, alloc, cancel, now))
    if released:
        part.usage_removed(app, sum_resources(a.resource for a in released), now)
    return released


def _drop_foreign(part: Partition, alloc: Allocation, now: float) -> None:
    """Another scheduler's pod left its node (or the node went)."""
    part.foreign.pop(alloc.key, None)
    node = part.nodes.get(alloc.node_id)
    if node is not None:
        node.remove_allocation(alloc.key)
        part.node_index.update(node)
        part.events.append(change_events.node_allocation(part.rm_id, alloc, ChangeType.REMOVE, now))
    part.occupied_total = part.occupied_total - alloc.resource
    part.room_changed()
