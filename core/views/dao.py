"""Read-only views of scheduler state, shaped as YuniKorn's ws/v1 DAO objects (same JSON field names).

Transport-free: the REST server turns these dicts into responses. Each function reads state once,
synchronously, so when called from the core's event loop between engine steps it sees a consistent
snapshot (the engine is the only writer and never yields mid-command).
"""

from __future__ import annotations

from collections.abc import Iterable
from typing import Any

from core.config.properties import PREEMPTION_DISABLED, PREEMPTION_FENCE
from core.objects.allocation import Allocation
from core.objects.application import Application, AppState
from core.objects.node import Node
from core.objects.queue import Queue
from core.objects.rejected_apps import RejectedApplication
from core.resources import Resource, int64_values
from core.scheduler.cluster import ClusterContext
from core.scheduler.partition import Partition
from si.v1.tags import ATTR_HOSTNAME, ATTR_RACK_NAME

Json = dict[str, Any]


class NotFound(LookupError):
    """The object a request names does not exist; the message says which."""


class BadRequest(ValueError):
    """The request cannot be answered as asked; the message says what to change."""


def _res(resource: Resource | None) -> dict[str, int]:
    return int64_values(resource) if resource is not None else {}


def _omit_empty(info: Json, *keys: str) -> Json:
    """Drop the keys upstream tags `omitempty` when they hold Go's zero value (false, 0, "", empty)."""
    for key in keys:
        if key in info and not info[key]:
            del info[key]
    return info


def _nanos(seconds: float) -> int:
    return int(seconds * 1e9)


def abs_used(capacity: Resource | None, used: Resource | None) -> dict[str, int]:
    """YuniKorn's CalculateAbsUsedCapacity: per type in both, used as a whole percentage of capacity
    (0 when nothing is used, 100 when there is no capacity, at most 2^31-1)."""
    if capacity is None or used is None:
        return {}
    out: dict[str, int] = {}
    for name, cap in capacity.items():
        if name not in used:
            continue
        value = used.get(name)
        out[name] = 0 if value <= 0 else 100 if cap <= 0 else min(int(value / cap * 100), 2**31 - 1)
    return out


def duration_text(seconds: float) -> str:
    """A duration as Go's time.Duration prints it ("0s", "500ms", "30s", "1m30s", "1h0m0s")."""
    if seconds == 0:
        return "0s"
    sign, seconds = ("-", -seconds) if seconds < 0 else ("", seconds)
    if seconds < 1:
        for unit, scale in (("ms", 1e3), ("µs", 1e6), ("ns", 1e9)):
            if seconds * scale >= 1 or unit == "ns":
                return f"{sign}{_trim(seconds * scale)}{unit}"
    hours, rest = divmod(seconds, 3600)
    minutes, secs = divmod(rest, 60)
    text = f"{int(hours)}h" if hours else ""
    text += f"{int(minutes)}m" if hours or minutes else ""
    return f"{sign}{text}{_trim(secs)}s"


def _trim(value: float) -> str:
    return f"{value:.9f}".rstrip("0").rstrip(".")


def find_partition(context: ClusterContext, name: str) -> Partition:
    """By the name the RM uses ("default") or the internal one ("[rmID]default")."""
    for part in context.partitions.values():
        if name in (part.name, str(part.key)):
            return part
    raise NotFound(f"partition {name!r} not found")


def partitions(context: ClusterContext) -> list[Json]:
    return [partition_info(part) for part in context.partitions.values()]


def partition_info(part: Partition) -> Json:
    used = Resource()
    for node in part.nodes.values():
        used.add_in_place(node.allocated)
    by_state: dict[str, int] = {}
    for app in part.applications.values():
        by_state[app.state.value] = by_state.get(app.state.value, 0) + 1
    policy = part.config.node_sort_policy
    capacity = {
        "capacity": _res(part.total_capacity),
        "usedCapacity": int64_values(used),
        "utilization": _utilization(used, part.total_capacity),
    }
    sorting = {"type": policy.type, "resourceWeights": dict(policy.resource_weights)}
    info: Json = {
        "clusterId": part.rm_id,
        "name": part.name,
        "capacity": _omit_empty(capacity, "capacity", "usedCapacity", "utilization"),
        "nodeSortingPolicy": _omit_empty(sorting, "type", "resourceWeights"),
        "preemptionEnabled": part.config.preemption.enabled,
        "quotaPreemptionEnabled": part.config.preemption.quota_preemption_enabled,
        "totalNodes": len(part.nodes),
        "applications": {"total": len(part.applications), **by_state},
        "totalContainers": sum(len(app.allocations) for app in part.applications.values()),
        "state": "Draining" if part.draining else "Active",
        "lastStateTransitionTime": _nanos(part.state_time),
    }
    return _omit_empty(info, "totalNodes", "totalContainers", "state", "lastStateTransitionTime")


