"""RMProxy: the registry of resource managers, their streams, and the way between si and the engine.

Inbound, each si message is checked item by item (core.si_inbound translates and checks each item);
what is malformed is answered at once on the stream it came from (the engine never sees it), the
rest becomes one engine command. Outbound, the engine's result batches become si responses
(core.si_outbound) routed to the owning RM's current stream of that kind; while an RM has no stream
of a kind open, its responses wait in a bounded backlog. RMs that stay away past the grace period
are removed; registrations and reloads are applied in order per RM.

Partition names are qualified with the rmID on the way in and unqualified on the way out, so each RM
sees only its own names and can address only its own partitions.
"""

from __future__ import annotations

import asyncio
import time
from collections import deque
from collections.abc import Callable
from dataclasses import dataclass, field
from enum import StrEnum
from typing import Any

import structlog

from core.commands import (
    AppAdd,
    AppRemove,
    Command,
    PreviewConfig,
    RegisterRM,
    ReleaseRequest,
    UnregisterRM,
    UpdateAllocations,
    UpdateApplications,
    UpdateConfig,
    UpdateNodes,
)
from core.config import ConfigError, LoadedConfig, SchedulerConfig, load_config
from core.config.yaml_reader import Problem
from core.limits import DEFAULT_LIMITS, Limits, TokenBucket
from core.objects.allocation import Allocation
from core.results import ResultBatch
from core.si_inbound import (
    BadItem,
    allocation_from_si,
    application_problem,
    node_change_from_si,
    over_long,
    partition_of,
    release_problem,
)
from core.si_outbound import (
    PendingAsks,
    allocation_rejections,
    allocation_response,
    application_rejections,
    application_response,
    forget_ask,
    node_rejections,
    node_response,
    preview_victim,
    resource_to_si,
)
from si.v1 import si_pb2

log = structlog.get_logger("pykorn.rmproxy")

BACKLOG_LIMIT = 100_000  # responses kept per RM and stream kind while no stream is open
DEFAULT_GRACE_PERIOD = 60.0  # seconds an RM with no stream open keeps its state


class InvalidRequest(ValueError):
    """A unary request refused as a whole; the server answers INVALID_ARGUMENT with this text."""


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
    # A copy of the si message of every pending ask, by application and key: the allocation sent back
    # is that message with its nodeID set, which costs far less than building a new one. (A copy, not
    # the message itself: with upb a sub-message keeps its whole parent message's memory alive.)
    # An ask is here from the moment it is sent until the core allocates or rejects it or the RM
    # withdraws it, so the size of an application's entry is its pending asks
    # (max_pending_asks_per_application).
    asks: PendingAsks = field(default_factory=dict)
    # Items per second on each kind of stream (Limits.rate_items_per_second).
    rates: dict[StreamKind, TokenBucket] = field(default_factory=dict)
    backlog: dict[StreamKind, deque[Any]] = field(
        default_factory=lambda: {k: deque(maxlen=BACKLOG_LIMIT) for k in StreamKind}
    )


