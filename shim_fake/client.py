"""An async client of si.v1.Scheduler: what a resource manager does, as a library.

It registers, keeps the three bidirectional streams open, sends requests, and records every response
in typed views (current allocations, releases, rejections, application states, node answers).
`wait_for` and friends block until the core has said what a caller expects, with a timeout.
"""

from __future__ import annotations

import asyncio
from collections.abc import Callable, Iterable, Mapping
from dataclasses import dataclass, field
from typing import Any

import grpc
import structlog

from shim_fake import messages
from shim_fake.tls import ClientTLS, open_channel
from si.v1 import si_pb2, si_pb2_grpc

log = structlog.get_logger("pykorn.fake.client")

RM_ID_HEADER = "pykorn-rm-id"  # names this RM when a stream opens, so the core binds it at once


@dataclass
class Observed:
    """Everything the core has told this RM so far."""

    allocations: dict[str, si_pb2.Allocation] = field(default_factory=dict)  # current, by key
    new_allocations: list[si_pb2.Allocation] = field(default_factory=list)  # every one ever received
    released: list[si_pb2.AllocationRelease] = field(default_factory=list)
    rejected_allocations: list[si_pb2.RejectedAllocation] = field(default_factory=list)
    accepted_apps: list[str] = field(default_factory=list)
    rejected_apps: list[si_pb2.RejectedApplication] = field(default_factory=list)
    app_states: dict[str, list[str]] = field(default_factory=dict)
    accepted_nodes: list[str] = field(default_factory=list)
    rejected_nodes: list[si_pb2.RejectedNode] = field(default_factory=list)
    stream_errors: list[str] = field(default_factory=list)
    stream_ends: list[str] = field(default_factory=list)  # streams the core ended (cleanly) on its own

    def on_node_usage(self, node_id: str) -> dict[str, int]:
        total: dict[str, int] = {}
        for alloc in self.allocations.values():
            if alloc.nodeID == node_id:
                for k, v in messages.resource_dict(alloc.resourcePerAlloc).items():
                    total[k] = total.get(k, 0) + v
        return total


