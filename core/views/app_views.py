"""Applications and their asks as YuniKorn's ws/v1 DAO objects: a queue's applications, one
application (with its allocations, placeholders and asks), the applications of a partition or queue
in a state (active, rejected, completed), and a rejected application as upstream lists it. The
shared shapes (resources, times, omitted empties, the refusals) are core.views.dao's."""

from __future__ import annotations

from collections.abc import Iterable

from core.objects.allocation import Allocation
from core.objects.application import Application
from core.objects.queue import Queue
from core.objects.rejected_apps import RejectedApplication
from core.scheduler.partition import Partition
from core.views.dao import BadRequest, Json, NotFound, allocation_info, int64_json, nanos, omit_empty


def queue_applications(part: Partition, queue: Queue) -> list[Json]:
    return [application_info(part, app) for _, app in sorted(queue.applications.items())]


def application_view(part: Partition, app_id: str) -> Json:
    """A live or recently completed application, or one refused at submission (with the reason)."""
    completed = (a for a in reversed(part.lifecycle.completed) if a.app_id == app_id)
    app = part.applications.get(app_id) or next(completed, None)
    if app is not None:
        return application_info(part, app)
    rejected = part.rejected.get(app_id)
    if rejected is not None:
        return rejected_application_info(part, rejected)
    raise NotFound(f"application {app_id!r} not found in partition {part.name!r}")


ACTIVE_STATUSES = ("new", "accepted", "running", "completing", "failing", "resuming")
_STATES_ALLOWED = "Only following application states are allowed: active, rejected, completed"
_STATUSES_ALLOWED = "Only following active statuses are allowed: " + ",".join(ACTIVE_STATUSES)


def applications_in_state(part: Partition, state: str, status: str = "") -> list[Json]:
    """As YuniKorn's /applications/{state}: `active` (every application the partition holds, or only
    those in `status`), `rejected`, or `completed`; any other state is a bad request."""
    wanted, status = state.lower(), status.lower()
    if wanted == "active":
        return [application_info(part, a) for a in _active(part.applications.values(), status)]
    if wanted == "rejected":
        return [rejected_application_info(part, r) for r in part.rejected.values()]
    if wanted == "completed":
        return [application_info(part, a) for a in part.lifecycle.completed]
    raise BadRequest(_STATES_ALLOWED)


def queue_applications_in_state(part: Partition, queue: Queue, state: str, status: str = "") -> list[Json]:
    """/queue/{q}/applications/{state}: only `active` exists, with the same `status` filter."""
    if state.lower() != "active":
        raise BadRequest("Only following application states are allowed: active")
    return [application_info(part, a) for a in _active(queue.applications.values(), status.lower())]


def _active(apps: Iterable[Application], status: str) -> list[Application]:
    if status and status not in ACTIVE_STATUSES:
        raise BadRequest(_STATUSES_ALLOWED)
    return sorted((a for a in apps if not status or a.state.value.lower() == status), key=lambda a: a.app_id)


def queue_application(part: Partition, queue: Queue, app_id: str) -> Json:
    app = queue.applications.get(app_id)
    if app is None:
        raise NotFound(f"application {app_id!r} not found in queue {queue.full_name!r}")
    return application_info(part, app)


def rejected_application_info(part: Partition, rejected: RejectedApplication) -> Json:
    """An application refused at submission, in the shape of any other: nothing used or pending."""
    when = nanos(rejected.time)
    info: Json = {
        "applicationID": rejected.app_id,
        "partition": part.name,
        "queueName": rejected.queue_name,
        "submissionTime": when,
        "finishedTime": when,
        "applicationState": "Rejected",
        "user": rejected.user,
        "groups": list(rejected.groups),
        "rejectedMessage": rejected.message,
        "stateLog": [
            {"time": when, "applicationState": "New"},
            {"time": when, "applicationState": "Rejected"},
        ],
        "resourceHistory": {},
        "pykorn": {"tags": dict(rejected.tags), "lastStateChangeTime": when},
    }
    return omit_empty(info, "groups", "rejectedMessage")


