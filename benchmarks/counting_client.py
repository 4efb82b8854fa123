"""The benchmarks' resource manager: rmclient's client with a handler that counts answers as they come.

It keeps counts, not the messages, so a run of 200,000 allocations costs the RM side no memory for them.
"""

from __future__ import annotations

from collections.abc import Callable

from rmclient.client import ResponseHandler, SchedulerClient
from si.v1 import si_pb2


class Counts(ResponseHandler):
    def __init__(self) -> None:
        self.nodes_answered = 0
        self.apps_answered = 0
        self.allocations = 0
        self.rejected_allocations = 0
        self.allocation_listeners: list[Callable[[si_pb2.Allocation], None]] = []

    def on_allocations(self, response: si_pb2.AllocationResponse) -> None:
        self.allocations += len(response.new)
        self.rejected_allocations += len(response.rejectedAllocations)
        for listener in self.allocation_listeners:
            for alloc in response.new:
                listener(alloc)

    def on_applications(self, response: si_pb2.ApplicationResponse) -> None:
        self.apps_answered += len(response.accepted) + len(response.rejected)

    def on_nodes(self, response: si_pb2.NodeResponse) -> None:
        self.nodes_answered += len(response.accepted) + len(response.rejected)


class CountingClient(SchedulerClient):
    def __init__(self, target: str, rm_id: str) -> None:
        self.counts = Counts()
        super().__init__(target, rm_id, handlers=[self.counts])

    async def wait_nodes_answered(self, count: int, timeout: float = 10.0) -> None:
        await self.wait_for(lambda: self.counts.nodes_answered >= count, timeout, f"{count} node answers")

    async def wait_apps_answered(self, count: int, timeout: float = 10.0) -> None:
        await self.wait_for(
            lambda: self.counts.apps_answered >= count, timeout, f"{count} application answers"
        )

    async def wait_allocations(self, count: int, timeout: float = 10.0) -> None:
        await self.wait_for(lambda: self.counts.allocations >= count, timeout, f"{count} allocations")
