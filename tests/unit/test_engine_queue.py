"""The engine's command queue: commands applied in the order they came however many wait, and a
bound past which the streams' readers wait (Engine.room) until the engine has taken the queue down."""

from __future__ import annotations

import asyncio
from typing import Any, cast

from core.scheduler.cluster import ClusterContext
from core.scheduler.commands import Command, UnregisterRM
from core.scheduler.engine import Engine
from core.scheduler.metrics import SchedulerMetrics
from core.scheduler.results import ResultBatch


class _Recording:
    """What the engine asks of its cluster context, applying nothing but a record of each command."""

    def __init__(self) -> None:
        self.applied: list[Command] = []
        self.unfinished = False
        self.skip_quiet_partitions = False
        self.metrics = SchedulerMetrics()
        self.took = asyncio.Event()

    def apply(self, command: Command) -> None:
        self.applied.append(command)
        self.took.set()

    def has_pending(self) -> bool:
        return False

    def tick(self) -> None:
        pass

    def drain_results(self) -> list[ResultBatch]:
        return []


def _engine(context: _Recording, **options: Any) -> Engine:
    return Engine(cast(ClusterContext, context), sink=lambda batches: None, **options)


async def _until_applied(context: _Recording, count: int) -> None:
    while len(context.applied) < count:
        context.took.clear()
        await asyncio.wait_for(context.took.wait(), 5.0)


async def test_more_commands_than_one_step_takes_are_applied_in_the_order_they_came() -> None:
    context = _Recording()
    engine = _engine(context, max_commands_per_step=2)
    sent = [UnregisterRM(f"rm-{i}") for i in range(7)]
    for command in sent:
        engine.submit(command)
    runner = asyncio.create_task(engine.run())
    await _until_applied(context, len(sent))
    engine.stop()
    await asyncio.wait_for(runner, 5.0)
    assert context.applied == sent


async def test_past_the_bound_readers_wait_until_the_engine_takes_the_queue_down() -> None:
    context = _Recording()
    engine = _engine(context, max_queued=4, max_commands_per_step=1)
    for i in range(3):
        engine.submit(UnregisterRM(f"rm-{i}"))
    await asyncio.wait_for(engine.room(), 5.0)  # under the bound: no wait
    engine.submit(UnregisterRM("rm-3"))
    reader = asyncio.create_task(engine.room())
    for _ in range(5):
        await asyncio.sleep(0)  # turns of the loop: nothing takes from the queue, the reader waits
    assert not reader.done()
    runner = asyncio.create_task(engine.run())
    await _until_applied(context, 1)
    assert not reader.done()  # three still queued: over half the bound
    await _until_applied(context, 2)
    await asyncio.wait_for(reader, 5.0)  # two left, half the bound: reading goes on
    await _until_applied(context, 4)
    engine.stop()
    await asyncio.wait_for(runner, 5.0)
