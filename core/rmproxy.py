"""RMProxy: the registry of resource managers and the translation between si messages and the core.

Inbound, each si message is checked item by item; what is malformed is answered at once on the
stream it came from (the engine never sees it), the rest becomes one engine command. Outbound, the
engine's result batches become si responses routed to the owning RM's current stream of that kind;
while an RM has no stream of a kind open, its responses wait in a bounded backlog.

Partition names are qualified with the rmID here (`default` -> `[rm-1]default`) and unqualified on
the way out, so each RM sees only its own names and can address only its own partitions.
"""

from __future__ import annotations

import asyncio
from collections import deque
from collections.abc import Callable
from dataclasses import dataclass, field
from enum import StrEnum
from typing import Any

import structlog

from core.cluster import internal_partition_name
from core.commands import (
    AppAdd,
    AppRemove,
    Command,
    NodeAction,
    NodeChange,
    PreviewConfig,
    RegisterRM,
    ReleaseRequest,
    UpdateAllocations,
    UpdateApplications,
    UpdateConfig,
    UpdateNodes,
)
from core.config import ConfigError, SchedulerConfig, load_config
from core.config.schema import DEFAULT_PARTITION
from core.objects.allocation import TAG_CREATION_TIME, TAG_FOREIGN, Allocation
from core.resources import INT64_MAX, Resource
from core.results import ResultBatch
from si.v1 import si_pb2

log = structlog.get_logger("pykorn.rmproxy")

NODE_PARTITION_ATTRIBUTE = "si/node-partition"
BACKLOG_LIMIT = 100_000  # responses kept per RM and stream kind while no stream is open


class InvalidRequest(ValueError):
    """A unary request refused as a whole; the server answers INVALID_ARGUMENT with this text."""


class _BadItem(ValueError):
    """One item of a stream message that cannot be used; its text goes back as the rejection reason."""


class StreamKind(StrEnum):
    ALLOCATION = "allocation"
    APPLICATION = "application"
    NODE = "node"


_END = None  # queued on a ResponseStream to end it


@dataclass(eq=False)
class ResponseStream:
    """The outbound half of one bidirectional call."""

    kind: StreamKind
    queue: asyncio.Queue[Any] = field(default_factory=asyncio.Queue)
    rm_id: str = ""
    closed: bool = False

    def send(self, message: Any) -> None:
        if not self.closed:
            self.queue.put_nowait(message)

    def end(self) -> None:
        if not self.closed:
            self.closed = True
            self.queue.put_nowait(_END)

    async def next(self) -> Any:
        """The next response, or None once the stream has ended."""
        return await self.queue.get()


@dataclass
class _RMRoute:
    current: dict[StreamKind, ResponseStream] = field(default_factory=dict)
    # The si message of every pending ask, by (application, key): the allocation sent back is that
    # message with its nodeID set, which costs far less than building a new one.
    asks: dict[tuple[str, str], si_pb2.Allocation] = field(default_factory=dict)
    backlog: dict[StreamKind, deque[Any]] = field(
        default_factory=lambda: {k: deque(maxlen=BACKLOG_LIMIT) for k in StreamKind}
    )


