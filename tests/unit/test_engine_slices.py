"""The engine's scheduling slices: a burst is scheduled through to its end without waiting for another
command, whatever interrupts a slice (the timers falling due, new commands)."""

from __future__ import annotations

import asyncio
from collections.abc import Callable

from core.config import load_config
from core.objects.allocation import Allocation
from core.objects.partition_key import PartitionKey
from core.resources import Resource
from core.scheduler.cluster import ClusterContext
from core.scheduler.commands import (
    AppAdd,
    NodeAction,
    NodeChange,
    RegisterRM,
    UpdateAllocations,
    UpdateApplications,
    UpdateNodes,
)
from core.scheduler.engine import Engine
from core.scheduler.results import ResultBatch
from tests.unit.domain_helpers import ONE_LEAF, FakeClock

PART = PartitionKey("rm-1", "default")


class _TimersDueOnce(Engine):
    """An engine whose timers fall due once, when `when()` first holds: a tick interval of an hour
    otherwise, so only that one interruption happens while the test runs."""

    def __init__(
        self, context: ClusterContext, sink: Callable[[list[ResultBatch]], None], when: Callable[[], bool]
    ) -> None:
        super().__init__(context, sink, slice_size=5, tick_interval=3600.0)
        self._when = when
        self.due_once = False

    def _tick_due(self) -> bool:
        if not self.due_once and self._when():
            self.due_once = True
            return True
        return False


async def test_a_burst_is_scheduled_to_its_end_when_the_timers_fall_due_between_two_slices() -> None:
    context = ClusterContext(FakeClock())
    placed: list[str] = []
    all_placed = asyncio.Event()

    def sink(batches: list[ResultBatch]) -> None:
        placed.extend(a.key for b in batches for a in b.new_allocations)
        if len(placed) == 20:
            all_placed.set()

    engine = _TimersDueOnce(context, sink, when=lambda: 0 < len(placed) < 20)  # between two slices
    runner = asyncio.create_task(engine.run())
    engine.submit(RegisterRM("rm-1", load_config(ONE_LEAF).config))
    engine.submit(UpdateApplications("rm-1", adds=(AppAdd("app", PART, "root.default"),)))
    node = NodeChange("n1", NodeAction.CREATE, PART, {}, Resource({"memory": 100}))
    engine.submit(UpdateNodes("rm-1", (node,)))
    asks = tuple(Allocation(f"a{i}", "app", PART, Resource({"memory": 1})) for i in range(20))
    engine.submit(UpdateAllocations("rm-1", allocations=asks))  # four slices of five
    try:
        # No other command comes: the burst must not wait for one (the engine's tick is an hour away).
        await asyncio.wait_for(all_placed.wait(), 10.0)
    finally:
        engine.stop()
        await asyncio.wait_for(runner, 10.0)
    assert engine.due_once
    assert sorted(placed) == sorted(a.key for a in asks)
