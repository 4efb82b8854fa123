"""Read-only views of scheduler state, shaped as YuniKorn's ws/v1 DAO objects (same JSON field names).

Transport-free: the REST server turns these dicts into responses. Each function reads state once,
synchronously, so when called from the core's event loop between engine steps it sees a consistent
snapshot (the engine is the only writer and never yields mid-command).
"""

from __future__ import annotations

from typing import Any

from core.cluster import ClusterContext
from core.events import Event, EventLog
from core.objects.allocation import Allocation
from core.objects.application import Application
from core.objects.node import Node
from core.objects.partition import Partition
from core.objects.queue import Queue
from core.objects.rejected_apps import RejectedApplication
from core.resources import Resource

Json = dict[str, Any]


class NotFound(LookupError):
    """The object a request names does not exist; the message says which."""


class BadRequest(ValueError):
    """The request cannot be answered as asked; the message says what to change."""


def _res(resource: Resource | None) -> dict[str, int]:
    return resource.as_dict() if resource is not None else {}


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
    return {
        "clusterId": part.rm_id,
        "name": part.name,
        "capacity": {
            "capacity": _res(part.total_capacity),
            "usedCapacity": used.as_dict(),
            "utilization": _utilization(used, part.total_capacity),
        },
        "nodeSortingPolicy": {"type": policy.type, "resourceWeights": dict(policy.resource_weights)},
        "totalNodes": len(part.nodes),
        "applications": {"total": len(part.applications), **by_state},
        "totalContainers": sum(len(app.allocations) for app in part.applications.values()),
        "state": "Draining" if part.draining else "Active",
    }


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
        "maxRunningApps": queue.max_applications,
        "runningApps": queue.running_apps,
        "currentPriority": queue.current_priority,
        "isPriorityFence": props.is_priority_fence,
        "priorityOffset": props.priority_offset,
        "quotaPreemption": _quota_state(part, queue),
        "childNames": sorted(queue.children),
    }
    if recurse:
        info["children"] = [queue_info(part, child, True) for _, child in sorted(queue.children.items())]
    return info


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


def find_node(part: Partition, node_id: str) -> Node:
    node = part.nodes.get(node_id)
    if node is None:
        raise NotFound(f"node {node_id!r} not found in partition {part.name!r}")
    return node


def node_info(part: Partition, node: Node) -> Json:
    mine = [a for a in node.allocations.values() if not a.foreign]
    foreign = [a for a in node.allocations.values() if a.foreign]
    return {
        "nodeID": node.node_id,
        "hostName": node.attributes.get("si/hostname", ""),
        "rackName": node.attributes.get("si/rackname", ""),
        "attributes": dict(node.attributes),
        "capacity": _res(node.capacity),
        "allocated": _res(node.allocated),
        "occupied": _res(node.occupied),
        "available": _res(node.available),
        "utilized": _utilization(node.allocated + node.occupied, node.capacity),
        "allocations": [allocation_info(a) for a in sorted(mine, key=lambda a: a.key)],
        "foreignAllocations": [allocation_info(a) for a in sorted(foreign, key=lambda a: a.key)],
        "schedulable": node.schedulable,
        "isReserved": node.is_reserved,
        "reservations": sorted(f"{app}|{key}" for app, key in node.reservations),
    }


def allocation_info(alloc: Allocation) -> Json:
    return {
        "allocationKey": alloc.key,
        "allocationTags": dict(alloc.tags),
        "resource": _res(alloc.resource),
        "priority": str(alloc.priority),
        "nodeId": alloc.node_id,
        "applicationId": alloc.application_id,
        "requestTime": int(alloc.create_time * 1e9),
        "allocationTime": int(alloc.allocated_time * 1e9),
        "placeholder": alloc.placeholder,
        "taskGroupName": alloc.task_group,
        "preempted": alloc.releasing,
        "originator": alloc.originator,
        "placeholderUsed": alloc.placeholder_used,
    }


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


