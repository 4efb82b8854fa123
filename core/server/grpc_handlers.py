"""The si.v1.Scheduler service's method handlers, as the generated `add_SchedulerServicer_to_server`
makes them, with one addition: each request's wire size is seen as it is decoded.

A message of `LARGE_MESSAGE_BYTES` or more (up to Limits.max_message_bytes, 64 MiB) leaves its
decoded copy's memory with the allocator after it is handled, refused or not; the core then gives it
back to the system, shortly after and coalesced with any other such request (core.server.memory).
"""

from __future__ import annotations

import asyncio
from collections.abc import Callable
from typing import Any

import grpc

from core.server.grpc_service import SchedulerService
from si.v1 import si_pb2

SERVICE = "si.v1.Scheduler"
LARGE_MESSAGE_BYTES = 16 * 1024 * 1024
# The service's methods, as si.proto declares them: a test holds them equal to the handlers below.
SERVICE_METHODS = (
    "RegisterResourceManager", "UpdateAllocation", "UpdateApplication", "UpdateNode",
    "UpdateConfiguration", "DryRunConfiguration", "StreamEvents",
)  # fmt: skip


class LargeMessages:
    """Asks for memory to be given back after a large request (on the loop's thread: the decoding
    may run on another)."""

    def __init__(
        self,
        loop: asyncio.AbstractEventLoop,
        release: Callable[[str], None],
        threshold: int = LARGE_MESSAGE_BYTES,
    ) -> None:
        self._loop = loop
        self._release = release
        self._threshold = threshold

    def watch(self, parse: Callable[[bytes], Any]) -> Callable[[bytes], Any]:
        def parse_and_note(data: bytes) -> Any:
            if len(data) >= self._threshold:
                self._loop.call_soon_threadsafe(self._release, "a large message handled")
            return parse(data)

        return parse_and_note


def _passing_bytes(serialize: Callable[[Any], bytes]) -> Callable[[Any], bytes]:
    """The three streams' responses come serialized already (core.rm.response_stream queues them so):
    passed as they are; a message is serialized as ever."""

    def serialize_unless_bytes(message: Any) -> bytes:
        return message if isinstance(message, bytes) else serialize(message)

    return serialize_unless_bytes


def add_scheduler(service: SchedulerService, server: grpc.aio.Server, large: LargeMessages) -> None:
    # (method, handler kind, request type, response type, responses queued serialized already)
    table: tuple[tuple[str, Callable[..., Any], Any, Any, bool], ...] = (
        ("RegisterResourceManager", grpc.unary_unary_rpc_method_handler,
         si_pb2.RegisterResourceManagerRequest, si_pb2.RegisterResourceManagerResponse, False),
        ("UpdateAllocation", grpc.stream_stream_rpc_method_handler,
         si_pb2.AllocationRequest, si_pb2.AllocationResponse, True),
        ("UpdateApplication", grpc.stream_stream_rpc_method_handler,
         si_pb2.ApplicationRequest, si_pb2.ApplicationResponse, True),
        ("UpdateNode", grpc.stream_stream_rpc_method_handler, si_pb2.NodeRequest, si_pb2.NodeResponse, True),
        ("UpdateConfiguration", grpc.unary_unary_rpc_method_handler,
         si_pb2.UpdateConfigurationRequest, si_pb2.UpdateConfigurationResponse, False),
        ("DryRunConfiguration", grpc.unary_unary_rpc_method_handler,
         si_pb2.UpdateConfigurationRequest, si_pb2.DryRunConfigurationResponse, False),
        ("StreamEvents", grpc.unary_stream_rpc_method_handler,
         si_pb2.EventStreamRequest, si_pb2.EventStreamResponse, False),
    )  # fmt: skip
    handlers = {
        name: make(
            getattr(service, name),
            request_deserializer=large.watch(request.FromString),
            response_serializer=_passing_bytes(response.SerializeToString)
            if queued
            else response.SerializeToString,
        )
        for name, make, request, response, queued in table
    }
    assert set(handlers) == set(SERVICE_METHODS)
    server.add_generic_rpc_handlers((grpc.method_handlers_generic_handler(SERVICE, handlers),))
    server.add_registered_method_handlers(SERVICE, handlers)
