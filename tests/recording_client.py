"""A resource manager for tests: rmclient's SchedulerClient with a recorder of everything the core said.

The client itself keeps nothing; `Observed` is a handler that remembers every response, so tests can
assert on the whole history and wait until the core has said what they expect.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass, field

from rmclient import messages
from rmclient.client import ResponseHandler, SchedulerClient
from rmclient.tls import ClientTLS
from si.v1 import si_pb2


@dataclass
class Observed(ResponseHandler):
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
    # Called with each new allocation as it arrives.
    allocation_listeners: list[Callable[[si_pb2.Allocation], None]] = field(default_factory=list)

    def on_node_usage(self, node_id: str) -> dict[str, int]:
        total: dict[str, int] = {}
        for alloc in self.allocations.values():
            if alloc.nodeID == node_id:
                for k, v in messages.resource_dict(alloc.resourcePerAlloc).items():
                    total[k] = total.get(k, 0) + v
        return total

    def on_allocations(self, response: si_pb2.AllocationResponse) -> None:
        for alloc in response.new:
            self.allocations[alloc.allocationKey] = alloc
            self.new_allocations.append(alloc)
            for listener in self.allocation_listeners:
                listener(alloc)
        for rel in response.released:
            self.released.append(rel)
            if rel.allocationKey:
                self.allocations.pop(rel.allocationKey, None)
            else:
                for key in [k for k, a in self.allocations.items() if a.applicationID == rel.applicationID]:
                    del self.allocations[key]
        self.rejected_allocations.extend(response.rejectedAllocations)

    def on_applications(self, response: si_pb2.ApplicationResponse) -> None:
        self.accepted_apps.extend(a.applicationID for a in response.accepted)
        self.rejected_apps.extend(response.rejected)
        for update in response.updated:
            self.app_states.setdefault(update.applicationID, []).append(update.state)

    def on_nodes(self, response: si_pb2.NodeResponse) -> None:
        self.accepted_nodes.extend(n.nodeID for n in response.accepted)
        self.rejected_nodes.extend(response.rejected)

    def on_stream_closed(self, stream: str, error: str | None) -> None:
        if error is None:
            self.stream_ends.append("ended by the core")
        else:
            self.stream_errors.append(error)


class RecordingClient(SchedulerClient):
    """A SchedulerClient whose `seen` records every response; `wait_*` wait for counts of them."""

    def __init__(self, target: str, rm_id: str, tls: ClientTLS | None = None) -> None:
        self.seen = Observed()
        super().__init__(target, rm_id, tls, handlers=[self.seen])

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