class _Stream:
    """One bidirectional call: serialised writes, a reader task feeding a callback."""

    def __init__(
        self,
        call: Any,
        on_message: Callable[[Any], None],
        on_error: Callable[[str], None],
        on_end: Callable[[], None] | None = None,
    ) -> None:
        self._call = call
        self._lock = asyncio.Lock()
        self._on_message = on_message
        self._on_error = on_error
        self._on_end = on_end
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
                    if not self._closing and self._on_end is not None:
                        self._on_end()  # the core ended it (a shutdown): a reconnect is due
                    return
                self._on_message(response)
        except grpc.aio.AioRpcError as exc:
            if exc.code() != grpc.StatusCode.CANCELLED:
                self._on_error(f"{exc.code().name}: {exc.details()}")
        except asyncio.CancelledError:
            raise

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
    def __init__(self, target: str, rm_id: str, tls: ClientTLS | None = None) -> None:
        self.target = target
        self.tls = tls  # None: plaintext; otherwise TLS, with a client certificate for mutual TLS
        self.rm_id = rm_id
        self.seen = Observed()
        self._channel: grpc.aio.Channel | None = None
        self._stub: si_pb2_grpc.SchedulerStub | None = None
        self._alloc: _Stream | None = None
        self._apps: _Stream | None = None
        self._nodes: _Stream | None = None
        self._changed = asyncio.Event()
        self.log = log.bind(rmID=rm_id)
        # Called with each new allocation as it arrives (benchmarks time them here).
        self.allocation_listeners: list[Callable[[si_pb2.Allocation], None]] = []

    # Connection ---------------------------------------------------------------------------------
    async def connect(self, timeout: float = 10.0) -> None:
        self._channel = open_channel(self.target, self.tls)
        await asyncio.wait_for(self._channel.channel_ready(), timeout)
        self._stub = si_pb2_grpc.SchedulerStub(self._channel)

    @property
    def stub(self) -> si_pb2_grpc.SchedulerStub:
        assert self._stub is not None, "call connect() first"
        return self._stub

    async def register(self, config: str = "", version: str = "pykorn-fake/0.1") -> None:
        """Register (raises grpc.aio.AioRpcError when refused) and open the three streams."""
        await self.stub.RegisterResourceManager(
            si_pb2.RegisterResourceManagerRequest(
                rmID=self.rm_id, version=version, config=config, policyGroup="queues"
            )
        )
        self.log.info("registered with core", target=self.target)
        if self._alloc is None:
            self.open_streams()

    def open_streams(self) -> None:
        """Open the three streams, naming this RM in their metadata so the core binds them at once."""
        errors, end = self._on_stream_error, self._on_stream_end
        named = ((RM_ID_HEADER, self.rm_id),)
        self._alloc = _Stream(
            self.stub.UpdateAllocation(metadata=named), self._on_allocation_response, errors, end
        )
        self._apps = _Stream(
            self.stub.UpdateApplication(metadata=named), self._on_application_response, errors, end
        )
        self._nodes = _Stream(self.stub.UpdateNode(metadata=named), self._on_node_response, errors, end)

    async def close_streams(self) -> None:
        """Close the three streams, keeping the channel (and the registration)."""
        for stream in (self._alloc, self._apps, self._nodes):
            if stream is not None:
                await stream.close()
        self._alloc = self._apps = self._nodes = None

    async def dry_run_configuration(self, config: str) -> si_pb2.DryRunConfigurationResponse:
        return await self.stub.DryRunConfiguration(
            si_pb2.UpdateConfigurationRequest(rmID=self.rm_id, config=config)
        )

    async def update_configuration(self, config: str) -> si_pb2.UpdateConfigurationResponse:
        return await self.stub.UpdateConfiguration(
            si_pb2.UpdateConfigurationRequest(rmID=self.rm_id, config=config)
        )

    async def stream_events(
        self, from_id: int = -1, types: Iterable[int] = ()
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

    async def reopen_streams(self) -> None:
        """Close the three streams and open new ones on the same channel, without registering again."""
        await self.close_streams()
        self.open_streams()

    async def close(self) -> None:
        await self.close_streams()
        if self._channel is not None:
            await self._channel.close()
            self._channel = None

    async def __aenter__(self) -> SchedulerClient:
        await self.connect()
        return self

    async def __aexit__(self, *exc: object) -> None:
        await self.close()

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

    async def node_action(self, node_id: str, action: int, capacity: Mapping[str, int] | None = None) -> None:
        await self.add_nodes(messages.node(node_id, capacity, action=action))

    async def add_application(self, app_id: str, queue: str, **kwargs: Any) -> None:
        await self.send_application_request(
            si_pb2.ApplicationRequest(rmID=self.rm_id, new=[messages.application(app_id, queue, **kwargs)])
        )

    async def remove_application(self, app_id: str, partition: str = "") -> None:
        await self.send_application_request(
            si_pb2.ApplicationRequest(
                rmID=self.rm_id,
                remove=[si_pb2.RemoveApplicationRequest(applicationID=app_id, partitionName=partition)],
            )
        )

    async def ask(self, app_id: str, key: str, resources: Mapping[str, int], **kwargs: Any) -> None:
        await self.send_allocation_request(
            si_pb2.AllocationRequest(
                rmID=self.rm_id, allocations=[messages.ask(app_id, key, resources, **kwargs)]
            )
        )

    async def asks(self, items: Iterable[si_pb2.Allocation]) -> None:
        await self.send_allocation_request(si_pb2.AllocationRequest(rmID=self.rm_id, allocations=list(items)))

    async def release_many(
        self, items: Iterable[tuple[str, str]], partition: str = "", termination: int = si_pb2.STOPPED_BY_RM
    ) -> None:
        """Release several (application, key) pairs in one request."""
        releases = [
            messages.release(app_id, key, partition, termination=termination) for app_id, key in items
        ]
        if releases:
            await self.send_allocation_request(
                si_pb2.AllocationRequest(
                    rmID=self.rm_id, releases=si_pb2.AllocationReleasesRequest(allocationsToRelease=releases)
                )
            )

    async def release(self, app_id: str, key: str = "", partition: str = "", message: str = "") -> None:
        await self.send_allocation_request(
            si_pb2.AllocationRequest(
                rmID=self.rm_id,
                releases=si_pb2.AllocationReleasesRequest(
                    allocationsToRelease=[messages.release(app_id, key, partition, message)]
                ),
            )
        )

    # Receiving ----------------------------------------------------------------------------------
    def _notify(self) -> None:
        self._changed.set()

    def _on_allocation_response(self, response: si_pb2.AllocationResponse) -> None:
        for alloc in response.new:
            self.seen.allocations[alloc.allocationKey] = alloc
            self.seen.new_allocations.append(alloc)
            for listener in self.allocation_listeners:
                listener(alloc)
        for rel in response.released:
            self.seen.released.append(rel)
            if rel.allocationKey:
                self.seen.allocations.pop(rel.allocationKey, None)
            else:
                for key in [
                    k for k, a in self.seen.allocations.items() if a.applicationID == rel.applicationID
                ]:
                    del self.seen.allocations[key]
        self.seen.rejected_allocations.extend(response.rejectedAllocations)
        self._notify()

    def _on_application_response(self, response: si_pb2.ApplicationResponse) -> None:
        self.seen.accepted_apps.extend(a.applicationID for a in response.accepted)
        self.seen.rejected_apps.extend(response.rejected)
        for update in response.updated:
            self.seen.app_states.setdefault(update.applicationID, []).append(update.state)
        self._notify()

    def _on_node_response(self, response: si_pb2.NodeResponse) -> None:
        self.seen.accepted_nodes.extend(n.nodeID for n in response.accepted)
        self.seen.rejected_nodes.extend(response.rejected)
        self._notify()

    def _on_stream_end(self) -> None:
        self.seen.stream_ends.append("ended by the core")
        self._notify()

    def _on_stream_error(self, error: str) -> None:
        self.seen.stream_errors.append(error)
        self.log.warning("stream ended with an error", error=error)
        self._notify()

    # Waiting ------------------------------------------------------------------------------------
    async def wait_for(
        self, predicate: Callable[[], bool], timeout: float = 10.0, what: str = "a condition"
    ) -> None:
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

    async def wait_allocations(self, count: int, timeout: float = 10.0) -> list[si_pb2.Allocation]:
        """Wait until `count` new allocations in total have arrived; returns them all."""
        await self.wait_for(lambda: len(self.seen.new_allocations) >= count, timeout, f"{count} allocations")
        return list(self.seen.new_allocations)

    async def wait_released(self, count: int, timeout: float = 10.0) -> list[si_pb2.AllocationRelease]:
        await self.wait_for(lambda: len(self.seen.released) >= count, timeout, f"{count} releases")
        return list(self.seen.released)

    async def wait_rejected_allocations(
        self, count: int, timeout: float = 10.0
    ) -> list[si_pb2.RejectedAllocation]:
        await self.wait_for(
            lambda: len(self.seen.rejected_allocations) >= count, timeout, f"{count} rejected allocations"
        )
        return list(self.seen.rejected_allocations)

    async def wait_nodes_answered(self, count: int, timeout: float = 10.0) -> None:
        await self.wait_for(
            lambda: len(self.seen.accepted_nodes) + len(self.seen.rejected_nodes) >= count,
            timeout,
            f"{count} node answers",
        )

    async def wait_apps_answered(self, count: int, timeout: float = 10.0) -> None:
        await self.wait_for(
            lambda: len(self.seen.accepted_apps) + len(self.seen.rejected_apps) >= count,
            timeout,
            f"{count} application answers",
        )