def _utilization(used: Resource, capacity: Resource) -> dict[str, int]:
    return {k: (used.get(k) * 100) // v for k, v in capacity.items() if v > 0}


def queue_tree(part: Partition) -> Json:
    return queue_info(part, part.root, recurse=True)


def find_queue(part: Partition, name: str) -> Queue:
    queue = part.find_queue(name)
    if queue is None:
        raise NotFound(f"queue {name!r} not found in partition {part.name!r}")
    return queue


def queue_info(part: Partition, queue: Queue, recurse: bool = False) -> Json:
    """PartitionQueueDAOInfo; pykorn's own fields (quota enforcement's state) under "pykorn"."""
    props = queue.props
    info: Json = {
        "queuename": queue.full_name,
        "status": queue.state.value,
        "partition": part.name,
        "pendingResource": _res(queue.pending),
        "maxResource": _res(queue.max),
        "guaranteedResource": _res(queue.guaranteed),
        "allocatedResource": _res(queue.allocated),
        "preemptingResource": _res(queue.preempting),
        "headroom": _res(queue.headroom()),
        "isLeaf": queue.is_leaf,
        "isManaged": queue.managed,
        "properties": dict(queue.effective_properties),
        "parent": queue.parent.full_name if queue.parent else "",
        "template": _template(queue),
        "childNames": [child.full_name for _, child in sorted(queue.children.items())],
        "absUsedCapacity": abs_used(queue.max, queue.allocated),
        "maxRunningApps": queue.max_applications,
        "runningApps": queue.running_apps,
        "currentPriority": queue.current_priority,
        "allocatingAcceptedApps": sorted(
            a.app_id for a in queue.applications.values() if a.state == AppState.ACCEPTED and a.allocations
        ),
        "sortingPolicy": props.sort_policy,
        "prioritySorting": props.sort_priority_enabled,
        "preemptionEnabled": props.preemption_policy != PREEMPTION_DISABLED,
        "isPreemptionFence": props.preemption_policy == PREEMPTION_FENCE,
        "preemptionDelay": duration_text(props.preemption_delay),
        "quotaPreemptionDelay": duration_text(props.quota_preemption_delay),
        "isPriorityFence": props.is_priority_fence,
        "priorityOffset": props.priority_offset,
        "pykorn": {"quotaPreemption": _quota_state(part, queue)},
    }
    if recurse:
        info["children"] = [queue_info(part, child, True) for _, child in sorted(queue.children.items())]
    return _omit_empty(info, *_QUEUE_OMIT_EMPTY)


_QUEUE_OMIT_EMPTY = (
    "status", "pendingResource", "maxResource", "guaranteedResource", "allocatedResource",
    "preemptingResource", "headroom", "properties", "parent", "template", "childNames", "absUsedCapacity",
    "maxRunningApps", "runningApps", "allocatingAcceptedApps", "sortingPolicy", "preemptionDelay",
    "quotaPreemptionDelay", "priorityOffset", "children",
)  # fmt: skip


def _template(queue: Queue) -> Json | None:
    """TemplateInfo: the child template a parent queue gives the dynamic queues made under it."""
    template = queue.child_template
    if template is None:
        return None
    info: Json = {
        "maxApplications": template.max_applications,
        "maxResource": _res(template.max),
        "guaranteedResource": _res(template.guaranteed),
        "properties": dict(template.properties),
    }
    return _omit_empty(info, "maxApplications", "maxResource", "guaranteedResource", "properties") or None


def _quota_state(part: Partition, queue: Queue) -> Json:
    """Where quota enforcement stands for this queue: waiting on its delay, running, or last outcome."""
    timer = queue.quota_timer
    return {
        "delaySeconds": queue.props.quota_preemption_delay,
        "pendingSince": timer,
        "firesAt": timer + queue.props.quota_preemption_delay if timer is not None else None,
        "running": len(queue.quota_running),
        "lastOutcome": dict(queue.quota_outcome) if queue.quota_outcome else None,
    }


def nodes(part: Partition) -> list[Json]:
    return [node_info(part, node) for _, node in sorted(part.nodes.items())]


def node_by_id(part: Partition, node_id: str) -> Node:
    node = part.nodes.get(node_id)
    if node is None:
        raise NotFound(f"node {node_id!r} not found in partition {part.name!r}")
    return node


def node_info(part: Partition, node: Node) -> Json:
    mine = [a for a in node.allocations.values() if not a.foreign]
    foreign = [a for a in node.allocations.values() if a.foreign]
    info: Json = {
        "nodeID": node.node_id,
        "hostName": node.attributes.get(ATTR_HOSTNAME, ""),
        "rackName": node.attributes.get(ATTR_RACK_NAME, ""),
        "attributes": dict(node.attributes),
        "capacity": _res(node.capacity),
        "allocated": _res(node.allocated),
        "occupied": _res(node.occupied),
        "available": _res(node.available),
        "utilized": _utilization(node.allocated + node.occupied, node.capacity),
        "allocations": [allocation_info(a) for a in sorted(mine, key=lambda a: a.key)],
        "foreignAllocations": [foreign_allocation_info(a) for a in sorted(foreign, key=lambda a: a.key)],
        "schedulable": node.schedulable,
        "isReserved": node.is_reserved,
        "reservations": sorted(f"{app}|{key}" for app, key in node.reservations),
    }
    return _omit_empty(info, *_NODE_OMIT_EMPTY)


_NODE_OMIT_EMPTY = (
    "hostName", "rackName", "attributes", "capacity", "allocated", "occupied", "available", "utilized",
    "allocations", "foreignAllocations", "reservations",
)  # fmt: skip


def allocation_info(alloc: Allocation) -> Json:
    info: Json = {
        "allocationKey": alloc.key,
        "allocationTags": dict(alloc.tags),
        "requestTime": _nanos(alloc.create_time),
        "allocationTime": _nanos(alloc.allocated_time),
        "allocationDelay": max(0, _nanos(alloc.allocated_time) - _nanos(alloc.create_time)),
        "resource": _res(alloc.resource),
        "priority": str(alloc.priority),
        "nodeId": alloc.node_id,
        "applicationId": alloc.application_id,
        "placeholder": alloc.placeholder,
        "placeholderUsed": alloc.placeholder_used,
        "taskGroupName": alloc.task_group,
        "preempted": alloc.releasing,
        "originator": alloc.originator,
    }
    return _omit_empty(info, *(k for k in info if k != "allocationKey"))


def foreign_allocation_info(alloc: Allocation) -> Json:
    """ForeignAllocationDAOInfo: a pod of another scheduler occupying a node (never preempted here)."""
    info: Json = {
        "allocationKey": alloc.key,
        "allocationTags": dict(alloc.tags),
        "allocationTime": _nanos(alloc.allocated_time),
        "resource": _res(alloc.resource),
        "priority": str(alloc.priority),
        "nodeId": alloc.node_id,
        "preemptable": False,
    }
    return _omit_empty(info, *(k for k in info if k != "allocationKey"))


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
    when = _nanos(rejected.time)
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
    return _omit_empty(info, "groups", "rejectedMessage")


def application_info(part: Partition, app: Application) -> Json:
    """ApplicationDAOInfo; pykorn's own fields (the tags, when the state last changed) under "pykorn"."""
    reserved = sorted(
        f"{node}|{key}" for (app_id, key), node in part.reservations.items() if app_id == app.app_id
    )
    info: Json = {
        "applicationID": app.app_id,
        "usedResource": _res(app.allocated),
        "maxUsedResource": dict(app.max_allocated),
        "pendingResource": _res(app.pending),
        "partition": part.name,
        "queueName": app.queue.full_name,
        "submissionTime": _nanos(app.submission_time),
        "finishedTime": _nanos(app.finished_time) if app.finished_time is not None else None,
        "requests": [ask_info(part, a) for a in app.sorted_asks()],
        "allocations": [allocation_info(a) for _, a in sorted(app.allocations.items())],
        "applicationState": app.state.value,
        "user": app.user,
        "groups": list(app.groups),
        "rejectedMessage": "",
        "stateLog": [{"time": _nanos(t), "applicationState": state.value} for t, state in app.state_log],
        "placeholderData": placeholder_data(app) if app.gang is not None else [],
        "hasReserved": bool(reserved),
        "reservations": reserved,
        "maxRequestPriority": app.ask_max_priority if app.asks else 0,
        "startTime": int(app.start_time * 1000) if app.start_time is not None else 0,  # ms, as upstream
        "resourceHistory": app.usage.dao() if app.usage is not None else {},
        "pykorn": {"tags": dict(app.tags), "lastStateChangeTime": _nanos(app.state_time)},
    }
    return _omit_empty(info, *_APP_OMIT_EMPTY)


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
            "minResource": _res(group.min_resource),
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
        "requestTime": _nanos(ask.create_time),
        "resource": _res(ask.resource),
        "priority": str(ask.priority),
        "requiredNodeId": ask.required_node,
        "applicationId": ask.application_id,
        "placeholder": ask.placeholder,
        "taskGroupName": ask.task_group,
        # YuniKorn's per-ask allocation log; here the latest reasons the ask is still pending.
        "allocationLog": [
            {"message": message, "lastOccurrence": _nanos(when), "count": count}
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
    return _omit_empty(info, *(k for k in info if k not in ("allocationKey", "pykorn")))


def config_source(context: ClusterContext, rm_id: str, default_text: str) -> str:
    """The queues.yaml text in force for an RM; with no rmID given, the only RM's, or the default."""
    if rm_id:
        config = context.configs.get(rm_id)
        if config is None:
            raise NotFound(f"resource manager {rm_id!r} is not registered")
        return config.source or default_text
    if len(context.configs) > 1:
        names = ", ".join(sorted(context.configs))
        raise BadRequest(f"several resource managers are registered ({names}); name one with ?rmID=")
    if not context.configs:
        return default_text
    return next(iter(context.configs.values())).source or default_text