class RMProxy:
    def __init__(self, default_config_text: str, submit: Callable[[Command], None] | None = None) -> None:
        self._default_config_text = default_config_text
        self._submit = submit
        self._routes: dict[str, _RMRoute] = {}
        self._streams: set[ResponseStream] = set()

    def bind_engine(self, submit: Callable[[Command], None]) -> None:
        self._submit = submit

    def _send_command(self, command: Command) -> None:
        assert self._submit is not None, "rmproxy is not bound to an engine"
        self._submit(command)

    def is_registered(self, rm_id: str) -> bool:
        return rm_id in self._routes

    # Unary calls ------------------------------------------------------------------------------
    async def register(self, request: si_pb2.RegisterResourceManagerRequest) -> None:
        rm_id = request.rmID
        if not rm_id:
            raise InvalidRequest("rmID is missing: every resource manager must identify itself")
        config = self._parse_config(request.config)
        await self._await_engine(lambda reply: RegisterRM(rm_id, config, reply))
        route = self._routes.setdefault(rm_id, _RMRoute())
        for backlog in route.backlog.values():
            backlog.clear()  # answers about the previous registration's state mean nothing now
        route.asks.clear()
        log.info(
            "resource manager registered",
            rmID=rm_id,
            version=request.version,
            policyGroup=request.policyGroup,
        )

    async def update_configuration(
        self, request: si_pb2.UpdateConfigurationRequest
    ) -> si_pb2.UpdateConfigurationResponse:
        rm_id = request.rmID
        if not rm_id:
            return si_pb2.UpdateConfigurationResponse(accepted=False, errors=["rmID is missing"])
        if not self.is_registered(rm_id):
            return si_pb2.UpdateConfigurationResponse(
                accepted=False,
                errors=[f"resource manager {rm_id} is not registered: call RegisterResourceManager first"],
            )
        try:
            loaded = load_config(request.config)
        except ConfigError as exc:
            log.warning("configuration rejected", rmID=rm_id, errors=[str(p) for p in exc.problems])
            return si_pb2.UpdateConfigurationResponse(accepted=False, errors=[str(p) for p in exc.problems])
        try:
            await self._await_engine(lambda reply: UpdateConfig(rm_id, loaded.config, reply))
        except Exception as exc:
            return si_pb2.UpdateConfigurationResponse(accepted=False, errors=[str(exc)])
        return si_pb2.UpdateConfigurationResponse(accepted=True, warnings=[str(w) for w in loaded.warnings])

    async def dry_run_configuration(
        self, request: si_pb2.UpdateConfigurationRequest
    ) -> si_pb2.DryRunConfigurationResponse:
        """What applying the configuration now would preempt; nothing is changed."""
        rm_id = request.rmID
        if not self.is_registered(rm_id):
            reason = "rmID is missing" if not rm_id else f"resource manager {rm_id} is not registered"
            return si_pb2.DryRunConfigurationResponse(valid=False, errors=[reason])
        try:
            loaded = load_config(request.config)
        except ConfigError as exc:
            return si_pb2.DryRunConfigurationResponse(valid=False, errors=[str(p) for p in exc.problems])
        future: asyncio.Future[object] = asyncio.get_running_loop().create_future()
        self._send_command(PreviewConfig(rm_id, loaded.config, future.set_result))
        result = await future
        if isinstance(result, Exception):
            return si_pb2.DryRunConfigurationResponse(valid=False, errors=[repr(result)])
        return si_pb2.DryRunConfigurationResponse(
            valid=True,
            queues=[
                si_pb2.QuotaPreemptionPreview(
                    partitionName=p.partition,
                    queue=p.queue,
                    target=_si_resource(p.target),
                    achievable=_si_resource(p.achievable),
                    delaySeconds=p.delay,
                    willRun=p.will_run,
                    reason=p.reason,
                    victims=[_preview_victim(v, queue) for v, queue in p.victims],
                )
                for p in result  # type: ignore[attr-defined]
            ],
        )

    def _parse_config(self, text: str) -> SchedulerConfig:
        try:
            loaded = load_config(text or self._default_config_text)
        except ConfigError as exc:
            raise InvalidRequest(str(exc)) from None
        for warning in loaded.warnings:
            log.warning("configuration warning", detail=str(warning))
        return loaded.config

    async def _await_engine(self, build: Callable[[Callable[[Exception | None], None]], Command]) -> None:
        future: asyncio.Future[None] = asyncio.get_running_loop().create_future()

        def reply(error: Exception | None) -> None:
            if future.done():
                return
            if error is None:
                future.set_result(None)
            else:
                future.set_exception(error)

        self._send_command(build(reply))
        await future

    # Streams ----------------------------------------------------------------------------------
    def open_stream(self, kind: StreamKind) -> ResponseStream:
        stream = ResponseStream(kind)
        self._streams.add(stream)
        return stream

    def close_stream(self, stream: ResponseStream) -> None:
        """The RM stopped sending: detach the stream and end it after what is already queued."""
        self._streams.discard(stream)
        route = self._routes.get(stream.rm_id)
        if route is not None and route.current.get(stream.kind) is stream:
            del route.current[stream.kind]
        stream.end()

    def close_all_streams(self) -> None:
        for stream in list(self._streams):
            self.close_stream(stream)

    def _bind(self, stream: ResponseStream, rm_id: str) -> str | None:
        """Attach the stream to the RM; returns a rejection reason when that is not allowed."""
        if not rm_id:
            return "rmID is missing: set it to the ID used in RegisterResourceManager"
        if not self.is_registered(rm_id):
            return f"resource manager {rm_id} is not registered: call RegisterResourceManager first"
        if stream.rm_id and stream.rm_id != rm_id:
            return f"this stream belongs to resource manager {stream.rm_id}; open another stream for {rm_id}"
        route = self._routes[rm_id]
        if route.current.get(stream.kind) is not stream:
            stream.rm_id = rm_id
            route.current[stream.kind] = stream
            backlog = route.backlog[stream.kind]
            while backlog:
                stream.send(backlog.popleft())
        return None

    def _route(self, rm_id: str, kind: StreamKind, message: Any) -> None:
        route = self._routes.get(rm_id)
        if route is None:
            return
        stream = route.current.get(kind)
        if stream is not None and not stream.closed:
            stream.send(message)
            return
        backlog = route.backlog[kind]
        if len(backlog) == backlog.maxlen:
            log.warning("response backlog full, dropping the oldest", rmID=rm_id, stream=kind.value)
        backlog.append(message)

    # Inbound: allocations -------------------------------------------------------------------------
    def on_allocation_request(self, msg: si_pb2.AllocationRequest, stream: ResponseStream) -> None:
        releases = list(msg.releases.allocationsToRelease) if msg.HasField("releases") else []
        if not msg.allocations and not releases:
            stream.send(
                _alloc_rejections(
                    [("", "", "empty AllocationRequest: it carries no allocations and no releases")]
                )
            )
            return
        refusal = self._bind(stream, msg.rmID)
        if refusal is not None:
            items = [(a.allocationKey, a.applicationID, refusal) for a in msg.allocations]
            items += [(r.allocationKey, r.applicationID, refusal) for r in releases]
            stream.send(_alloc_rejections(items))
            log.warning("allocation request refused", rmID=msg.rmID, reason=refusal)
            return
        rm_id = msg.rmID
        allocations: list[Allocation] = []
        rejected: list[tuple[str, str, str]] = []
        asks = self._routes[rm_id].asks
        for item in msg.allocations:
            try:
                alloc = _allocation_from_si(rm_id, item)
            except _BadItem as exc:
                rejected.append((item.allocationKey, item.applicationID, str(exc)))
                continue
            allocations.append(alloc)
            if not alloc.node_id:
                asks.setdefault((alloc.application_id, alloc.key), item)
        release_requests = []
        for rel in releases:
            if not rel.applicationID and not rel.allocationKey:
                rejected.append(("", "", "release names neither an applicationID nor an allocationKey"))
                continue
            release_requests.append(
                ReleaseRequest(
                    _partition(rm_id, rel.partitionName), rel.applicationID, rel.allocationKey, rel.message
                )
            )
            _forget_asks(asks, rel.applicationID, rel.allocationKey)
        if rejected:
            for key, app_id, reason in rejected:
                log.warning(
                    "allocation rejected", rmID=rm_id, applicationID=app_id, allocationKey=key, reason=reason
                )
            stream.send(_alloc_rejections(rejected))
        if allocations or release_requests:
            self._send_command(UpdateAllocations(rm_id, tuple(allocations), tuple(release_requests)))

    # Inbound: applications --------------------------------------------------------------------------
    def on_application_request(self, msg: si_pb2.ApplicationRequest, stream: ResponseStream) -> None:
        if not msg.new and not msg.remove:
            stream.send(
                _app_rejections([("", "empty ApplicationRequest: it adds and removes no application")])
            )
            return
        refusal = self._bind(stream, msg.rmID)
        if refusal is not None:
            apps = [a.applicationID for a in msg.new] + [r.applicationID for r in msg.remove]
            stream.send(_app_rejections([(app_id, refusal) for app_id in apps]))
            log.warning("application request refused", rmID=msg.rmID, reason=refusal)
            return
        rm_id = msg.rmID
        adds, removes, rejected = [], [], []
        for add in msg.new:
            if not add.applicationID:
                rejected.append(("", "applicationID is empty"))
                continue
            adds.append(
                AppAdd(
                    app_id=add.applicationID,
                    partition=_partition(rm_id, add.partitionName),
                    queue=add.queueName,
                    user=add.ugi.user,
                    groups=tuple(add.ugi.groups),
                    tags=dict(add.tags),
                )
            )
        for remove in msg.remove:
            if not remove.applicationID:
                rejected.append(("", "applicationID of the application to remove is empty"))
                continue
            removes.append(AppRemove(remove.applicationID, _partition(rm_id, remove.partitionName)))
            _forget_asks(self._routes[rm_id].asks, remove.applicationID, "")
        if rejected:
            stream.send(_app_rejections(rejected))
        if adds or removes:
            self._send_command(UpdateApplications(rm_id, tuple(adds), tuple(removes)))

    # Inbound: nodes ---------------------------------------------------------------------------------
    def on_node_request(self, msg: si_pb2.NodeRequest, stream: ResponseStream) -> None:
        if not msg.nodes:
            stream.send(_node_rejections([("", "empty NodeRequest: it carries no nodes")]))
            return
        refusal = self._bind(stream, msg.rmID)
        if refusal is not None:
            stream.send(_node_rejections([(n.nodeID, refusal) for n in msg.nodes]))
            log.warning("node request refused", rmID=msg.rmID, reason=refusal)
            return
        changes, rejected = [], []
        for info in msg.nodes:
            try:
                changes.append(_node_change_from_si(msg.rmID, info))
            except _BadItem as exc:
                rejected.append((info.nodeID, str(exc)))
        if rejected:
            for node_id, reason in rejected:
                log.warning("node rejected", rmID=msg.rmID, nodeID=node_id, reason=reason)
            stream.send(_node_rejections(rejected))
        if changes:
            self._send_command(UpdateNodes(msg.rmID, tuple(changes)))

    def reject_unhandled(self, stream: ResponseStream, reason: str) -> None:
        """Answer a message that failed inside the core, so the sender is not left waiting."""
        text = f"internal error while handling the request: {reason}"
        if stream.kind is StreamKind.ALLOCATION:
            stream.send(_alloc_rejections([("", "", text)]))
        elif stream.kind is StreamKind.APPLICATION:
            stream.send(_app_rejections([("", text)]))
        else:
            stream.send(_node_rejections([("", text)]))

    # Outbound -----------------------------------------------------------------------------------
    def deliver(self, batches: list[ResultBatch]) -> None:
        """The engine's sink: turn each batch into si responses on the RM's streams."""
        for batch in batches:
            if batch.has_node_news():
                self._route(batch.rm_id, StreamKind.NODE, _node_response(batch))
            if batch.has_application_news():
                self._route(batch.rm_id, StreamKind.APPLICATION, _app_response(batch))
            if batch.has_allocation_news():
                route = self._routes.get(batch.rm_id)
                asks = route.asks if route is not None else {}
                self._route(batch.rm_id, StreamKind.ALLOCATION, _alloc_response(batch, asks))


