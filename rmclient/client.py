"""An async client of si.v1.Scheduler: what a resource manager does, as a library.

It registers, keeps the three bidirectional streams open and sends requests. What the core sends
back is handed, as it arrives and exactly once, to the client's handlers (`ResponseHandler`); the
client itself remembers nothing of it. A consumer that wants history (a test, a benchmark) records
it in its own handler. `wait_for` blocks until a condition over the consumer's own state holds,
woken by every response.
"""

from __future__ import annotations

import asyncio
from collections.abc import Callable, Iterable, Mapping
from typing import Any, Self

import grpc
import structlog

from rmclient import messages
from rmclient.tls import ClientTLS, open_channel
from si.v1 import metadata, si_pb2, si_pb2_grpc

log = structlog.get_logger("pykorn.rmclient")

# The transport errors a send raises when the core went away (a restart, a cut connection).
SEND_ERRORS: tuple[type[BaseException], ...] = (
    grpc.aio.AioRpcError,
    asyncio.InvalidStateError,
    ConnectionError,
)


class ResponseHandler:
    """Receives what the core sends, each response once, in arrival order per stream.

    Override what you need; the defaults ignore. Handlers run on the event loop inside the stream's
    reader, so they must not block: record, queue, or wake a task.
    """

    def on_allocations(self, response: si_pb2.AllocationResponse) -> None:
        pass

    def on_applications(self, response: si_pb2.ApplicationResponse) -> None:
        pass

    def on_nodes(self, response: si_pb2.NodeResponse) -> None:
        pass

    def on_stream_closed(self, stream: str, error: str | None) -> None:
        """The core ended one of the streams: `error` None is a clean end (a shutdown), otherwise the
        status. Either way the connection is gone until the RM reconnects and registers again."""


class _Stream:
    """One bidirectional call: serialised writes, and a reader task handing each response on."""

    def __init__(
        self,
        name: str,
        call: grpc.aio.StreamStreamCall[Any, Any],
        on_message: Callable[[Any], None],
        on_closed: Callable[[str, str | None], None],
    ) -> None:
        self.name = name
        self._call = call
        self._lock = asyncio.Lock()
        self._on_message = on_message
        self._on_closed = on_closed
        self._closing = False
        self.reader = asyncio.create_task(self._read())

    async def write(self, message: Any) -> None:
        async with self._lock:
            await self._call.write(message)

    async def _read(self) -> None:
        try:
            while True:
                response = await self._call.read()
                if response is grpc.aio.EOF:
                    if not self._closing:
                        self._on_closed(self.name, None)  # the core ended it (a shutdown)
                    return
                self._on_message(response)
        except grpc.aio.AioRpcError as exc:
            if exc.code() != grpc.StatusCode.CANCELLED or not self._closing:
                self._on_closed(self.name, f"{exc.code().name}: {exc.details()}")

    async def close(self) -> None:
        self._closing = True
        try:
            # Bounded: against a core that vanished mid-write, a half-close may never complete.
            async with asyncio.timeout(2.0), self._lock:
                await self._call.done_writing()
        except (grpc.aio.AioRpcError, asyncio.InvalidStateError, TimeoutError):
            pass
        try:
            await asyncio.wait_for(asyncio.shield(self.reader), 2.0)
        except (TimeoutError, asyncio.CancelledError):
            self._call.cancel()