def applications_in_state(part: Partition, state: str) -> list[Json]:
    """`active` (New, Accepted, Running, Completing), `completed` (Completed), or an exact state name."""
    wanted = state.lower()
    groups = {"active": {"new", "accepted", "running", "completing", "resuming"}}
    states = groups.get(wanted, {wanted})
    apps = [a for a in part.applications.values() if a.state.value.lower() in states]
    apps += [a for a in part.lifecycle.completed if a.state.value.lower() in states]
    views = [application_info(part, app) for app in apps]
    if "rejected" in states:
        views += [rejected_application_info(part, r) for r in part.rejected.values()]
    return sorted(views, key=lambda v: v["applicationID"])


def rejected_application_info(part: Partition, rejected: RejectedApplication) -> Json:
    """An application refused at submission, in the shape of any other: nothing used or pending."""
    return {
        "applicationID": rejected.app_id,
        "usedResource": {},
        "pendingResource": {},
        "partition": part.name,
        "queueName": rejected.queue_name,
        "submissionTime": int(rejected.time * 1e9),
        "allocations": [],
        "requests": [],
        "applicationState": "Rejected",
        "user": rejected.user,
        "groups": list(rejected.groups),
        "tags": dict(rejected.tags),
        "lastStateChangeTime": int(rejected.time * 1e9),
        "rejectedMessage": rejected.message,
    }


def application_info(part: Partition, app: Application) -> Json:
    return {
        "applicationID": app.app_id,
        "usedResource": _res(app.allocated),
        "pendingResource": _res(app.pending),
        "partition": part.name,
        "queueName": app.queue.full_name,
        "submissionTime": int(app.submission_time * 1e9),
        "allocations": [allocation_info(a) for _, a in sorted(app.allocations.items())],
        "requests": [ask_info(part, a) for a in app.sorted_asks()],
        "applicationState": app.state.value,
        "user": app.user,
        "groups": list(app.groups),
        "tags": dict(app.tags),
        "lastStateChangeTime": int(app.state_time * 1e9),
        "rejectedMessage": "",
        **({"placeholderData": placeholder_data(app)} if app.gang is not None else {}),
    }


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
    return {
        "allocationKey": ask.key,
        "allocationTags": dict(ask.tags),
        "requestTime": int(ask.create_time * 1e9),
        "resource": _res(ask.resource),
        "priority": str(ask.priority),
        "requiredNodeId": ask.required_node,
        "applicationId": ask.application_id,
        "placeholder": ask.placeholder,
        "taskGroupName": ask.task_group,
        "allowPreemptSelf": ask.allow_preempt_self,
        "allowPreemptOther": ask.allow_preempt_other,
        "preempting": ask.preempting,
        "reservedOn": part.reservations.get(ask.ref, ""),
        # YuniKorn's per-ask allocation log; here the latest reason the ask is still pending.
        "allocationLog": [
            {"message": message, "lastOccurrence": int(when * 1e9), "count": count}
            for message, when, count in (
                (ask.pending_reason, ask.reason_time, ask.reason_count),
                (ask.preemption_reason, ask.preemption_time, ask.preemption_count),
            )
            if message
        ],
    }


def event_record(event_id: int, event: Event) -> Json:
    """An si EventRecord as JSON; enums by name, and the number the event has in the ring."""
    return {
        "id": event_id,
        "type": event.type,
        "objectID": event.object_id,
        "referenceID": event.reference_id,
        "message": event.message,
        "timestampNano": int(event.time * 1e9),
        "eventChangeType": event.change_type,
        "eventChangeDetail": event.change_detail,
        "resource": dict(event.resource),
        "rmID": event.rm_id,
    }


def event_batch(events: EventLog, instance: str, start: int, count: int) -> Json:
    return {
        "InstanceUUID": instance,
        "LowestID": events.lowest_id,
        "HighestID": events.highest_id,
        "EventRecords": [event_record(i, e) for i, e in events.since(start, count)],
    }


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