# si -> core ------------------------------------------------------------------------------------


def _partition(rm_id: str, name: str) -> str:
    return internal_partition_name(rm_id, name or DEFAULT_PARTITION)


def display_partition(internal: str, rm_id: str) -> str:
    prefix = f"[{rm_id}]"
    return internal[len(prefix) :] if internal.startswith(prefix) else internal


def _resource(res: si_pb2.Resource, what: str) -> Resource:
    values = {name: quantity.value for name, quantity in res.resources.items()}
    if "" in values:
        raise _BadItem(f"{what} has a resource with an empty name")
    for name, value in values.items():
        if value < 0:
            raise _BadItem(f"{what} asks for a negative amount of {name} ({value})")
    return Resource(values)


def _allocation_from_si(rm_id: str, item: si_pb2.Allocation) -> Allocation:
    # Hot path (every ask): checks first, messages built only for what is refused.
    key = item.allocationKey
    if not key:
        raise _BadItem("allocationKey is empty")
    tags = dict(item.allocationTags)
    foreign = TAG_FOREIGN in tags
    if not item.applicationID and not foreign:
        raise _BadItem(f"allocation {key} names no applicationID")
    if foreign and not item.nodeID:
        raise _BadItem(f"foreign allocation {key} names no nodeID")
    if not item.HasField("resourcePerAlloc") or not item.resourcePerAlloc.resources:
        raise _BadItem(f"allocation {key} has no resourcePerAlloc")
    resource = _resource(item.resourcePerAlloc, f"allocation {key}")
    if resource.is_zero():
        raise _BadItem(f"allocation {key} asks for zero resources")
    policy = item.preemptionPolicy
    return Allocation(
        key=key,
        application_id=item.applicationID,
        partition=_partition(rm_id, item.partitionName),
        resource=resource,
        priority=item.priority,
        tags=tags,
        node_id=item.nodeID,
        task_group=item.taskGroupName,
        placeholder=item.placeholder and bool(item.taskGroupName),
        originator=item.originator,
        allow_preempt_self=policy.allowPreemptSelf,
        allow_preempt_other=policy.allowPreemptOther,
        create_time=_creation_time(tags) if tags else 0.0,
        foreign=foreign,
    )


