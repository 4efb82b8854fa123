"""The events the objects' changes are recorded as (si EventRecord shape: applications, their asks and
allocations, nodes, queues' applications, users' and groups' usage), one constructor per kind, so the
code making a change says what happened and this module says how it reads in the event log."""

from __future__ import annotations

from core.events import NO_RESOURCE, ChangeDetail, ChangeType, Event, EventType, RawEvent
from core.objects.allocation import Allocation
from core.objects.application import AppState
from core.objects.rejected_apps import RejectedApplication
from core.resources import Resource

# An application state's ChangeDetail (APP_<STATE>); Rejected is APP_REJECT, as si names it.
_APP_STATE_DETAILS = {
    AppState.NEW: ChangeDetail.APP_NEW,
    AppState.ACCEPTED: ChangeDetail.APP_ACCEPTED,
    AppState.RUNNING: ChangeDetail.APP_RUNNING,
    AppState.REJECTED: ChangeDetail.APP_REJECT,
    AppState.COMPLETING: ChangeDetail.APP_COMPLETING,
    AppState.COMPLETED: ChangeDetail.APP_COMPLETED,
    AppState.FAILING: ChangeDetail.APP_FAILING,
    AppState.FAILED: ChangeDetail.APP_FAILED,
    AppState.EXPIRED: ChangeDetail.APP_EXPIRED,
    AppState.RESUMING: ChangeDetail.APP_RESUMING,
}
# "New -> Accepted" and the like, made once: a state change is recorded for every application.
_ARROWS = {(before, after): f"{before.value} -> {after.value}" for before in AppState for after in AppState}


def queue_added(rm_id: str, queue: str, now: float) -> Event:
    """A queue of the configuration (YuniKorn's managed queue: DETAILS_NONE)."""
    message = "queue added by the configuration"
    return Event(rm_id, EventType.QUEUE, queue, ChangeType.ADD, ChangeDetail.DETAILS_NONE, message, now)


def queue_created(rm_id: str, queue: str, app_id: str, now: float) -> Event:
    message = f"queue created by placement for {app_id}"
    return Event(rm_id, EventType.QUEUE, queue, ChangeType.ADD, ChangeDetail.QUEUE_DYNAMIC, message, now)


def queue_removed(rm_id: str, queue: str, managed: bool, now: float) -> Event:
    detail = ChangeDetail.DETAILS_NONE if managed else ChangeDetail.QUEUE_DYNAMIC
    why = "no longer in the configuration" if managed else "dynamic"
    message = f"queue removed: empty, and {why}"
    return Event(rm_id, EventType.QUEUE, queue, ChangeType.REMOVE, detail, message, now)


def root_max(rm_id: str, capacity: Resource, now: float) -> Event:
    """Root's max, as YuniKorn's follows the nodes: what they hold (no max once none is left)."""
    shown = Resource({k: v for k, v in capacity.items() if v})
    return Event(
        rm_id, EventType.QUEUE, "root", ChangeType.SET, ChangeDetail.QUEUE_MAX, "", now, resource=shown
    )


def queue_app(rm_id: str, queue: str, app_id: str, change: ChangeType, now: float) -> RawEvent:
    """An application joined (ADD) or left (REMOVE) its queue."""
    return (rm_id, EventType.QUEUE, queue, change, ChangeDetail.QUEUE_APP, "", now, app_id, NO_RESOURCE)


def app_added(rm_id: str, app_id: str, queue: str, now: float) -> RawEvent:
    message = f"application added to {queue}"
    return (rm_id, EventType.APP, app_id, ChangeType.ADD, ChangeDetail.APP_NEW, message, now, "", NO_RESOURCE)


def app_removed(rm_id: str, app_id: str, now: float) -> RawEvent:
    """The application left the partition (removed by its RM, or Completed and out of its queue)."""
    return (
        rm_id, EventType.APP, app_id, ChangeType.REMOVE, ChangeDetail.DETAILS_NONE, "", now, "", NO_RESOURCE
    )  # fmt: skip


def app_rejected(rm_id: str, rejected: RejectedApplication) -> Event:
    return Event(
        rm_id, EventType.APP, rejected.app_id, ChangeType.SET, ChangeDetail.APP_REJECT,
        f"New -> Rejected: {rejected.message}", rejected.time,
    )  # fmt: skip


def rejection_expired(rm_id: str, app_id: str, now: float) -> RawEvent:
    """A refused application forgotten after the terminated timeout (YuniKorn's Rejected -> Expired)."""
    return app_state_changed(rm_id, app_id, AppState.REJECTED, AppState.EXPIRED, "terminated timeout", now)


def app_state_changed(
    rm_id: str, app_id: str, before: AppState, after: AppState, why: str, now: float
) -> RawEvent:
    detail = _APP_STATE_DETAILS.get(after, ChangeDetail.DETAILS_NONE)
    message = f"{_ARROWS[before, after]}: {why}" if why else _ARROWS[before, after]
    return (rm_id, EventType.APP, app_id, ChangeType.SET, detail, message, now, "", NO_RESOURCE)


