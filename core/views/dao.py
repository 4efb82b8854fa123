"""Read-only views of scheduler state, shaped as YuniKorn's ws/v1 DAO objects (same JSON field names):
partitions, queues, nodes and their allocations here, with the shapes every view shares (resources as
int64 maps, times in nanoseconds, Go's omitted empties, the two refusals); applications and their asks
in core.views.app_views.

Transport-free: the REST server turns these dicts into responses. Each function reads state once,
synchronously, so when called from the core's event loop between engine steps it sees a consistent
snapshot (the engine is the only writer and never yields mid-command).
"""

from __future__ import annotations

from typing import Any

from core.config.properties import PREEMPTION_DISABLED, PREEMPTION_FENCE
from core.objects.allocation import Allocation
from core.objects.application import AppState
from core.objects.node import Node
from core.objects.queue import Queue
from core.resources import Resource, int64_values
from core.scheduler.cluster import ClusterContext
from core.scheduler.partition import Partition
from si.v1.tags import ATTR_HOSTNAME, ATTR_RACK_NAME

Json = dict[str, Any]


class NotFound(LookupError):
    """The object a request names does not exist; the message says which."""


class BadRequest(ValueError):
    """The request cannot be answered as asked; the message says what to change."""


def int64_json(resource: Resource | None) -> dict[str, int]:
    return int64_values(resource) if resource is not None else {}


def omit_empty(info: Json, *keys: str) -> Json:
    """Drop the keys upstream tags `omitempty` when they hold Go's zero value (false, 0, "", empty)."""
    for key in keys:
        if key in info and not info[key]:
            del info[key]
    return info


def nanos(seconds: float) -> int:
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
        "capacity": int64_json(part.total_capacity),
        "usedCapacity": int64_values(used),
        "utilization": _utilization(used, part.total_capacity),
    }
    sorting = {"type": policy.type, "resourceWeights": dict(policy.resource_weights)}
    info: Json = {
        "clusterId": part.rm_id,
        "name": part.name,
        "capacity": omit_empty(capacity, "capacity", "usedCapacity", "utilization"),
        "nodeSortingPolicy": omit_empty(sorting, "type", "resourceWeights"),
        "preemptionEnabled": part.config.preemption.enabled,
        "quotaPreemptionEnabled": part.config.preemption.quota_preemption_enabled,
        "totalNodes": len(part.nodes),
        "applications": {"total": len(part.applications), **by_state},
        "totalContainers": sum(len(app.allocations) for app in part.applications.values()),
        "state": "Draining" if part.draining else "Active",
        "lastStateTransitionTime": nanos(part.state_time),
    }
    return omit_empty(info, "totalNodes", "totalContainers", "state", "lastStateTransitionTime")


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
        "pendingResource": int64_json(queue.pending),
        "maxResource": int64_json(queue.max),
        "guaranteedResource": int64_json(queue.guaranteed),
        "allocatedResource": int64_json(queue.allocated),
        "preemptingResource": int64_json(queue.preempting),
        "headroom": int64_json(queue.headroom()),
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
    return omit_empty(info, *_QUEUE_OMIT_EMPTY)


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
        "maxResource": int64_json(template.max),
        "guaranteedResource": int64_json(template.guaranteed),
        "properties": dict(template.properties),
    }
    return omit_empty(info, "maxApplications", "maxResource", "guaranteedResource", "properties") or None


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
        "capacity": int64_json(node.capacity),
        "allocated": int64_json(node.allocated),
        "occupied": int64_json(node.occupied),
        "available": int64_json(node.available),
        "utilized": _utilization(node.allocated + node.occupied, node.capacity),
        "allocations": [allocation_info(a) for a in sorted(mine, key=lambda a: a.key)],
        "foreignAllocations": [foreign_allocation_info(a) for a in sorted(foreign, key=lambda a: a.key)],
        "schedulable": node.schedulable,
        "isReserved": node.is_reserved,
        "reservations": sorted(f"{app}|{key}" for app, key in node.reservations),
    }
    return omit_empty(info, *_NODE_OMIT_EMPTY)


_NODE_OMIT_EMPTY = (
    "hostName", "rackName", "attributes", "capacity", "allocated", "occupied", "available", "utilized",
    "allocations", "foreignAllocations", "reservations",
)  # fmt: skip


def allocation_info(alloc: Allocation) -> Json:
    info: Json = {
        "allocationKey": alloc.key,
        "allocationTags": dict(alloc.tags),
        "requestTime": nanos(alloc.create_time),
        "allocationTime": nanos(alloc.allocated_time),
        "allocationDelay": max(0, nanos(alloc.allocated_time) - nanos(alloc.create_time)),
        "resource": int64_json(alloc.resource),
        "priority": str(alloc.priority),
        "nodeId": alloc.node_id,
        "applicationId": alloc.application_id,
        "placeholder": alloc.placeholder,
        "placeholderUsed": alloc.placeholder_used,
        "taskGroupName": alloc.task_group,
        "preempted": alloc.releasing,
        "originator": alloc.originator,
    }
    return omit_empty(info, *(k for k in info if k != "allocationKey"))


def foreign_allocation_info(alloc: Allocation) -> Json:
    """ForeignAllocationDAOInfo: a pod of another scheduler occupying a node (never preempted here)."""
    info: Json = {
        "allocationKey": alloc.key,
        "allocationTags": dict(alloc.tags),
        "allocationTime": nanos(alloc.allocated_time),
        "resource": int64_json(alloc.resource),
        "priority": str(alloc.priority),
        "nodeId": alloc.node_id,
        "preemptable": False,
    }
    return omit_empty(info, *(k for k in info if k != "allocationKey"))


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