def _creation_time(tags: dict[str, str]) -> float:
    """The task's creation time from the creationTime tag (Unix seconds); 0 when absent or unusable."""
    raw = tags.get(TAG_CREATION_TIME, "")
    try:
        value = float(raw)
    except ValueError:
        return 0.0
    return value if 0 < value < INT64_MAX else 0.0


_NODE_ACTIONS = {
    si_pb2.NodeInfo.CREATE: NodeAction.CREATE,
    si_pb2.NodeInfo.CREATE_DRAIN: NodeAction.CREATE_DRAIN,
    si_pb2.NodeInfo.UPDATE: NodeAction.UPDATE,
    si_pb2.NodeInfo.DRAIN_NODE: NodeAction.DRAIN,
    si_pb2.NodeInfo.DRAIN_TO_SCHEDULABLE: NodeAction.DRAIN_TO_SCHEDULABLE,
    si_pb2.NodeInfo.DECOMISSION: NodeAction.DECOMMISSION,
}


def _node_change_from_si(rm_id: str, info: si_pb2.NodeInfo) -> NodeChange:
    if not info.nodeID:
        raise _BadItem("nodeID is empty")
    action = _NODE_ACTIONS.get(info.action)
    if action is None:
        raise _BadItem(f"node {info.nodeID} has no action (expected CREATE, UPDATE, DRAIN_NODE, ...)")
    capacity = None
    if info.HasField("schedulableResource"):
        capacity = _resource(info.schedulableResource, f"node {info.nodeID}")
    if action in (NodeAction.CREATE, NodeAction.CREATE_DRAIN) and (capacity is None or capacity.is_zero()):
        raise _BadItem(f"node {info.nodeID} reports no schedulableResource")
    attributes = dict(info.attributes)
    return NodeChange(
        node_id=info.nodeID,
        action=action,
        partition=_partition(rm_id, attributes.get(NODE_PARTITION_ATTRIBUTE, "")),
        attributes=attributes,
        capacity=capacity,
    )