def application_info(part: Partition, app: Application) -> Json:
    """ApplicationDAOInfo; pykorn's own fields (the tags, when the state last changed) under "pykorn"."""
    reserved = sorted(
        f"{node}|{key}" for (app_id, key), node in part.reservations.items() if app_id == app.app_id
    )
    info: Json = {
        "applicationID": app.app_id,
        "usedResource": int64_json(app.allocated),
        "maxUsedResource": dict(app.max_allocated),
        "pendingResource": int64_json(app.pending),
        "partition": part.name,
        "queueName": app.queue.full_name,
        "submissionTime": nanos(app.submission_time),
        "finishedTime": nanos(app.finished_time) if app.finished_time is not None else None,
        "requests": [ask_info(part, a) for a in app.sorted_asks()],
        "allocations": [allocation_info(a) for _, a in sorted(app.allocations.items())],
        "applicationState": app.state.value,
        "user": app.user,
        "groups": list(app.groups),
        "rejectedMessage": "",
        "stateLog": [{"time": nanos(t), "applicationState": state.value} for t, state in app.state_log],
        "placeholderData": placeholder_data(app) if app.gang is not None else [],
        "hasReserved": bool(reserved),
        "reservations": reserved,
        "maxRequestPriority": app.ask_max_priority if app.asks else 0,
        "startTime": int(app.start_time * 1000) if app.start_time is not None else 0,  # ms, as upstream
        "resourceHistory": app.usage.dao() if app.usage is not None else {},
        "pykorn": {"tags": dict(app.tags), "lastStateChangeTime": nanos(app.state_time)},
    }
    return omit_empty(info, *_APP_OMIT_EMPTY)


_APP_OMIT_EMPTY = (
    "usedResource", "maxUsedResource", "pendingResource", "submissionTime", "finishedTime", "requests",
    "allocations", "applicationState", "user", "groups", "rejectedMessage", "stateLog", "placeholderData",
    "hasReserved", "reservations", "maxRequestPriority", "startTime",
)  # fmt: skip


def placeholder_data(app: Application) -> list[Json]:
    """Per task group, as YuniKorn's PlaceholderDataDAOInfo: placeholders asked, replaced, timed out."""
    assert app.gang is not None
    return [
        {
            "taskGroupName": group.name,
            "count": group.count,
            "minResource": int64_json(group.min_resource),
            "replaced": group.replaced,
            "timedout": group.timed_out,
        }
        for _, group in sorted(app.gang.groups.items())
    ]


def ask_info(part: Partition, ask: Allocation) -> Json:
    """AllocationAskDAOInfo; pykorn's own fields (preemption flags, the node reserved) under "pykorn"."""
    info: Json = {
        "allocationKey": ask.key,
        "allocationTags": dict(ask.tags),
        "requestTime": nanos(ask.create_time),
        "resource": int64_json(ask.resource),
        "priority": str(ask.priority),
        "requiredNodeId": ask.required_node,
        "applicationId": ask.application_id,
        "placeholder": ask.placeholder,
        "taskGroupName": ask.task_group,
        # YuniKorn's per-ask allocation log; here the latest reasons the ask is still pending.
        "allocationLog": [
            {"message": message, "lastOccurrence": nanos(when), "count": count}
            for message, when, count in (
                (ask.pending_reason, ask.reason_time, ask.reason_count),
                (ask.preemption_reason, ask.preemption_time, ask.preemption_count),
            )
            if message
        ],
        "triggeredPreemption": ask.triggered_preemption,
        "triggeredScaleUp": ask.triggered_scale_up,
        "originator": ask.originator,
        "schedulingAttempted": ask.reason_count > 0 or ask.triggered_preemption,
        "pykorn": {
            "allowPreemptSelf": ask.allow_preempt_self,
            "allowPreemptOther": ask.allow_preempt_other,
            "preempting": ask.preempting,
            "reservedOn": part.reservations.get(ask.ref, ""),
            # FAILED: waits for a node only (more nodes would help); SKIPPED: held by its queue,
            # limits, gang or required node. As sent to the RM (si UpdateContainerSchedulingState).
            "waiting": ask.waiting,
        },
    }
    return omit_empty(info, *(k for k in info if k not in ("allocationKey", "pykorn")))
