"""RMProxy: the registry of resource managers, their streams, and the way between si and the engine.

Inbound, each si message is checked item by item (core.rm.si_inbound translates and checks each item);
what is malformed is answered at once on the stream it came from (the engine never sees it), the
rest becomes one engine command. Outbound, the engine's result batches become si responses
(core.rm.si_outbound) routed to the owning RM's current stream of that kind; while an RM has no stream
of a kind open, its responses wait in a bounded backlog. RMs that stay away past the grace period
are removed; registrations and reloads are applied in order per RM.

Partition names are qualified with the rmID on the way in and unqualified on the way out, so each RM
sees only its own names and can address only its own partitions.
"""

from __future__ import annotations

import asyncio
import time
from collections.abc import Callable
from typing import TYPE_CHECKING, Any

import structlog

from core.config import ConfigError
from core.config.input_limits import DEFAULT_LIMITS, Limits
from core.log_digest import WarningLimiter
from core.objects.allocation import Allocation
from core.rm.ask_cache import AskCache
from core.rm.config_reading import RMConfigTexts
from core.rm.intake import BLANK, REJECTIONS, Intake, allocation_ids, application_ids, idents, node_ids
from core.rm.response_stream import HARD_FACTOR, Backlogs, ResponseStream, StreamKind
from core.rm.route import RMRoute
from core.rm.si_inbound import (
    allocation_from_si,
    application_from_si,
    node_change_from_si,
    over_long,
    release_from_si,
    removal_from_si,
)
from core.rm.si_outbound import (
    allocation_response,
    application_response,
    node_response,
    preview_response,
)
from core.scheduler.commands import (
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
from core.scheduler.metrics import SchedulerMetrics
from core.scheduler.results import ResultBatch
from si.v1 import si_pb2

if TYPE_CHECKING:
    from core.scheduler.preemption.dry_run import QuotaPreview

log = structlog.get_logger("pykorn.rmproxy")

DEFAULT_GRACE_PERIOD = 60.0  # seconds an RM with no stream open keeps its state


class InvalidRequest(ValueError):
    """A unary request refused as a whole; the server answers INVALID_ARGUMENT with this text."""


class CoreStopping(RuntimeError):
    """The core is shutting down; the server answers UNAVAILABLE, which an RM retries."""


class RMProxy:
    def __init__(
        self,
        default_config_text: str,
        submit: Callable[[Command], None] | None = None,
        grace_period: float = DEFAULT_GRACE_PERIOD,
        limits: Limits = DEFAULT_LIMITS,
        clock: Callable[[], float] = time.monotonic,
        metrics: SchedulerMetrics | None = None,
    ) -> None:
        self.limits = limits
        self.configs = RMConfigTexts(default_config_text, limits.max_config_bytes)
        self._metrics = metrics or SchedulerMetrics()  # the core's, when it has one (cut streams)
        self.warnings = WarningLimiter()  # warnings about what an RM sends: a few lines a second at most
        self._clock = clock  # for the rate limit only
        self._submit = submit
        self._routes: dict[str, RMRoute] = {}
        self._streams: set[ResponseStream] = set()
        self.backlogs = Backlogs(limits.max_unread_response_bytes_total)  # unread, over every stream
        # An RM whose last stream closed keeps its state this long (a network blip, a shim restarting
        # its streams); if none of its streams is back by then, its partitions are removed.
        self.grace_period = grace_period
        self._grace_timers: dict[str, asyncio.TimerHandle] = {}
        self._registering: dict[str, int] = {}  # RMs with a registration under way (how many)
        self._stopping = False

    def bind_engine(self, submit: Callable[[Command], None]) -> None:
        self._submit = submit

    def _send_command(self, command: Command) -> None:
        assert self._submit is not None, "rmproxy is not bound to an engine"
        self._submit(command)

    def is_registered(self, rm_id: str) -> bool:
        return rm_id in self._routes

    # Unary calls ------------------------------------------------------------------------------
    async def register(self, request: si_pb2.RegisterResourceManagerRequest, who: str = "") -> None:
        """`who`: the caller as the transport knows it (kept with the configuration's history)."""
        rm_id = request.rmID
        if self._stopping:
            # An RM that lost its streams to the shutdown would register again at once and hold the
            # server open with new streams until the stop's grace runs out.
            raise CoreStopping("the core is shutting down: register again when it is back")
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
            async with self.configs.lock(rm_id):
                try:
                    config = await self.configs.registration(request.config)
                except ValueError as exc:
                    raise InvalidRequest(str(exc)) from None
                build = tuple(
                    (self.limits.clip(k), self.limits.clip(v)) for k, v in sorted(request.buildInfo.items())
                )
                await self._await_engine(lambda reply: RegisterRM(rm_id, config, reply, build, who))
        except Exception:
            previous = self._routes.get(rm_id)
            if previous is not None and not previous.current and not self._stopping:
                self._start_grace(rm_id)  # refused: what it had before is on the clock again
            raise
        finally:
            self._registering[rm_id] -= 1
            if not self._registering[rm_id]:
                del self._registering[rm_id]
        route = self._routes.setdefault(rm_id, RMRoute())
        route.forget_backlog()  # answers about the previous registration's state mean nothing now
        route.asks.clear()
        log.info(
            "resource manager registered",
            rmID=rm_id,
            version=self.limits.clip(request.version),
            policyGroup=self.limits.clip(request.policyGroup),
        )

    async def update_configuration(
        self, request: si_pb2.UpdateConfigurationRequest, who: str = ""
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
        async with self.configs.lock(rm_id):
            try:
                loaded = await self.configs.load(request.config)
            except ConfigError as exc:
                problems = [str(p) for p in exc.problems]
                log.warning("configuration rejected", rmID=rm_id, errors=problems)
                return si_pb2.UpdateConfigurationResponse(accepted=False, errors=problems)
            try:
                await self._await_engine(lambda reply: UpdateConfig(rm_id, loaded.config, reply, who))
            except Exception as exc:
                return si_pb2.UpdateConfigurationResponse(accepted=False, errors=[str(exc)])
        for warning in loaded.warnings:
            log.warning("configuration warning", rmID=rm_id, detail=str(warning))
        return si_pb2.UpdateConfigurationResponse(accepted=True, warnings=[str(w) for w in loaded.warnings])

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
            loaded = await self.configs.load(request.config, default=False)
        except ConfigError as exc:
            return si_pb2.DryRunConfigurationResponse(valid=False, errors=[str(p) for p in exc.problems])
        future: asyncio.Future[list[QuotaPreview] | Exception] = asyncio.get_running_loop().create_future()
        self._send_command(PreviewConfig(rm_id, loaded.config, future.set_result))
        result = await future
        if isinstance(result, Exception):
            return si_pb2.DryRunConfigurationResponse(valid=False, errors=[repr(result)])
        return preview_response(result)

    async def _await_engine(self, build: Callable[[Callable[[Exception | None], None]], Command]) -> None:
        if self._stopping:  # the engine takes no more commands: say so rather than never answer
            raise CoreStopping("the core is shutting down: send this again when it is back")
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
        limits = self.limits
        stream = ResponseStream(
            kind, limits.max_unread_responses, limits.max_unread_response_bytes, limits.unread_grace_seconds,
            self.backlogs,
        )  # fmt: skip
        if self._stopping:
            stream.end()  # opened during the shutdown: ended at once, cleanly
            return stream
        self._streams.add(stream)
        return stream

    def close_stream(self, stream: ResponseStream) -> None:
        """The RM stopped sending (or its unread responses got it cut): detach the stream and end it
        after what is already queued."""
        if stream.cut and stream in self._streams:
            self._metrics.streams_cut += 1
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
        self.warnings.forget(rm_id)
        self.configs.forget(rm_id)
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
                stream.send(backlog.popleft()[0])
            route.backlog_bytes[stream.kind] = 0
        return None

    def _route(self, rm_id: str, kind: StreamKind, message: Any) -> None:
        route = self._routes.get(rm_id)
        if route is None:
            return
        stream = route.current.get(kind)
        if stream is not None and not stream.closed:
            stream.send(message)
            return
        # What the stream will take at once when it is back, no more, or it would be cut on arrival.
        dropped = route.hold(kind, message, HARD_FACTOR * self.limits.max_unread_response_bytes)
        if dropped:
            log.warning("response backlog full, dropping the oldest", rmID=rm_id, stream=kind.value,
                        dropped=dropped, heldBytes=route.backlog_bytes[kind])  # fmt: skip

    # Inbound ------------------------------------------------------------------------------------
    def on_allocation_request(self, msg: si_pb2.AllocationRequest, stream: ResponseStream) -> None:
        releases = msg.releases.allocationsToRelease if msg.HasField("releases") else ()
        if not msg.allocations and not releases:
            self._reject(
                stream, [("", "")], "empty AllocationRequest: it carries no allocations and no releases"
            )
            return
        intake = self._intake(stream, msg.rmID, len(msg.allocations) + len(releases))
        if intake is None:
            return
        rm_id, limits, asks = msg.rmID, self.limits, intake.route.asks

        def ask_or_allocation(item: si_pb2.Allocation) -> Allocation:
            alloc = allocation_from_si(rm_id, item, limits)
            if alloc.node_id:
                asks.refuse_held(alloc.application_id, alloc.key)
            else:
                asks.hold(item, limits.max_pending_asks_per_application)
            return alloc

        def release(item: si_pb2.AllocationRelease) -> ReleaseRequest:
            request = release_from_si(rm_id, item, limits)
            asks.forget(request.app_id, request.key)
            return request

        allocations = intake.take(msg.allocations, allocation_ids, ask_or_allocation)
        release_requests = intake.take(releases, allocation_ids, release)
        intake.answer_rejected()
        if allocations or release_requests:
            self._send_command(UpdateAllocations(rm_id, tuple(allocations), tuple(release_requests)))

    def on_application_request(self, msg: si_pb2.ApplicationRequest, stream: ResponseStream) -> None:
        if not msg.new and not msg.remove:
            self._reject(stream, [("",)], "empty ApplicationRequest: it adds and removes no application")
            return
        intake = self._intake(stream, msg.rmID, len(msg.new) + len(msg.remove))
        if intake is None:
            return
        rm_id, limits, asks = msg.rmID, self.limits, intake.route.asks

        def removal(item: si_pb2.RemoveApplicationRequest) -> AppRemove:
            request = removal_from_si(rm_id, item, limits)
            asks.forget(request.app_id)
            return request

        adds = intake.take(msg.new, application_ids, lambda item: application_from_si(rm_id, item, limits))
        removes = intake.take(msg.remove, application_ids, removal)
        intake.answer_rejected()
        if adds or removes:
            self._send_command(UpdateApplications(rm_id, tuple(adds), tuple(removes)))

    def on_node_request(self, msg: si_pb2.NodeRequest, stream: ResponseStream) -> None:
        if not msg.nodes:
            self._reject(stream, [("",)], "empty NodeRequest: it carries no nodes")
            return
        intake = self._intake(stream, msg.rmID, len(msg.nodes))
        if intake is None:
            return
        rm_id, limits = msg.rmID, self.limits
        changes = intake.take(msg.nodes, node_ids, lambda info: node_change_from_si(rm_id, info, limits))
        intake.answer_rejected()
        if changes:
            self._send_command(UpdateNodes(rm_id, tuple(changes)))

    def _intake(self, stream: ResponseStream, rm_id: str, items: int) -> Intake | None:
        """The door every stream message goes through: its stream bound to a registered RM (else every
        item is refused, and None returned), then as many items as the RM's rate allows."""
        refusal = self._bind(stream, rm_id)
        if refusal is not None:
            self.warnings.warn(log, "request refused", self.limits.clip(rm_id), stream=stream.kind.value,
                               reason=refusal)  # fmt: skip
            return Intake(stream, rm_id, RMRoute(), 0, refusal, self.limits.clip, self.warnings)
        route = self._routes[rm_id]
        admitted, rate_reason = route.admit(rm_id, stream.kind, items, self.limits, self._clock)
        if rate_reason:
            self.warnings.warn(
                log, "rate limit exceeded", rm_id, stream=stream.kind.value, items=items, admitted=admitted
            )
        return Intake(stream, rm_id, route, admitted, rate_reason, self.limits.clip, self.warnings)

    def _reject(self, stream: ResponseStream, idents: list[tuple[str, ...]], reason: str) -> None:
        """Answer items (by their ids, as the stream's rejections name them) with one reason."""
        stream.send(REJECTIONS[stream.kind]([(*ident, reason) for ident in idents]))

    def reject_unhandled(self, stream: ResponseStream, reason: str) -> None:
        """Answer a message that failed inside the core, so the sender is not left waiting."""
        self._reject(stream, [BLANK[stream.kind]], f"internal error while handling the request: {reason}")

    def refuse_message(self, stream: ResponseStream, msg: Any, reason: str) -> None:
        """Reject every item of a stream message with one reason (the sender may not send it at all,
        e.g. it names an rmID its certificate does not grant); the stream stays open."""
        self._reject(stream, idents(stream.kind, msg, self.limits.clip) or [BLANK[stream.kind]], reason)

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
                asks = route.asks if route is not None else AskCache()
                self._route(batch.rm_id, StreamKind.ALLOCATION, allocation_response(batch, asks))