# The events of an ask and an allocation, on the scheduling path (each pod records several): plain
# tuples in Event's field order (RawEvent), as YuniKorn's application, node and ugm events record them.
def ask_added(rm_id: str, ask: Allocation, now: float) -> RawEvent:
    return (
        rm_id, EventType.APP, ask.application_id, ChangeType.ADD, ChangeDetail.APP_REQUEST, "", now,
        ask.key, ask.resource,
    )  # fmt: skip


def ask_removed(rm_id: str, ask: Allocation, detail: ChangeDetail, now: float) -> RawEvent:
    """REQUEST_CANCEL (its RM removed it, or released its allocation) or REQUEST_TIMEOUT (its gang's
    placeholder timeout removed it)."""
    return (
        rm_id, EventType.APP, ask.application_id, ChangeType.REMOVE, detail, "", now, ask.key, ask.resource
    )  # fmt: skip


def node_allocation(rm_id: str, alloc: Allocation, change: ChangeType, now: float) -> RawEvent:
    """An allocation (a foreign one too) placed on (ADD) or gone from (REMOVE) its node."""
    return (
        rm_id, EventType.NODE, alloc.node_id, change, ChangeDetail.NODE_ALLOC, "", now, alloc.key,
        alloc.resource,
    )  # fmt: skip


def node_reservation(rm_id: str, node_id: str, ask: Allocation, change: ChangeType, now: float) -> RawEvent:
    return (
        rm_id, EventType.NODE, node_id, change, ChangeDetail.NODE_RESERVATION, "", now, ask.key,
        ask.resource,
    )  # fmt: skip


def user_usage(
    rm_id: str, user: str, queue: str, resource: Resource, change: ChangeType, now: float
) -> RawEvent:
    return (rm_id, EventType.USERGROUP, user, change, ChangeDetail.UG_USER_RESOURCE, "", now, queue, resource)


def group_usage(
    rm_id: str, group: str, queue: str, resource: Resource, change: ChangeType, now: float
) -> RawEvent:
    return (
        rm_id, EventType.USERGROUP, group, change, ChangeDetail.UG_GROUP_RESOURCE, "", now, queue, resource
    )  # fmt: skip


def app_group_link(rm_id: str, group: str, app_id: str, linked: bool, now: float) -> RawEvent:
    """The group an application's usage counts against: linked (SET) or let go (REMOVE)."""
    change = ChangeType.SET if linked else ChangeType.REMOVE
    return (rm_id, EventType.USERGROUP, group, change, ChangeDetail.UG_APP_LINK, "", now, app_id, NO_RESOURCE)


def limit_changed(rm_id: str, group: bool, name: str, queue: str, change: ChangeType, now: float) -> Event:
    """A user's or group's limit on a queue set (SET: by every configuration that has it) or gone."""
    detail = ChangeDetail.UG_GROUP_LIMIT if group else ChangeDetail.UG_USER_LIMIT
    return Event(rm_id, EventType.USERGROUP, name, change, detail, "", now, reference_id=queue)


# One call per allocation placed or ended, on the scheduling path: its node's, its user's and its
# application's events (YuniKorn's node.go, ugm and application.go record these three every time; the
# group's, where a group limit counts it, the partition adds).
_NODE, _APP, _UG = EventType.NODE, EventType.APP, EventType.USERGROUP
_ADD, _REMOVE = ChangeType.ADD, ChangeType.REMOVE
_NODE_ALLOC, _UG_USER, _APP_ALLOC = (
    ChangeDetail.NODE_ALLOC,
    ChangeDetail.UG_USER_RESOURCE,
    ChangeDetail.APP_ALLOC,
)


def allocation_placed(
    events: list[RawEvent], rm_id: str, alloc: Allocation, user: str, queue: str, now: float
) -> None:
    key, res = alloc.key, alloc.resource
    events.append((rm_id, _NODE, alloc.node_id, _ADD, _NODE_ALLOC, "", now, key, res))
    if user:  # YuniKorn tracks no usage without a user
        events.append((rm_id, _UG, user, _ADD, _UG_USER, "", now, queue, res))
    events.append((rm_id, _APP, alloc.application_id, _ADD, _APP_ALLOC, "", now, key, res))


def allocation_ended(
    events: list[RawEvent], rm_id: str, alloc: Allocation, detail: ChangeDetail, now: float,
    message: str, on_node: bool, user: str, queue: str,
) -> None:  # fmt: skip
    """`detail`: how it ended (ALLOC_CANCEL, ...); no NODE_ALLOC when its node goes with it (`on_node`
    False), no UG_USER_RESOURCE when `user` is empty (none, or the caller records a total)."""
    key, res = alloc.key, alloc.resource
    if on_node:
        events.append((rm_id, _NODE, alloc.node_id, _REMOVE, _NODE_ALLOC, "", now, key, res))
    if user:
        events.append((rm_id, _UG, user, _REMOVE, _UG_USER, "", now, queue, res))
    events.append((rm_id, _APP, alloc.application_id, _REMOVE, detail, message, now, key, res))


