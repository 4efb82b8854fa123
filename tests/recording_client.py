"""A resource manager for tests: rmclient's SchedulerClient with a recorder of everything the core said.

The client itself keeps nothing; `Observed` is a handler that remembers every response, so tests can
assert on the whole history and wait until the core has said what they expect. `barrier` waits until
the core has processed, scheduled and answered everything sent before it, so a test can then assert
that nothing more happened without sleeping.
"""

from __future__ import annotations

from collections.abc import Callable, Sized
from dataclasses import dataclass, field
from functools import partial
from operator import contains

from rmclient import messages
from rmclient.client import ResponseHandler, SchedulerClient
from rmclient.tls import ClientTLS
from si.v1 import si_pb2

# A barrier's probe: the release of an allocation of an application no RM has, so the core rejects
# it on the allocation stream and changes nothing. Recognised by these names, probes' rejections are
# kept apart from the test's own (`Observed.probe_answers`).
PROBE_APP = "__barrier-probe__"
PROBE_KEY = "__barrier-probe__-"


def _is_probe(rejection: si_pb2.RejectedAllocation) -> bool:
    return rejection.applicationID == PROBE_APP and rejection.allocationKey.startswith(PROBE_KEY)


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
    probe_answers: dict[str, str] = field(default_factory=dict)  # barrier probes answered: key -> reason
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
        for rejection in response.rejectedAllocations:
            if _is_probe(rejection):
                self.probe_answers[rejection.allocationKey] = rejection.reason
            else:
                self.rejected_allocations.append(rejection)

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
        self._probes = 0
        super().__init__(target, rm_id, tls, handlers=[self.seen])

    async def barrier(self, rounds: int = 2, timeout: float = 15.0) -> None:
        """Until the core has processed everything this RM sent before (on the allocation stream, or
        already answered on any stream) and every allocation or release it decided from it has arrived.

        The engine applies commands in arrival order and emits their answers, then schedules and emits
        what that produced (allocations, preemptions) before it takes the next commands; answers on one
        stream arrive in order. The first probe is applied after everything sent before it, so its
        answer follows their answers, and the scheduling of the same engine step emits right after it.
        The second probe, sent once the first was answered, is applied in a later step, so its answer
        follows everything that scheduling produced. So after the two round trips, what has not arrived
        was not decided. (Scheduling more than the engine's slice, 1,000 allocations, goes on over later
        steps; decisions on time, such as delays running out, are covered as far as they were taken
        before the probes.)

        The probe, the release of an allocation of an unknown application, is rejected by the engine
        and changes nothing; its rejection is kept out of `seen.rejected_allocations`. The RM must be
        registered with its streams open: a probe refused on arrival (rmproxy answers at once, ahead
        of earlier commands) fails the barrier rather than passing it early.
        """
        for _ in range(rounds):
            self._probes += 1
            key = f"{PROBE_KEY}{self._probes}"
            await self.release(PROBE_APP, key, message="test barrier probe")
            await self.wait_for(
                partial(contains, self.seen.probe_answers, key), timeout, f"barrier probe {key}"
            )
            # Answered by the engine (the application is unknown there), not refused on arrival.
            reason = self.seen.probe_answers[key]
            engine = (PROBE_APP in reason and "is not known" in reason) or "does not exist for" in reason
            assert engine, f"the barrier probe was refused on arrival, not by the engine: {reason}"

    async def wait_more(self, items: Sized, than: int, timeout: float = 10.0, what: str = "") -> None:
        """Until `items` (a list the recorder appends to) holds more than `than` entries."""
        await self.wait_for(lambda: len(items) > than, timeout, what or f"more than {than}")

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


def recorded(client: SchedulerClient) -> RecordingClient:
    """A client a shim holds, as the recording client a test gave it."""
    assert isinstance(client, RecordingClient), type(client)
    return client
