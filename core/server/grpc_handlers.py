"""The si.v1.Scheduler service's method handlers, as the generated `add_SchedulerServicer_to_server`
makes them, with one addition: each request's wire size is seen as it is decoded.

A message of `LARGE_MESSAGE_BYTES` or more (up to Limits.max_message_bytes, 64 MiB) leaves its
decoded copy's memory with the allocator after it is handled, refused or not; the core then gives it
back to the system once, shortly after (core.server.memory), however many such messages came meanwhile.
"""

from __future__ import annotations

import asyncio
from collections.abc import Callable
from typing import Any

import grpc

from core.server.grpc_service import SchedulerService
from core.server.memory import release_memory
from si.v1 import si_pb2

SERVICE = "si.v1.Scheduler"
LARGE_MESSAGE_BYTES = 16 * 1024 * 1024
RELEASE_DELAY = 1.0  # seconds after a large message, time for it to be handled and dropped


class LargeMessages:
    """Gives memory back once after large requests; at most one release waits at a time."""

    def __init__(self, loop: asyncio.AbstractEventLoop, threshold: int = LARGE_MESSAGE_BYTES) -> None:
        self._loop = loop
        self._threshold = threshold
        self._waiting = False

    def watch(self, parse: Callable[[bytes], Any]) -> Callable[[bytes], Any]:
        def parse_and_note(data: bytes) -> Any:
            if len(data) >= self._threshold and not self._waiting:
                self._waiting = True
                self._loop.call_soon_threadsafe(self._loop.call_later, RELEASE_DELAY, self._release)
            return parse(data)

        return parse_and_note

    def _release(self) -> None:
        self._waiting = False
        release_memory("a large message handled")


def add_scheduler(service: SchedulerService, server: grpc.aio.Server, large: LargeMessages) -> None:
    stream = grpc.stream_stream_rpc_method_handler
    unary = grpc.unary_unary_rpc_method_handler
    handlers = {
        "RegisterResourceManager": unary(
            service.RegisterResourceManager,
            request_deserializer=large.watch(si_pb2.RegisterResourceManagerRequest.FromString),
            response_serializer=si_pb2.RegisterResourceManagerResponse.SerializeToString,
        ),
        "UpdateAllocation": stream(
            service.UpdateAllocation,
            request_deserializer=large.watch(si_pb2.AllocationRequest.FromString),
            response_serializer=si_pb2.AllocationResponse.SerializeToString,
        ),
        "UpdateApplication": stream(
            service.UpdateApplication,
            request_deserializer=large.watch(si_pb2.ApplicationRequest.FromString),
            response_serializer=si_pb2.ApplicationResponse.SerializeToString,
        ),
        "UpdateNode": stream(
            service.UpdateNode,
            request_deserializer=large.watch(si_pb2.NodeRequest.FromString),
            response_serializer=si_pb2.NodeResponse.SerializeToString,
        ),
        "UpdateConfiguration": unary(
            service.UpdateConfiguration,
            request_deserializer=large.watch(si_pb2.UpdateConfigurationRequest.FromString),
            response_serializer=si_pb2.UpdateConfigurationResponse.SerializeToString,
        ),
        "DryRunConfiguration": unary(
            service.DryRunConfiguration,
            request_deserializer=large.watch(si_pb2.UpdateConfigurationRequest.FromString),
            response_serializer=si_pb2.DryRunConfigurationResponse.SerializeToString,
        ),
        "StreamEvents": grpc.unary_stream_rpc_method_handler(
            service.StreamEvents,
            request_deserializer=si_pb2.EventStreamRequest.FromString,
            response_serializer=si_pb2.EventStreamResponse.SerializeToString,
        ),
    }
    server.add_generic_rpc_handlers((grpc.method_handlers_generic_handler(SERVICE, handlers),))
    server.add_registered_method_handlers(SERVICE, handlers)
