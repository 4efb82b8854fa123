"""Builders for si messages, so callers write resources as plain dicts."""

from __future__ import annotations

from collections.abc import Mapping

from si.v1 import si_pb2


def resource(values: Mapping[str, int]) -> si_pb2.Resource:
    return si_pb2.Resource(resources={k: si_pb2.Quantity(value=v) for k, v in values.items()})


def resource_dict(res: si_pb2.Resource) -> dict[str, int]:
    return {k: q.value for k, q in res.resources.items()}


def node(
    node_id: str,
    capacity: Mapping[str, int] | None = None,
    action: si_pb2.NodeInfo.ActionFromRM = si_pb2.NodeInfo.CREATE,
    attributes: Mapping[str, str] | None = None,
) -> si_pb2.NodeInfo:
    info = si_pb2.NodeInfo(nodeID=node_id, action=action, attributes=dict(attributes or {}))
    if capacity is not None:
        info.schedulableResource.CopyFrom(resource(capacity))
    return info


def ask(
    app_id: str,
    key: str,
    resources: Mapping[str, int],
    priority: int = 0,
    tags: Mapping[str, str] | None = None,
    partition: str = "",
    node_id: str = "",
    allow_preempt_self: bool = True,
    allow_preempt_other: bool = True,
    originator: bool = False,
    task_group: str = "",
    placeholder: bool = False,
) -> si_pb2.Allocation:
    return si_pb2.Allocation(
        allocationKey=key,
        applicationID=app_id,
        resourcePerAlloc=resource(resources),
        priority=priority,
        allocationTags=dict(tags or {}),
        partitionName=partition,
        nodeID=node_id,
        originator=originator,
        taskGroupName=task_group,
        placeholder=placeholder,
        preemptionPolicy=si_pb2.PreemptionPolicy(
            allowPreemptSelf=allow_preempt_self, allowPreemptOther=allow_preempt_other
        ),
    )


def application(
    app_id: str,
    queue: str,
    partition: str = "",
    user: str = "nobody",
    groups: tuple[str, ...] = (),
    tags: Mapping[str, str] | None = None,
    placeholder_ask: Mapping[str, int] | None = None,
    gang_style: str = "",
    placeholder_timeout_ms: int = 0,
) -> si_pb2.AddApplicationRequest:
    """An application; a gang-scheduled one names its whole gang's size (`placeholder_ask`), Soft or
    Hard, and how long its placeholders may wait (0: the core's default, 15 minutes)."""
    return si_pb2.AddApplicationRequest(
        applicationID=app_id,
        queueName=queue,
        partitionName=partition,
        ugi=si_pb2.UserGroupInformation(user=user, groups=list(groups)),
        tags=dict(tags or {}),
        placeholderAsk=resource(placeholder_ask) if placeholder_ask is not None else None,
        gangSchedulingStyle=gang_style,
        executionTimeoutMilliSeconds=placeholder_timeout_ms,
    )


def release(
    app_id: str,
    key: str = "",
    partition: str = "",
    message: str = "",
    termination: si_pb2.TerminationType = si_pb2.STOPPED_BY_RM,
) -> si_pb2.AllocationRelease:
    return si_pb2.AllocationRelease(
        applicationID=app_id,
        allocationKey=key,
        partitionName=partition,
        terminationType=termination,
        message=message,
    )