# core -> si ------------------------------------------------------------------------------------


def _si_resource(res: Resource) -> si_pb2.Resource:
    return si_pb2.Resource(resources={k: si_pb2.Quantity(value=v) for k, v in res.items()})


def allocation_to_si(alloc: Allocation, rm_id: str) -> si_pb2.Allocation:
    return si_pb2.Allocation(
        allocationKey=alloc.key,
        allocationTags=alloc.tags,
        resourcePerAlloc=_si_resource(alloc.resource),
        priority=alloc.priority,
        nodeID=alloc.node_id,
        applicationID=alloc.application_id,
        partitionName=display_partition(alloc.partition, rm_id),
        taskGroupName=alloc.task_group,
        placeholder=alloc.placeholder,
        originator=alloc.originator,
        preemptionPolicy=si_pb2.PreemptionPolicy(
            allowPreemptSelf=alloc.allow_preempt_self, allowPreemptOther=alloc.allow_preempt_other
        ),
    )


def _forget_asks(asks: dict[tuple[str, str], si_pb2.Allocation], app_id: str, key: str) -> None:
    if key:
        asks.pop((app_id, key), None)
    else:
        for ref in [r for r in asks if r[0] == app_id]:
            del asks[ref]


def _allocated_wire(
    alloc: Allocation, rm_id: str, asks: dict[tuple[str, str], si_pb2.Allocation]
) -> si_pb2.Allocation:
    """The ask's own message with its node set; a full translation when it was not kept."""
    wire = asks.pop((alloc.application_id, alloc.key), None)
    if wire is None:
        return allocation_to_si(alloc, rm_id)
    wire.nodeID = alloc.node_id
    if not wire.partitionName:
        wire.partitionName = display_partition(alloc.partition, rm_id)
    return wire