class RMProxy:
    def __init__(
        self,
        default_config_text: str,
        submit: Callable[[Command], None] | None = None,
        grace_period: float = DEFAULT_GRACE_PERIOD,
        limits: Limits = DEFAULT_LIMITS,
        clock: Callable[[], float] = time.monotonic,
    ) -> None:
        self._default_config_text = default_config_text
        self.limits = limits
        self._clock = clock  # for the rate limit only
        self._submit = submit
        self._routes: dict[str, _RMRoute] = {}
        self._streams: set[ResponseStream] = set()
        # An RM whose last stream closed keeps its state this long (a network blip, a shim restarting
        # its streams); if none of its streams is back by then, its partitions are removed.
        self.grace_period = grace_period
        self._grace_timers: dict[str, asyncio.TimerHandle] = {}
        self._registering: dict[str, int] = {}  # RMs with a registration under way (how many)
        self._config_locks: dict[str, asyncio.Lock] = {}  # registrations and reloads, in order per RM
        self._stopping = False

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
        too_long = over_long(self.limits.max_id_length, "max_id_length", rmID=rm_id)
        if too_long:
            raise InvalidRequest(too_long)
        # The RM is back: its grace timer must not fire while this registration is under way, or
        # the removal would land after the registration and leave it half there.
        self._cancel_grace(rm_id)
        self._registering[rm_id] = self._registering.get(rm_id, 0) + 1
        try:
            async with self._config_lock(rm_id):
                config = await self._parse_config(request.config)
                await self._await_engine(lambda reply: RegisterRM(rm_id, config, reply))
        except Exception:
            previous = self._routes.get(rm_id)
            if previous is not None and not previous.current and not self._stopping:
                self._start_grace(rm_id)  # refused: what it had before is on the clock again
            raise
        finally:
            self._registering[rm_id] -= 1
            if not self._registering[rm_id]:
                del self._registering[rm_id]
        route = self._routes.setdefault(rm_id, _RMRoute())
        for backlog in route.backlog.values():
            backlog.clear()  # answers about the previous registration's state mean nothing now
        route.asks.clear()
        log.info(
            "resource manager registered",
            rmID=rm_id,
            version=self.limits.clip(request.version),
            policyGroup=self.limits.clip(request.policyGroup),
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
                errors=[
                    f"resource manager {self.limits.clip(rm_id)} is not registered: "
                    "call RegisterResourceManager first"
                ],
            )
        # One at a time per RM: configurations are read in worker threads, and two sent one after the
        # other must be applied in that order, whichever finishes reading first.
        async with self._config_lock(rm_id):
            try:
                loaded = await self._load_config(request.config)
            except ConfigError as exc:
                problems = [str(p) for p in exc.problems]
                log.warning("configuration rejected", rmID=rm_id, errors=problems)
                return si_pb2.UpdateConfigurationResponse(accepted=False, errors=problems)
            try:
                await self._await_engine(lambda reply: UpdateConfig(rm_id, loaded.config, reply))
            except Exception as exc:
                return si_pb2.UpdateConfigurationResponse(accepted=False, errors=[str(exc)])
        return si_pb2.UpdateConfigurationResponse(accepted=True, warnings=[str(w) for w in loaded.warnings])

    def _config_lock(self, rm_id: str) -> asyncio.Lock:
        lock = self._config_locks.get(rm_id)
        if lock is None:
            lock = self._config_locks[rm_id] = asyncio.Lock()
        return lock

    async def dry_run_configuration(
        self, request: si_pb2.UpdateConfigurationRequest
    ) -> si_pb2.DryRunConfigurationResponse:
        """What applying the configuration now would preempt; nothing is changed."""
        rm_id = request.rmID
        if not self.is_registered(rm_id):
            shown = self.limits.clip(rm_id)
            reason = "rmID is missing" if not rm_id else f"resource manager {shown} is not registered"
            return si_pb2.DryRunConfigurationResponse(valid=False, errors=[reason])
        try:
            loaded = await self._load_config(request.config)
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
                    target=resource_to_si(p.target),
                    achievable=resource_to_si(p.achievable),
                    delaySeconds=p.delay,
                    willRun=p.will_run,
                    reason=p.reason,
                    victims=[preview_victim(v, queue) for v, queue in p.victims],
                )
                for p in result  # type: ignore[attr-defined]
            ],
        )

    async def _load_config(self, text: str) -> LoadedConfig:
        """load_config within the size limit, and off the event loop: a large configuration takes
        seconds to read, and the streams of every RM keep being served meanwhile."""
        most = self.limits.max_config_bytes
        if len(text) > most or len(text.encode("utf-8")) > most:
            size = len(text.encode("utf-8"))
            message = f"the configuration is {size:,} bytes, over the limit of {most:,} (max_config_bytes)"
            raise ConfigError([Problem("", 0, message)])
        return await asyncio.to_thread(load_config, text)

    async def _parse_config(self, text: str) -> SchedulerConfig:
        try:
            loaded = await self._load_config(text or self._default_config_text)
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
            if not route.current and not self._stopping:
                self._start_grace(stream.rm_id)
        stream.end()

    def close_all_streams(self) -> None:
        self._stopping = True  # shutting down: nobody is going away, the core is
        for stream in list(self._streams):
            self.close_stream(stream)

    def _start_grace(self, rm_id: str) -> None:
        self._cancel_grace(rm_id)
        loop = asyncio.get_running_loop()
        self._grace_timers[rm_id] = loop.call_later(self.grace_period, self._grace_over, rm_id)
        log.info("resource manager has no stream open", rmID=rm_id, graceSeconds=self.grace_period)

    def _cancel_grace(self, rm_id: str) -> None:
        timer = self._grace_timers.pop(rm_id, None)
        if timer is not None:
            timer.cancel()

    def _grace_over(self, rm_id: str) -> None:
        self._grace_timers.pop(rm_id, None)
        route = self._routes.get(rm_id)
        if route is None or route.current or rm_id in self._registering:
            return
        del self._routes[rm_id]
        self._send_command(UnregisterRM(rm_id))
        log.warning(
            "resource manager stayed away past the grace period; its state is removed",
            rmID=rm_id,
            graceSeconds=self.grace_period,
        )

    def bind_on_open(self, stream: ResponseStream, rm_id: str) -> None:
        """Bind a stream its RM named when opening it; an RM not registered binds on its first message."""
        if self.is_registered(rm_id):
            self._bind(stream, rm_id)
            log.debug("stream bound on open", rmID=rm_id, stream=stream.kind.value)

    def _bind(self, stream: ResponseStream, rm_id: str) -> str | None:
        """Attach the stream to the RM; returns a rejection reason when that is not allowed."""
        if not rm_id:
            return "rmID is missing: set it to the ID used in RegisterResourceManager"
        if not self.is_registered(rm_id):
            shown = self.limits.clip(rm_id)
            return f"resource manager {shown} is not registered: call RegisterResourceManager first"
        if stream.rm_id and stream.rm_id != rm_id:
            shown = self.limits.clip(rm_id)
            return f"this stream belongs to resource manager {stream.rm_id}; open another stream for {shown}"
        route = self._routes[rm_id]
        if route.current.get(stream.kind) is not stream:
            self._cancel_grace(rm_id)
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

    # Inbound: limits ------------------------------------------------------------------------------
    def _admit(self, rm_id: str, kind: StreamKind, items: int) -> tuple[int, str]:
        """How many of a message's items (the first ones) the rate limit lets in now, and the reason
        given for the others."""
        limits = self.limits
        if limits.rate_items_per_second <= 0:
            return items, ""
        now = self._clock()
        rates = self._routes[rm_id].rates
        bucket = rates.get(kind)
        if bucket is None:
            bucket = rates[kind] = TokenBucket(limits.rate_items_per_second, limits.rate_burst, now)
        admitted = bucket.take(items, now)
        if admitted == items:
            return items, ""
        wait = bucket.wait_for(items - admitted)
        log.warning("rate limit exceeded", rmID=rm_id, stream=kind.value, items=items, admitted=admitted)
        return admitted, (
            f"rate limit exceeded: resource manager {rm_id} may send {limits.rate_items_per_second:g} "
            f"items a second on its {kind.value} stream, in bursts of up to {limits.rate_burst:,} "
            f"(rate_items_per_second, rate_burst); this item was not processed: retry it in "
            f"{max(wait, 0.001):.3f}s or later"
        )

    # Inbound: allocations -------------------------------------------------------------------------
    def on_allocation_request(self, msg: si_pb2.AllocationRequest, stream: ResponseStream) -> None:
        releases = list(msg.releases.allocationsToRelease) if msg.HasField("releases") else []
        if not msg.allocations and not releases:
            stream.send(
                allocation_rejections(
                    [("", "", "empty AllocationRequest: it carries no allocations and no releases")]
                )
            )
            return
        clip = self.limits.clip
        refusal = self._bind(stream, msg.rmID)
        if refusal is not None:
            items = [(clip(a.allocationKey), clip(a.applicationID), refusal) for a in msg.allocations]
            items += [(clip(r.allocationKey), clip(r.applicationID), refusal) for r in releases]
            stream.send(allocation_rejections(items))
            log.warning("allocation request refused", rmID=clip(msg.rmID), reason=refusal)
            return
        rm_id = msg.rmID
        limits = self.limits
        admitted, rate_reason = self._admit(
            rm_id, StreamKind.ALLOCATION, len(msg.allocations) + len(releases)
        )
        allocations: list[Allocation] = []
        rejected: list[tuple[str, str, str]] = []
        asks = self._routes[rm_id].asks
        for item in msg.allocations:
            if admitted <= 0:
                rejected.append((clip(item.allocationKey), clip(item.applicationID), rate_reason))
                continue
            admitted -= 1
            try:
                alloc = allocation_from_si(rm_id, item, limits)
                app_asks = asks.get(alloc.application_id)
                if app_asks is not None and alloc.key in app_asks:
                    # Refused here, not by the core: the core's answer would also take the pending
                    # ask's entry with it, and the count of pending asks would go wrong.
                    raise BadItem(
                        f"allocation key {alloc.key} already exists in application {alloc.application_id}"
                        " as a pending ask (or one the core has not answered yet)"
                    )
                if not alloc.node_id:
                    pending = len(app_asks or ())
                    if pending >= limits.max_pending_asks_per_application:
                        raise BadItem(
                            f"application {alloc.application_id} already has {pending:,} pending "
                            f"asks, the limit (max_pending_asks_per_application): send this ask again "
                            "once some are allocated or released"
                        )
                    if app_asks is None:
                        app_asks = asks[alloc.application_id] = {}
                    # A copy: under upb an ask kept from a message keeps the whole message alive.
                    kept = si_pb2.Allocation()
                    kept.CopyFrom(item)
                    app_asks[alloc.key] = kept
            except BadItem as exc:
                rejected.append((clip(item.allocationKey), clip(item.applicationID), str(exc)))
                continue
            allocations.append(alloc)
        release_requests = []
        for rel in releases:
            if admitted <= 0:
                rejected.append((clip(rel.allocationKey), clip(rel.applicationID), rate_reason))
                continue
            admitted -= 1
            reason = release_problem(rel, limits)
            if reason:
                rejected.append((clip(rel.allocationKey), clip(rel.applicationID), reason))
                continue
            release_requests.append(
                ReleaseRequest(
                    partition_of(rm_id, rel.partitionName), rel.applicationID, rel.allocationKey, rel.message
                )
            )
            forget_ask(asks, rel.applicationID, rel.allocationKey)
        if rejected:
            for key, app_id, reason in rejected:
                if reason != rate_reason:  # those are logged once, as "rate limit exceeded"
                    log.warning(
                        "allocation rejected",
                        rmID=rm_id,
                        applicationID=app_id,
                        allocationKey=key,
                        reason=reason,
                    )
            stream.send(allocation_rejections(rejected))
        if allocations or release_requests:
            self._send_command(UpdateAllocations(rm_id, tuple(allocations), tuple(release_requests)))

    # Inbound: applications --------------------------------------------------------------------------
    def on_application_request(self, msg: si_pb2.ApplicationRequest, stream: ResponseStream) -> None:
        if not msg.new and not msg.remove:
            stream.send(
                application_rejections([("", "empty ApplicationRequest: it adds and removes no application")])
            )
            return
        clip = self.limits.clip
        refusal = self._bind(stream, msg.rmID)
        if refusal is not None:
            apps = [a.applicationID for a in msg.new] + [r.applicationID for r in msg.remove]
            stream.send(application_rejections([(clip(app_id), refusal) for app_id in apps]))
            log.warning("application request refused", rmID=clip(msg.rmID), reason=refusal)
            return
        rm_id = msg.rmID
        admitted, rate_reason = self._admit(rm_id, StreamKind.APPLICATION, len(msg.new) + len(msg.remove))
        adds, removes, rejected = [], [], []
        for add in msg.new:
            if admitted <= 0:
                rejected.append((clip(add.applicationID), rate_reason))
                continue
            admitted -= 1
            reason = application_problem(add, self.limits)
            if reason:
                rejected.append((clip(add.applicationID), reason))
                continue
            adds.append(
                AppAdd(
                    app_id=add.applicationID,
                    partition=partition_of(rm_id, add.partitionName),
                    queue=add.queueName,
                    user=add.ugi.user,
                    groups=tuple(add.ugi.groups),
                    tags=dict(add.tags),
                )
            )
        for remove in msg.remove:
            if admitted <= 0:
                rejected.append((clip(remove.applicationID), rate_reason))
                continue
            admitted -= 1
            if not remove.applicationID:
                rejected.append(("", "applicationID of the application to remove is empty"))
                continue
            reason = over_long(
                self.limits.max_id_length,
                "max_id_length",
                applicationID=remove.applicationID,
                partitionName=remove.partitionName,
            )
            if reason:
                rejected.append(
                    (clip(remove.applicationID), f"removal of {clip(remove.applicationID)}: {reason}")
                )
                continue
            removes.append(AppRemove(remove.applicationID, partition_of(rm_id, remove.partitionName)))
            forget_ask(self._routes[rm_id].asks, remove.applicationID, "")
        if rejected:
            for app_id, reason in rejected:
                if reason != rate_reason:
                    log.warning("application rejected", rmID=rm_id, applicationID=app_id, reason=reason)
            stream.send(application_rejections(rejected))
        if adds or removes:
            self._send_command(UpdateApplications(rm_id, tuple(adds), tuple(removes)))

    # Inbound: nodes ---------------------------------------------------------------------------------
    def on_node_request(self, msg: si_pb2.NodeRequest, stream: ResponseStream) -> None:
        if not msg.nodes:
            stream.send(node_rejections([("", "empty NodeRequest: it carries no nodes")]))
            return
        clip = self.limits.clip
        refusal = self._bind(stream, msg.rmID)
        if refusal is not None:
            stream.send(node_rejections([(clip(n.nodeID), refusal) for n in msg.nodes]))
            log.warning("node request refused", rmID=clip(msg.rmID), reason=refusal)
            return
        admitted, rate_reason = self._admit(msg.rmID, StreamKind.NODE, len(msg.nodes))
        changes, rejected = [], []
        for info in msg.nodes:
            if admitted <= 0:
                rejected.append((clip(info.nodeID), rate_reason))
                continue
            admitted -= 1
            try:
                changes.append(node_change_from_si(msg.rmID, info, self.limits))
            except BadItem as exc:
                rejected.append((clip(info.nodeID), str(exc)))
        if rejected:
            for node_id, reason in rejected:
                if reason != rate_reason:
                    log.warning("node rejected", rmID=msg.rmID, nodeID=node_id, reason=reason)
            stream.send(node_rejections(rejected))
        if changes:
            self._send_command(UpdateNodes(msg.rmID, tuple(changes)))

    def reject_unhandled(self, stream: ResponseStream, reason: str) -> None:
        """Answer a message that failed inside the core, so the sender is not left waiting."""
        text = f"internal error while handling the request: {reason}"
        if stream.kind is StreamKind.ALLOCATION:
            stream.send(allocation_rejections([("", "", text)]))
        elif stream.kind is StreamKind.APPLICATION:
            stream.send(application_rejections([("", text)]))
        else:
            stream.send(node_rejections([("", text)]))

    def refuse_message(self, stream: ResponseStream, msg: Any, reason: str) -> None:
        """Reject every item of a stream message with one reason (the sender may not send it at all,
        e.g. it names an rmID its certificate does not grant); the stream stays open."""
        clip = self.limits.clip  # the ids come back as sent, cut to a length a reply can carry
        if stream.kind is StreamKind.ALLOCATION:
            releases = list(msg.releases.allocationsToRelease) if msg.HasField("releases") else []
            items = [(clip(a.allocationKey), clip(a.applicationID), reason) for a in msg.allocations]
            items += [(clip(r.allocationKey), clip(r.applicationID), reason) for r in releases]
            stream.send(allocation_rejections(items or [("", "", reason)]))
        elif stream.kind is StreamKind.APPLICATION:
            apps = [a.applicationID for a in msg.new] + [r.applicationID for r in msg.remove]
            stream.send(application_rejections([(clip(app_id), reason) for app_id in apps] or [("", reason)]))
        else:
            stream.send(node_rejections([(clip(n.nodeID), reason) for n in msg.nodes] or [("", reason)]))

    # Outbound -----------------------------------------------------------------------------------
    def deliver(self, batches: list[ResultBatch]) -> None:
        """The engine's sink: turn each batch into si responses on the RM's streams."""
        for batch in batches:
            if batch.has_node_news():
                self._route(batch.rm_id, StreamKind.NODE, node_response(batch))
            if batch.has_application_news():
                self._route(batch.rm_id, StreamKind.APPLICATION, application_response(batch))
            if batch.has_allocation_news():
                route = self._routes.get(batch.rm_id)
                asks = route.asks if route is not None else {}
                self._route(batch.rm_id, StreamKind.ALLOCATION, allocation_response(batch, asks))