class SchedulerClient:
    """`handlers` receive every response; more can be added with `add_handler`."""

    def __init__(
        self,
        target: str,
        rm_id: str,
        tls: ClientTLS | None = None,
        handlers: Iterable[ResponseHandler] = (),
    ) -> None:
        self.target = target
        self.tls = tls  # None: plaintext; otherwise TLS, with a client certificate for mutual TLS
        self.rm_id = rm_id
        self.handlers: list[ResponseHandler] = list(handlers)
        # Why the connection was lost since the streams were last opened; None while it holds.
        self.lost: str | None = None
        self._channel: grpc.aio.Channel | None = None
        self._stub: si_pb2_grpc.SchedulerAsyncStub | None = None
        self._alloc: _Stream | None = None
        self._apps: _Stream | None = None
        self._nodes: _Stream | None = None
        self._changed = asyncio.Event()
        self.log = log.bind(rmID=rm_id)

    def add_handler(self, handler: ResponseHandler) -> None:
        self.handlers.append(handler)

    # Connection ---------------------------------------------------------------------------------
    async def connect(self, timeout: float = 10.0) -> None:
        self._channel = open_channel(self.target, self.tls)
        await asyncio.wait_for(self._channel.channel_ready(), timeout)
        self._stub = si_pb2_grpc.SchedulerStub(self._channel)

    @property
    def stub(self) -> si_pb2_grpc.SchedulerAsyncStub:
        assert self._stub is not None, "call connect() first"
        return self._stub

    async def register(
        self,
        config: str = "",
        version: str = "pykorn-rmclient/0.1",
        extra_config: Mapping[str, str] | None = None,
    ) -> None:
        """Register (raises grpc.aio.AioRpcError when refused) and open the three streams.
        `extra_config`: the core's settings (event.*, health.*, log.*), as YuniKorn's shim sends its
        ConfigMap."""
        await self.stub.RegisterResourceManager(
            si_pb2.RegisterResourceManagerRequest(
                rmID=self.rm_id,
                version=version,
                config=config,
                policyGroup="queues",
                extraConfig=dict(extra_config or {}),
            )
        )
        self.log.info("registered with core", target=self.target)
        if self._alloc is None:
            self.open_streams()

    def open_streams(self) -> None:
        """Open the three streams, naming this RM in their metadata so the core binds them at once."""
        named = ((metadata.RM_ID, self.rm_id),)
        closed = self._on_stream_closed
        self.lost = None
        self._alloc = _Stream(
            "allocation", self.stub.UpdateAllocation(metadata=named), self._on_allocations, closed
        )
        self._apps = _Stream(
            "application", self.stub.UpdateApplication(metadata=named), self._on_applications, closed
        )
        self._nodes = _Stream("node", self.stub.UpdateNode(metadata=named), self._on_nodes, closed)

    async def close_streams(self) -> None:
        """Close the three streams, keeping the channel (and the registration)."""
        for stream in (self._alloc, self._apps, self._nodes):
            if stream is not None:
                await stream.close()
        self._alloc = self._apps = self._nodes = None

    async def reopen_streams(self) -> None:
        """Close the three streams and open new ones on the same channel, without registering again."""
        await self.close_streams()
        self.open_streams()

    async def close(self) -> None:
        await self.close_streams()
        if self._channel is not None:
            await self._channel.close()
            self._channel = None
            self._stub = None

    async def __aenter__(self) -> Self:
        await self.connect()
        return self

    async def __aexit__(self, *exc: object) -> None:
        await self.close()

    def connection_lost(self, reason: str) -> None:
        """Mark the connection lost (a send failed, say): `lost` says why until the streams reopen."""
        if self.lost is None:
            self.lost = reason
            self.log.warning("connection to the core lost", reason=reason)
        self._changed.set()

    # Unary calls --------------------------------------------------------------------------------
    async def update_configuration(
        self, config: str, extra_config: Mapping[str, str] | None = None
    ) -> si_pb2.UpdateConfigurationResponse:
        return await self.stub.UpdateConfiguration(
            si_pb2.UpdateConfigurationRequest(
                rmID=self.rm_id, config=config, extraConfig=dict(extra_config or {})
            )
        )

    async def dry_run_configuration(self, config: str) -> si_pb2.DryRunConfigurationResponse:
        return await self.stub.DryRunConfiguration(
            si_pb2.UpdateConfigurationRequest(rmID=self.rm_id, config=config)
        )

    async def stream_events(
        self, from_id: int = -1, types: Iterable[si_pb2.EventRecord.Type] = ()
    ) -> grpc.aio.UnaryStreamCall[si_pb2.EventStreamRequest, si_pb2.EventStreamResponse]:
        """This RM's scheduler events as they happen (held ones from `from_id` first when >= 0).

        Returns once the core has subscribed the stream (its headers arrived): every event recorded
        after that reaches it. Raises grpc.aio.AioRpcError when the core refuses the request.
        """
        call = self.stub.StreamEvents(
            si_pb2.EventStreamRequest(rmID=self.rm_id, fromID=from_id, types=list(types))
        )
        headers = await call.initial_metadata()
        if call.done() and (code := await call.code()) != grpc.StatusCode.OK:
            # A refusal ends the call before any event: raise it as iterating the call would.
            raise grpc.aio.AioRpcError(code, headers, await call.trailing_metadata(), await call.details())
        return call

    # Sending ------------------------------------------------------------------------------------
    async def send_allocation_request(self, request: si_pb2.AllocationRequest) -> None:
        assert self._alloc is not None, "streams are not open"
        await self._alloc.write(request)

    async def send_application_request(self, request: si_pb2.ApplicationRequest) -> None:
        assert self._apps is not None, "streams are not open"
        await self._apps.write(request)

    async def send_node_request(self, request: si_pb2.NodeRequest) -> None:
        assert self._nodes is not None, "streams are not open"
        await self._nodes.write(request)

    async def add_nodes(self, *nodes: si_pb2.NodeInfo) -> None:
        await self.send_node_request(si_pb2.NodeRequest(rmID=self.rm_id, nodes=list(nodes)))

    async def add_node(self, node_id: str, capacity: Mapping[str, int], **kwargs: Any) -> None:
        await self.add_nodes(messages.node(node_id, capacity, **kwargs))

    async def node_action(
        self,
        node_id: str,
        action: si_pb2.NodeInfo.ActionFromRM,
        capacity: Mapping[str, int] | None = None,
    ) -> None:
        await self.add_nodes(messages.node(node_id, capacity, action=action))

    async def add_applications(self, *apps: si_pb2.AddApplicationRequest) -> None:
        await self.send_application_request(si_pb2.ApplicationRequest(rmID=self.rm_id, new=list(apps)))

    async def add_application(self, app_id: str, queue: str, **kwargs: Any) -> None:
        await self.add_applications(messages.application(app_id, queue, **kwargs))

    async def remove_application(self, app_id: str, partition: str = "") -> None:
        await self.send_application_request(
            si_pb2.ApplicationRequest(
                rmID=self.rm_id,
                remove=[si_pb2.RemoveApplicationRequest(applicationID=app_id, partitionName=partition)],
            )
        )

    async def ask(self, app_id: str, key: str, resources: Mapping[str, int], **kwargs: Any) -> None:
        await self.asks([messages.ask(app_id, key, resources, **kwargs)])

    async def asks(self, items: Iterable[si_pb2.Allocation]) -> None:
        await self.send_allocation_request(si_pb2.AllocationRequest(rmID=self.rm_id, allocations=list(items)))

    async def release_many(
        self,
        items: Iterable[tuple[str, str]],
        partition: str = "",
        termination: si_pb2.TerminationType = si_pb2.STOPPED_BY_RM,
        message: str = "",
    ) -> None:
        """Release several (application, key) pairs in one request."""
        releases = [
            messages.release(app_id, key, partition, message, termination=termination)
            for app_id, key in items
        ]
        if releases:
            await self.send_allocation_request(
                si_pb2.AllocationRequest(
                    rmID=self.rm_id, releases=si_pb2.AllocationReleasesRequest(allocationsToRelease=releases)
                )
            )

    async def release(self, app_id: str, key: str = "", partition: str = "", message: str = "") -> None:
        await self.release_many([(app_id, key)], partition, message=message)

    # Receiving ----------------------------------------------------------------------------------
    def _on_allocations(self, response: si_pb2.AllocationResponse) -> None:
        for handler in self.handlers:
            handler.on_allocations(response)
        self._changed.set()

    def _on_applications(self, response: si_pb2.ApplicationResponse) -> None:
        for handler in self.handlers:
            handler.on_applications(response)
        self._changed.set()

    def _on_nodes(self, response: si_pb2.NodeResponse) -> None:
        for handler in self.handlers:
            handler.on_nodes(response)
        self._changed.set()

    def _on_stream_closed(self, stream: str, error: str | None) -> None:
        if error is not None:
            self.log.warning("stream ended with an error", stream=stream, error=error)
        for handler in self.handlers:
            handler.on_stream_closed(stream, error)
        self.connection_lost(f"{stream} stream: {error or 'ended by the core'}")

    # Waiting ------------------------------------------------------------------------------------
    async def wait_for(
        self, predicate: Callable[[], bool], timeout: float = 10.0, what: str = "a condition"
    ) -> None:
        """Until `predicate()` holds, looked at again after each response or loss of connection;
        TimeoutError naming `what` after `timeout` seconds."""
        loop = asyncio.get_running_loop()
        deadline = loop.time() + timeout
        while not predicate():
            remaining = deadline - loop.time()
            if remaining <= 0:
                raise TimeoutError(f"timed out after {timeout}s waiting for {what}")
            self._changed.clear()
            try:
                await asyncio.wait_for(self._changed.wait(), remaining)
            except TimeoutError:
                continue
