"""The si.v1.Scheduler gRPC service: turns calls into rmproxy calls and streams rmproxy's responses."""

from __future__ import annotations

import asyncio
from collections.abc import AsyncIterator, Awaitable, Callable, Mapping
from typing import Any

import grpc
import structlog
from google.protobuf.message import DecodeError

from core.rm.proxy import CoreStopping, InvalidRequest, RMProxy
from core.rm.response_stream import ResponseStream, StreamKind
from core.server.event_stream import EventStreams
from core.server.identity import Caller, caller, described
from core.server.redact import redacted
from si.v1 import metadata, si_pb2, si_pb2_grpc

log = structlog.get_logger("pykorn.grpc")

ApplySettings = Callable[[str, Mapping[str, str]], list[str]]  # (rmID, extraConfig) -> warnings


def _metadata(context: grpc.aio.ServicerContext[Any, Any], key: str) -> str:
    for item in context.invocation_metadata() or ():
        if item[0] == key:
            return str(item[1])
    return ""


class SchedulerService(si_pb2_grpc.SchedulerServicer):
    def __init__(
        self,
        rmproxy: RMProxy,
        events: EventStreams,
        enforce_rm_identity: bool = False,
        room: Callable[[], Awaitable[None]] | None = None,
        settings: ApplySettings | None = None,
    ) -> None:
        """`enforce_rm_identity`: clients present certificates (mutual TLS), and each may only act as
        the rmID its certificate's common name names. `room`: until the engine takes more commands
        (Engine.room), awaited by each stream's reader before its next message. `settings`: applies
        the core's settings of an RM's extraConfig (core.server.core_settings), returning warnings."""
        self._rmproxy = rmproxy
        self._settings = settings
        self._room = room
        self.events = events
        self._enforce_rm_identity = enforce_rm_identity
        self._active_streams = 0
        self._no_streams = asyncio.Event()
        self._no_streams.set()

    async def wait_streams_finished(self, timeout: float) -> None:
        """Until every stream handler has returned (or the timeout): lets shutdown end calls cleanly
        instead of cancelling handlers that are still finishing."""
        try:
            await asyncio.wait_for(self._no_streams.wait(), timeout)
        except TimeoutError:
            log.warning("stream handlers still running at shutdown", count=self._active_streams)

    async def _authorize(self, rpc: str, request: Any, context: grpc.aio.ServicerContext[Any, Any]) -> None:
        """Abort with PERMISSION_DENIED when the caller may not act as the rmID the request names."""
        # Secret fields (si_secret) never reach the log; the rest is what an operator debugs with.
        log.debug("request received", rpc=rpc, request=redacted(request))
        refusal = caller(context, self._enforce_rm_identity).refusal(request.rmID)
        if refusal is not None:
            log.warning("request refused: rmID not allowed", rpc=rpc, rmID=request.rmID, reason=refusal)
            await context.abort(grpc.StatusCode.PERMISSION_DENIED, refusal)

    async def RegisterResourceManager(
        self, request: si_pb2.RegisterResourceManagerRequest, context: grpc.aio.ServicerContext[Any, Any]
    ) -> si_pb2.RegisterResourceManagerResponse:
        await self._authorize("RegisterResourceManager", request, context)
        try:
            await self._rmproxy.register(request, described(context))
        except InvalidRequest as exc:
            log.warning("registration refused", rmID=request.rmID, reason=str(exc))
            await context.abort(grpc.StatusCode.INVALID_ARGUMENT, str(exc))
        except CoreStopping as exc:
            await context.abort(grpc.StatusCode.UNAVAILABLE, str(exc))
        if self._settings is not None:
            self._settings(request.rmID, dict(request.extraConfig))  # warnings logged: no answer field
        return si_pb2.RegisterResourceManagerResponse()

    async def DryRunConfiguration(
        self, request: si_pb2.UpdateConfigurationRequest, context: grpc.aio.ServicerContext[Any, Any]
    ) -> si_pb2.DryRunConfigurationResponse:
        await self._authorize("DryRunConfiguration", request, context)
        return await self._rmproxy.dry_run_configuration(request)

    async def UpdateConfiguration(
        self, request: si_pb2.UpdateConfigurationRequest, context: grpc.aio.ServicerContext[Any, Any]
    ) -> si_pb2.UpdateConfigurationResponse:
        await self._authorize("UpdateConfiguration", request, context)
        response = await self._rmproxy.update_configuration(request, described(context))
        if self._settings is not None and self._rmproxy.is_registered(request.rmID):
            # As YuniKorn, whether or not the queues were taken: the two are apart.
            response.warnings.extend(self._settings(request.rmID, dict(request.extraConfig)))
        return response

    async def StreamEvents(
        self, request: si_pb2.EventStreamRequest, context: grpc.aio.ServicerContext[Any, Any]
    ) -> AsyncIterator[si_pb2.EventStreamResponse]:
        await self._authorize("StreamEvents", request, context)
        async for response in self.events.serve(request, context):
            yield response

    # The three streams write through the context (grpc.aio allows a coroutine handler that writes
    # with context.write), not by yielding: a write blocked by an RM that does not read can then be
    # interrupted and the call ended with a status (see ResponseStream). The generated servicer
    # declares them as iterators, hence the override.
    async def UpdateAllocation(  # type: ignore[override]
        self,
        request_iterator: AsyncIterator[si_pb2.AllocationRequest],
        context: grpc.aio.ServicerContext[Any, Any],
    ) -> None:
        await self._bidi(
            request_iterator, context, StreamKind.ALLOCATION, self._rmproxy.on_allocation_request
        )

    async def UpdateApplication(  # type: ignore[override]
        self,
        request_iterator: AsyncIterator[si_pb2.ApplicationRequest],
        context: grpc.aio.ServicerContext[Any, Any],
    ) -> None:
        await self._bidi(
            request_iterator, context, StreamKind.APPLICATION, self._rmproxy.on_application_request
        )

    async def UpdateNode(  # type: ignore[override]
        self, request_iterator: AsyncIterator[si_pb2.NodeRequest], context: grpc.aio.ServicerContext[Any, Any]
    ) -> None:
        await self._bidi(request_iterator, context, StreamKind.NODE, self._rmproxy.on_node_request)

    async def _bidi(
        self,
        requests: AsyncIterator[Any],
        context: grpc.aio.ServicerContext[Any, Any],
        kind: StreamKind,
        handle: Callable[[Any, ResponseStream], None],
    ) -> None:
        stream = self._rmproxy.open_stream(kind)
        writer = asyncio.current_task()
        if writer is not None:
            stream.on_cut = writer.cancel  # interrupts a write the RM does not read
        peer = caller(context, self._enforce_rm_identity)  # one TLS session per call: look it up once
        # An RM that names itself when it opens the stream gets it bound at once: a reconnect within
        # the grace period counts from here, and answers held meanwhile arrive without waiting for
        # the RM's next message.
        named = _metadata(context, metadata.RM_ID)
        if named and peer.refusal(named) is None:
            self._rmproxy.bind_on_open(stream, named)
        reader = asyncio.create_task(self._read(requests, stream, handle, peer))
        self._active_streams += 1
        self._no_streams.clear()
        try:
            try:
                while (message := await stream.next()) is not None:
                    await context.write(message)
            except asyncio.CancelledError:
                if not stream.cut:
                    raise  # a shutdown or the RM going away: not ours to answer
            if stream.cut:
                log.warning("stream cut: responses not read", rmID=stream.rm_id, stream=kind.value,
                            reason=stream.cut, **stream.cut_figures)  # fmt: skip
                await context.abort(grpc.StatusCode.RESOURCE_EXHAUSTED, stream.cut)
            failure = reader.result() if reader.done() and not reader.cancelled() else ""
            if failure:
                await context.abort(grpc.StatusCode.INVALID_ARGUMENT, failure)
        finally:
            reader.cancel()
            self._rmproxy.close_stream(stream)
            stream.detach()  # the call is over: what it held no longer counts against the core's bound
            self._active_streams -= 1
            if self._active_streams == 0:
                self._no_streams.set()

    async def _read(
        self,
        requests: AsyncIterator[Any],
        stream: ResponseStream,
        handle: Callable[[Any, ResponseStream], None],
        peer: Caller,
    ) -> str:
        """Hand each message to rmproxy until the RM half-closes; returns why the call must fail, or ""."""
        try:
            async for message in requests:
                refusal = peer.refusal(message.rmID)
                if refusal is not None:
                    # Only this message is refused: the stream keeps serving the caller's own rmID.
                    log.warning("stream message refused: rmID not allowed", stream=stream.kind.value,
                                rmID=message.rmID, reason=refusal)  # fmt: skip
                    self._rmproxy.refuse_message(stream, message, refusal)
                    continue
                try:
                    handle(message, stream)
                except Exception as exc:  # one bad message must not end the stream for the good ones
                    log.exception("request handling failed", stream=stream.kind.value, rmID=stream.rm_id)
                    self._rmproxy.reject_unhandled(stream, repr(exc))
                if self._room is not None:
                    await self._room()  # the engine's queue bounded: the next message waits
        except asyncio.CancelledError:
            raise
        except (grpc.aio.AioRpcError, grpc.aio.AbortError):
            pass  # the call ended: the client went away, or the writer side aborted it (a cut)
        except DecodeError as exc:
            # Bytes that are not a message of the method's type: gRPC reads no further on this call,
            # so it ends with INVALID_ARGUMENT (the RM opens another); nothing else is touched.
            reason = f"a message on the {stream.kind.value} stream is not a valid si.v1 message: {exc}"
            log.warning(
                "undecodable stream message", stream=stream.kind.value, rmID=stream.rm_id, reason=reason
            )
            return reason
        except Exception:
            log.exception("stream read failed", stream=stream.kind.value, rmID=stream.rm_id)
        finally:
            # The RM half-closed (or vanished): end our side after what is already queued.
            self._rmproxy.close_stream(stream)
        return ""
