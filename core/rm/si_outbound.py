"""core -> si: the engine's results as si responses, and the rejections rmproxy answers at once.

Partitions go out by the name their RM gives them (PartitionKey.name), so each RM sees only its own
names. An allocation goes back as the RM's own ask message with its nodeID set when that
message was kept (AskCache), which costs far less than building a new one: the allocation response is
assembled from its items' bytes (core.rm.wire_frames).
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

from core.objects.allocation import Allocation
from core.resources import Resource, int64_values
from core.rm.ask_cache import AskCache
from core.rm.wire_frames import FramedResponse, framed, tag
from core.scheduler.results import ResultBatch, Waiting
from si.v1 import si_pb2

if TYPE_CHECKING:
    from core.scheduler.preemption.dry_run import QuotaPreview


def resource_to_si(res: Resource) -> si_pb2.Resource:
    return si_pb2.Resource(resources={k: si_pb2.Quantity(value=v) for k, v in int64_values(res).items()})


def allocation_to_si(alloc: Allocation) -> si_pb2.Allocation:
    return si_pb2.Allocation(
        allocationKey=alloc.key,
        allocationTags=alloc.tags,
        resourcePerAlloc=resource_to_si(alloc.resource),
        priority=alloc.priority,
        nodeID=alloc.node_id,
        applicationID=alloc.application_id,
        partitionName=alloc.partition.name,
        taskGroupName=alloc.task_group,
        placeholder=alloc.placeholder,
        originator=alloc.originator,
        preemptionPolicy=si_pb2.PreemptionPolicy(
            allowPreemptSelf=alloc.allow_preempt_self, allowPreemptOther=alloc.allow_preempt_other
        ),
    )


# AllocationResponse's fields, and Allocation's that an answered ask gets, as their wire tags.
_NEW, _RELEASED, _REJECTED, _STATES = tag(1), tag(2), tag(5), tag(100)
_NODE_ID, _PARTITION_NAME = tag(8), tag(10)


def allocated_wire(alloc: Allocation, asks: AskCache) -> bytes:
    """The allocation as an item of AllocationResponse.new: the ask's own message with its node and
    partition set (after its fields: the last value read wins), or a full translation when it was not
    kept."""
    held = asks.take(alloc.application_id, alloc.key)
    if held is None:
        return framed(_NEW, allocation_to_si(alloc).SerializeToString())
    return framed(_NEW, held + _placed_fields(alloc.node_id, alloc.partition.name))


# The node and partition fields of answered asks, by node and partition: a cluster has a few thousand
# nodes, and each is encoded once (the map starts again past _PLACED_MOST, nodes come and go).
_PLACED: dict[tuple[str, str], bytes] = {}
_PLACED_MOST = 65_536


def _placed_fields(node_id: str, partition: str) -> bytes:
    fields = _PLACED.get((node_id, partition))
    if fields is None:
        if len(_PLACED) >= _PLACED_MOST:
            _PLACED.clear()
        fields = framed(_NODE_ID, node_id.encode()) + framed(_PARTITION_NAME, partition.encode())
        _PLACED[node_id, partition] = fields
    return fields


def preview_victim(alloc: Allocation, queue: str) -> si_pb2.PreviewVictim:
    return si_pb2.PreviewVictim(
        queue=queue,
        applicationID=alloc.application_id,
        allocationKey=alloc.key,
        nodeID=alloc.node_id,
        resource=resource_to_si(alloc.resource),
        priority=alloc.priority,
    )


def allocation_response(batch: ResultBatch, asks: AskCache) -> FramedResponse:
    for rejected in batch.rejected_allocations:
        asks.forget(rejected.app_id, rejected.key)
    response = FramedResponse()
    for alloc in batch.new_allocations:
        response.add(allocated_wire(alloc, asks))
    for gone in batch.released:
        release = si_pb2.AllocationRelease(
            partitionName=gone.partition.name,
            applicationID=gone.app_id,
            allocationKey=gone.key,
            terminationType=gone.termination.value,
            message=gone.message,
        )
        response.add(framed(_RELEASED, release.SerializeToString()))
    for refused in batch.rejected_allocations:
        refusal = si_pb2.RejectedAllocation(
            allocationKey=refused.key, applicationID=refused.app_id, reason=refused.reason
        )
        response.add(framed(_REJECTED, refusal.SerializeToString()))
    for s in batch.scheduling_states:
        state = si_pb2.UpdateContainerSchedulingStateRequest(
            applicationID=s.app_id, allocationKey=s.key, state=_WAITING[s.waiting], reason=s.reason
        )
        response.add(framed(_STATES, state.SerializeToString()))
    return response


_WAITING = {
    Waiting.NO_NODE: si_pb2.UpdateContainerSchedulingStateRequest.FAILED,
    Waiting.HELD: si_pb2.UpdateContainerSchedulingStateRequest.SKIPPED,
}


def application_response(batch: ResultBatch) -> si_pb2.ApplicationResponse:
    return si_pb2.ApplicationResponse(
        accepted=[si_pb2.AcceptedApplication(applicationID=a) for a in batch.accepted_apps],
        rejected=[
            si_pb2.RejectedApplication(applicationID=r.app_id, reason=r.reason) for r in batch.rejected_apps
        ],
        updated=[
            si_pb2.UpdatedApplication(
                applicationID=u.app_id,
                state=u.state.value,
                stateTransitionTimestamp=int(u.time * 1e9),
                message=u.message,
            )
            for u in batch.updated_apps
        ],
    )


def node_response(batch: ResultBatch) -> si_pb2.NodeResponse:
    return si_pb2.NodeResponse(
        accepted=[si_pb2.AcceptedNode(nodeID=n) for n in batch.accepted_nodes],
        rejected=[si_pb2.RejectedNode(nodeID=r.key, reason=r.reason) for r in batch.rejected_nodes],
    )


def allocation_rejections(items: list[tuple[str, str, str]]) -> si_pb2.AllocationResponse:
    return si_pb2.AllocationResponse(
        rejectedAllocations=[
            si_pb2.RejectedAllocation(allocationKey=key, applicationID=app_id, reason=reason)
            for key, app_id, reason in items
        ]
    )


def application_rejections(items: list[tuple[str, str]]) -> si_pb2.ApplicationResponse:
    return si_pb2.ApplicationResponse(
        rejected=[si_pb2.RejectedApplication(applicationID=app_id, reason=reason) for app_id, reason in items]
    )


def node_rejections(items: list[tuple[str, str]]) -> si_pb2.NodeResponse:
    return si_pb2.NodeResponse(
        rejected=[si_pb2.RejectedNode(nodeID=node_id, reason=reason) for node_id, reason in items]
    )


def split_response(message: Any, limit: int = 4 * 1024 * 1024 - 64 * 1024) -> list[Any]:
    """A response of repeated items as several of the same type, each at most `limit` bytes, the items
    in their order (each field's items in turn, in the fields' order): what one message said, for a
    client whose receive limit is lower. Fields that are not lists of messages (none in today's
    responses) go whole in the first part. An item larger than the limit goes alone in its own part."""
    first = type(message)()
    lists = []
    for descriptor in sorted(message.DESCRIPTOR.fields, key=lambda f: f.number):
        entry = descriptor.message_type
        if descriptor.is_repeated and entry is not None and not entry.GetOptions().map_entry:
            lists.append(descriptor)
        elif descriptor.is_repeated:
            getattr(first, descriptor.name).MergeFrom(getattr(message, descriptor.name))
        elif entry is not None:
            if message.HasField(descriptor.name):
                getattr(first, descriptor.name).CopyFrom(getattr(message, descriptor.name))
        else:
            setattr(first, descriptor.name, getattr(message, descriptor.name))
    parts: list[Any] = []
    current, size = first, first.ByteSize()
    for descriptor in lists:
        tag = _varint_length(descriptor.number << 3)
        for item in getattr(message, descriptor.name):
            item_size = item.ByteSize()
            framed = tag + _varint_length(item_size) + item_size
            if size and size + framed > limit:
                parts.append(current)
                current, size = type(message)(), 0
            getattr(current, descriptor.name).append(item)
            size += framed
    parts.append(current)
    return parts


def _varint_length(value: int) -> int:
    length = 1
    while value >= 0x80:
        value >>= 7
        length += 1
    return length


def preview_response(previews: list[QuotaPreview]) -> si_pb2.DryRunConfigurationResponse:
    """A valid dry run's answer: per queue whose max would be enforced, the target, what preemption can
    achieve, when it would run, and its victims."""
    return si_pb2.DryRunConfigurationResponse(
        valid=True,
        queues=[
            si_pb2.QuotaPreemptionPreview(
                partitionName=p.partition,
                queue=p.queue,
                target=resource_to_si(p.target),
                achievable=resource_to_si(p.achievable),
                delaySeconds=p.delay,
                willRun=p.will_run,
                reason=p.reason,
                victims=[preview_victim(v, queue) for v, queue in p.victims],
            )
            for p in previews
        ],
    )