def _preview_victim(alloc: Allocation, queue: str) -> si_pb2.PreviewVictim:
    return si_pb2.PreviewVictim(
        queue=queue,
        applicationID=alloc.application_id,
        allocationKey=alloc.key,
        nodeID=alloc.node_id,
        resource=_si_resource(alloc.resource),
        priority=alloc.priority,
    )


def _alloc_response(
    batch: ResultBatch, asks: dict[tuple[str, str], si_pb2.Allocation]
) -> si_pb2.AllocationResponse:
    for rejected in batch.rejected_allocations:
        asks.pop((rejected.app_id, rejected.key), None)
    return si_pb2.AllocationResponse(
        new=[_allocated_wire(a, batch.rm_id, asks) for a in batch.new_allocations],
        released=[
            si_pb2.AllocationRelease(
                partitionName=display_partition(r.partition, batch.rm_id),
                applicationID=r.app_id,
                allocationKey=r.key,
                terminationType=si_pb2.TerminationType.Value(r.termination.value),
                message=r.message,
            )
            for r in batch.released
        ],
        rejectedAllocations=[
            si_pb2.RejectedAllocation(allocationKey=r.key, applicationID=r.app_id, reason=r.reason)
            for r in batch.rejected_allocations
        ],
    )


def _app_response(batch: ResultBatch) -> si_pb2.ApplicationResponse:
    return si_pb2.ApplicationResponse(
        accepted=[si_pb2.AcceptedApplication(applicationID=a) for a in batch.accepted_apps],
        rejected=[
            si_pb2.RejectedApplication(applicationID=r.app_id, reason=r.reason) for r in batch.rejected_apps
        ],
        updated=[
            si_pb2.UpdatedApplication(
                applicationID=u.app_id,
                state=u.state,
                stateTransitionTimestamp=int(u.time * 1e9),
                message=u.message,
            )
            for u in batch.updated_apps
        ],
    )


def _node_response(batch: ResultBatch) -> si_pb2.NodeResponse:
    return si_pb2.NodeResponse(
        accepted=[si_pb2.AcceptedNode(nodeID=n) for n in batch.accepted_nodes],
        rejected=[si_pb2.RejectedNode(nodeID=r.key, reason=r.reason) for r in batch.rejected_nodes],
    )


def _alloc_rejections(items: list[tuple[str, str, str]]) -> si_pb2.AllocationResponse:
    return si_pb2.AllocationResponse(
        rejectedAllocations=[
            si_pb2.RejectedAllocation(allocationKey=key, applicationID=app_id, reason=reason)
            for key, app_id, reason in items
        ]
    )


def _app_rejections(items: list[tuple[str, str]]) -> si_pb2.ApplicationResponse:
    return si_pb2.ApplicationResponse(
        rejected=[si_pb2.RejectedApplication(applicationID=app_id, reason=reason) for app_id, reason in items]
    )


def _node_rejections(items: list[tuple[str, str]]) -> si_pb2.NodeResponse:
    return si_pb2.NodeResponse(
        rejected=[si_pb2.RejectedNode(nodeID=node_id, reason=reason) for node_id, reason in items]
    )
