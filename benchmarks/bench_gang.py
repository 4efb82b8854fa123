"""Gang scheduling throughput: 1,000 gangs of 10 on 5,000 nodes, placeholders then replacement.

The engine is driven in-process, as `bench_scheduling --mode inprocess`: commands in, result batches
out. The sink plays the RM: when the core releases a placeholder as replaced it confirms at once
(an AllocationRelease of type PLACEHOLDER_REPLACED), and the real allocation follows. Three phases are
timed, each from the moment its asks are submitted to the last allocation it waits for:

1. plain: as many ordinary asks as the gangs have members, in as many applications of as many asks
   each (the reference: the same queue shape, no gang);
2. placeholders: every gang's placeholders allocated (each gang then runs);
3. replacement: every real task placed in a placeholder's stead, the RM's confirmation included.

    python -m benchmarks.bench_gang [--gangs 1000] [--members 10] [--nodes 5000] [--repeat 3]
"""

from __future__ import annotations

import argparse
import asyncio
import statistics
import sys
import time
from collections.abc import Callable

from benchmarks.bench_scheduling import ASK, CONFIG, RM, USER, node_capacity
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
    ReleaseRequest,
    UpdateAllocations,
    UpdateApplications,
    UpdateNodes,
)
from core.scheduler.engine import Engine
from core.scheduler.results import ResultBatch, Termination
from pykorn_cli.gc_tuning import tune_garbage_collector
from rmclient.logging_setup import configure_logging

PART = PartitionKey(RM, "default")


class _Rm:
    """The sink: counts allocations by kind and confirms each placeholder replacement at once."""

    def __init__(self) -> None:
        self.engine: Engine | None = None
        self.placeholders = 0
        self.real = 0
        self.wanted: tuple[Callable[[], bool], asyncio.Event] | None = None

    def __call__(self, batches: list[ResultBatch]) -> None:
        confirms = []
        for batch in batches:
            for alloc in batch.new_allocations:
                if alloc.placeholder:
                    self.placeholders += 1
                else:
                    self.real += 1
            confirms += [
                ReleaseRequest(PART, r.app_id, r.key, termination=Termination.PLACEHOLDER_REPLACED)
                for r in batch.released
                if r.termination == Termination.PLACEHOLDER_REPLACED
            ]
        if confirms and self.engine is not None:
            self.engine.submit(UpdateAllocations(RM, releases=tuple(confirms)))
        if self.wanted is not None and self.wanted[0]():
            self.wanted[1].set()

    async def until(self, done: Callable[[], bool]) -> None:
        event = asyncio.Event()
        self.wanted = (done, event)
        if not done():
            await event.wait()


async def run(gangs: int, members: int, nodes: int) -> dict[str, float]:
    """Seconds per phase for one run."""
    total = gangs * members
    context = ClusterContext(time.time)
    rm = _Rm()
    engine = Engine(context, rm)
    rm.engine = engine
    task = asyncio.create_task(engine.run())
    engine.submit(RegisterRM(RM, load_config(CONFIG).config))
    # Room for the plain asks and the gangs at once: the phases do not wait on each other's room.
    capacity = Resource(node_capacity(3 * total, nodes))
    engine.submit(UpdateNodes(RM, tuple(NodeChange(f"node-{i}", NodeAction.CREATE, PART, {}, capacity)
                                        for i in range(nodes))))  # fmt: skip
    size = Resource({k: v * members for k, v in ASK.items()})
    apps = [AppAdd(f"plain-{g}", PART, "root.a", user=USER) for g in range(gangs)]
    apps += [AppAdd(f"gang-{g}", PART, "root.b", user=USER, placeholder_ask=size) for g in range(gangs)]
    engine.submit(UpdateApplications(RM, adds=tuple(apps)))
    ask = Resource(ASK)
    await asyncio.sleep(0.05)  # registration, nodes and applications applied before the clocks start

    def phase(asks: tuple[Allocation, ...]) -> float:
        engine.submit(UpdateAllocations(RM, allocations=asks))
        return time.perf_counter()

    start = phase(tuple(
        Allocation(f"p-{m}", f"plain-{g}", PART, ask, create_time=1.0)
        for g in range(gangs) for m in range(members)
    ))  # fmt: skip
    await rm.until(lambda: rm.real >= total)
    plain = time.perf_counter() - start
    start = phase(tuple(
        Allocation(f"ph-{m}", f"gang-{g}", PART, ask, create_time=1.0, task_group="workers", placeholder=True)
        for g in range(gangs) for m in range(members)
    ))  # fmt: skip
    await rm.until(lambda: rm.placeholders >= total)
    placeholders = time.perf_counter() - start
    start = phase(tuple(
        Allocation(f"task-{m}", f"gang-{g}", PART, ask, create_time=1.0, task_group="workers")
        for g in range(gangs) for m in range(members)
    ))  # fmt: skip
    await rm.until(lambda: rm.real >= 2 * total)
    replacement = time.perf_counter() - start
    engine.stop()
    await task
    return {"plain": plain, "placeholders": placeholders, "replacement": replacement}


async def main_async(args: argparse.Namespace) -> list[dict[str, float]]:
    return [await run(args.gangs, args.members, args.nodes) for _ in range(args.repeat)]


def main() -> None:
    parser = argparse.ArgumentParser(
        description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter
    )
    parser.add_argument("--gangs", type=int, default=1_000)
    parser.add_argument("--members", type=int, default=10)
    parser.add_argument("--nodes", type=int, default=5_000)
    parser.add_argument("--repeat", type=int, default=3)
    args = parser.parse_args()
    configure_logging("warning")
    tune_garbage_collector()
    runs = asyncio.run(main_async(args))
    total = args.gangs * args.members
    out = sys.stdout
    out.write(f"gangs: {args.gangs} of {args.members} on {args.nodes} nodes, in-process, {len(runs)} runs\n")
    out.write(f"{'phase':<14} {'median/s':>10} {'min/s':>10} {'max/s':>10}\n")
    for name in ("plain", "placeholders", "replacement"):
        rates = [total / r[name] for r in runs]
        out.write(
            f"{name:<14} {statistics.median(rates):>10,.0f} {min(rates):>10,.0f} {max(rates):>10,.0f}\n"
        )
    ratio = statistics.median(r["replacement"] / r["plain"] for r in runs)
    out.write(
        f"a replacement (two steps, the RM's confirmation included) costs {ratio:.2f}x a plain allocation\n"
    )


if __name__ == "__main__":
    main()