def allocation_resized(rm_id: str, alloc: Allocation, before: Resource, now: float) -> Event:
    """On its application; a foreign allocation, which has none, on its node."""
    message = f"allocation {alloc.key} on node {alloc.node_id} resized from {before.as_dict()}"
    if alloc.foreign:
        return Event(
            rm_id, EventType.NODE, alloc.node_id, ChangeType.SET, ChangeDetail.NODE_OCCUPIED, message, now,
            reference_id=alloc.key, resource=alloc.resource,
        )  # fmt: skip
    return Event(
        rm_id, EventType.APP, alloc.application_id, ChangeType.SET, ChangeDetail.APP_ALLOC, message, now,
        reference_id=alloc.key, resource=alloc.resource,
    )  # fmt: skip


def victim_chosen(rm_id: str, victim: Allocation, message: str, now: float) -> Event:
    """On the victim's request, as YuniKorn says who preempted it ("Preempted by ..."); its
    ALLOC_PREEMPT follows when its RM confirms the release."""
    return Event(
        rm_id, EventType.REQUEST, victim.key, ChangeType.NONE, ChangeDetail.DETAILS_NONE, message, now,
        reference_id=victim.application_id, resource=victim.resource,
    )  # fmt: skip


def quota_preemption(rm_id: str, queue: str, summary: str, max_resource: Resource, now: float) -> Event:
    """A quota preemption run: what it took is in the summary; the resource is the queue's max."""
    return Event(
        rm_id, EventType.QUEUE, queue, ChangeType.SET, ChangeDetail.QUEUE_PREEMPTION, summary, now,
        resource=max_resource,
    )  # fmt: skip


def ask_over_limit(rm_id: str, ask: Allocation, why: str, now: float) -> Event:
    return Event(
        rm_id, EventType.REQUEST, ask.key, ChangeType.NONE, ChangeDetail.DETAILS_NONE,
        f"Request '{ask.key}' exceeds the available user or group quota: {why}", now,
        reference_id=ask.application_id, resource=ask.resource,
    )  # fmt: skip


def ask_pending(rm_id: str, ask: Allocation, why: str, now: float) -> Event:
    """Why an ask is still pending, each time that changes: an RM shows it on the task (the Kubernetes
    shim as the pod's PodScheduled=False, Unschedulable condition)."""
    return Event(
        rm_id, EventType.REQUEST, ask.key, ChangeType.NONE, ChangeDetail.DETAILS_NONE,
        f"Request '{ask.key}' is pending: {why}", now,
        reference_id=ask.application_id, resource=ask.resource,
    )  # fmt: skip


def app_runnable(rm_id: str, app_id: str, runnable: bool, why: str, now: float) -> Event:
    """An Accepted application held by a user's or group's maxapplications, or free to run again."""
    detail = ChangeDetail.APP_RUNNABLE_QUOTA if runnable else ChangeDetail.APP_CANNOTRUN_QUOTA
    message = "may run: within its user and group limits" if runnable else f"may not run yet: {why}"
    return Event(rm_id, EventType.APP, app_id, ChangeType.NONE, detail, message, now)


def app_runnable_in_queue(rm_id: str, app_id: str, runnable: bool, why: str, now: float) -> Event:
    """An Accepted application held by a queue's maxapplications, or free to run again."""
    detail = ChangeDetail.APP_RUNNABLE_QUEUE if runnable else ChangeDetail.APP_CANNOTRUN_QUEUE
    message = "may run: within its queues' maxapplications" if runnable else f"may not run yet: {why}"
    return Event(rm_id, EventType.APP, app_id, ChangeType.NONE, detail, message, now)


def placeholder_too_small(rm_id: str, ph: Allocation, real: Allocation, now: float) -> Event:
    """YuniKorn's SendPlaceholderLargerEvent: the real task needs more than its placeholder holds (the
    placeholder is released). On the placeholder's key, with the real task's resource."""
    message = (
        f"Task group '{ph.task_group}' in application '{ph.application_id}': allocation resources "
        f"'{_text(real.resource)}' are not matching placeholder '{_text(ph.resource)}' allocation with ID "
        f"'{ph.key}'"
    )
    return Event(
        rm_id, EventType.REQUEST, ph.key, ChangeType.NONE, ChangeDetail.DETAILS_NONE, message, now,
        reference_id=ph.application_id, resource=real.resource,
    )  # fmt: skip


def _text(res: Resource) -> str:
    """A resource as YuniKorn's Resource.String() writes it: map[memory:2 vcore:1]."""
    return "map[" + " ".join(f"{k}:{v}" for k, v in sorted(res.items())) + "]"


def no_preemption(rm_id: str, ask: Allocation, reason: str, now: float) -> Event:
    """Preemption was tried for an ask and found no plan; once per reason, not per cycle."""
    return Event(
        rm_id, EventType.REQUEST, ask.key, ChangeType.NONE, ChangeDetail.DETAILS_NONE, reason, now,
        reference_id=ask.application_id, resource=ask.resource,
    )  # fmt: skip
