"""The events a partition records as it changes (si EventRecord shape), one constructor per kind, so
the partition's methods say what happened and this module says how it reads in the event log."""

from __future__ import annotations

from core.events import ChangeDetail, ChangeType, Event, EventType
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


def queue_created(rm_id: str, queue: str, app_id: str, now: float) -> Event:
    message = f"queue created by placement for {app_id}"
    return Event(rm_id, EventType.QUEUE, queue, ChangeType.ADD, ChangeDetail.QUEUE_DYNAMIC, message, now)


def queue_removed(rm_id: str, queue: str, now: float) -> Event:
    message = "queue removed: empty, and dynamic or no longer in the configuration"
    return Event(rm_id, EventType.QUEUE, queue, ChangeType.REMOVE, ChangeDetail.QUEUE_DYNAMIC, message, now)


def app_added(rm_id: str, app_id: str, queue: str, now: float) -> Event:
    message = f"application added to {queue}"
    return Event(
        rm_id, EventType.APP, app_id, ChangeType.ADD, ChangeDetail.APP_NEW, message, now, reference_id=queue
    )


def app_rejected(rm_id: str, rejected: RejectedApplication) -> Event:
    return Event(
        rm_id, EventType.APP, rejected.app_id, ChangeType.SET, ChangeDetail.APP_REJECT,
        f"New -> Rejected: {rejected.message}", rejected.time, reference_id=rejected.queue_name,
    )  # fmt: skip


def app_state_changed(
    rm_id: str, app_id: str, queue: str, before: AppState, after: AppState, why: str, now: float
) -> Event:
    detail = _APP_STATE_DETAILS.get(after, ChangeDetail.DETAILS_NONE)
    message = f"{_ARROWS[before, after]}: {why}" if why else _ARROWS[before, after]
    return Event(rm_id, EventType.APP, app_id, ChangeType.SET, detail, message, now, reference_id=queue)


def ask_allocated(rm_id: str, ask: Allocation, now: float) -> Event:
    return Event(
        rm_id, EventType.REQUEST, ask.key, ChangeType.ADD, ChangeDetail.REQUEST_ALLOC,
        f"allocated on node {ask.node_id}", now, reference_id=ask.application_id,
        resource=ask.resource.as_dict(),
    )  # fmt: skip


def allocation_resized(rm_id: str, alloc: Allocation, before: Resource, now: float) -> Event:
    """On its application; a foreign allocation, which has none, on its node."""
    message = f"allocation {alloc.key} on node {alloc.node_id} resized from {before.as_dict()}"
    if alloc.foreign:
        return Event(
            rm_id, EventType.NODE, alloc.node_id, ChangeType.SET, ChangeDetail.NODE_OCCUPIED, message, now,
            reference_id=alloc.key, resource=alloc.resource.as_dict(),
        )  # fmt: skip
    return Event(
        rm_id, EventType.APP, alloc.application_id, ChangeType.SET, ChangeDetail.APP_ALLOC, message, now,
        reference_id=alloc.key, resource=alloc.resource.as_dict(),
    )  # fmt: skip


def victim_chosen(rm_id: str, victim: Allocation, why: str, now: float) -> Event:
    return Event(
        rm_id, EventType.APP, victim.application_id, ChangeType.REMOVE, ChangeDetail.ALLOC_PREEMPT, why, now,
        reference_id=victim.key, resource=victim.resource.as_dict(),
    )  # fmt: skip


def quota_preemption(rm_id: str, queue: str, summary: str, achieved: Resource, now: float) -> Event:
    return Event(
        rm_id, EventType.QUEUE, queue, ChangeType.SET, ChangeDetail.QUEUE_PREEMPTION, summary, now,
        resource=achieved.as_dict(),
    )  # fmt: skip


def ask_over_limit(rm_id: str, ask: Allocation, why: str, now: float) -> Event:
    return Event(
        rm_id, EventType.REQUEST, ask.key, ChangeType.NONE, ChangeDetail.DETAILS_NONE,
        f"Request '{ask.key}' exceeds the available user or group quota: {why}", now,
        reference_id=ask.application_id, resource=ask.resource.as_dict(),
    )  # fmt: skip


def ask_pending(rm_id: str, ask: Allocation, why: str, now: float) -> Event:
    """Why an ask is still pending, each time that changes: an RM shows it on the task (the Kubernetes
    shim as the pod's PodScheduled=False, Unschedulable condition)."""
    return Event(
        rm_id, EventType.REQUEST, ask.key, ChangeType.NONE, ChangeDetail.DETAILS_NONE,
        f"Request '{ask.key}' is pending: {why}", now,
        reference_id=ask.application_id, resource=ask.resource.as_dict(),
    )  # fmt: skip


def app_runnable(rm_id: str, app_id: str, queue: str, runnable: bool, why: str, now: float) -> Event:
    """An Accepted application held by a user's or group's maxapplications, or free to run again."""
    detail = ChangeDetail.APP_RUNNABLE_QUOTA if runnable else ChangeDetail.APP_CANNOTRUN_QUOTA
    message = "may run: within its user and group limits" if runnable else f"may not run yet: {why}"
    return Event(rm_id, EventType.APP, app_id, ChangeType.SET, detail, message, now, reference_id=queue)


def placeholder_replaced(rm_id: str, ph: Allocation, real: Allocation, now: float) -> Event:
    return Event(
        rm_id, EventType.APP, ph.application_id, ChangeType.REMOVE, ChangeDetail.ALLOC_REPLACED,
        f"placeholder {ph.key} of task group {ph.task_group} replaced by {real.key} on node {real.node_id}",
        now, reference_id=ph.key, resource=ph.resource.as_dict(),
    )  # fmt: skip


def placeholder_timed_out(rm_id: str, ph: Allocation, why: str, now: float) -> Event:
    return Event(
        rm_id, EventType.APP, ph.application_id, ChangeType.REMOVE, ChangeDetail.ALLOC_TIMEOUT,
        f"placeholder {ph.key} of task group {ph.task_group} released: {why}", now,
        reference_id=ph.key, resource=ph.resource.as_dict(),
    )  # fmt: skip


def placeholder_too_small(rm_id: str, ph: Allocation, real: Allocation, now: float) -> Event:
    """YuniKorn's "placeholder size mismatch": the real task needs more than its placeholder holds."""
    return Event(
        rm_id, EventType.REQUEST, real.key, ChangeType.NONE, ChangeDetail.DETAILS_NONE,
        f"task group {ph.task_group}: the real task needs {real.resource.as_dict()}, more than placeholder "
        f"{ph.key} holds ({ph.resource.as_dict()}); the placeholder is released",
        now, reference_id=real.application_id, resource=real.resource.as_dict(),
    )  # fmt: skip


def no_preemption(rm_id: str, ask: Allocation, reason: str, now: float) -> Event:
    """Preemption was tried for an ask and found no plan; once per reason, not per cycle."""
    return Event(
        rm_id, EventType.REQUEST, ask.key, ChangeType.NONE, ChangeDetail.DETAILS_NONE, reason, now,
        reference_id=ask.application_id, resource=ask.resource.as_dict(),
    )  # fmt: skip
