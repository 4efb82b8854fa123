"""Scheduling throughput, in the shape of YuniKorn's BenchmarkScheduling.

Queues root.a (guaranteed memory 100000, vcore 10000) and root.b (guaranteed memory 1000000, vcore
10000); one application per queue; asks split evenly between them, each memory 10 and vcore 1; nodes
sized to hold asks/nodes + 1 asks. Timed from the moment every ask has been submitted until the last
allocation has arrived.

    python -m benchmarks.bench_scheduling --mode inprocess --nodes 500 1000 2000 5000
    python -m benchmarks.bench_scheduling --mode e2e --nodes 500 1000 2000 5000

in-process: the engine is driven directly (commands in, result batches out, no transport).
e2e: a real core process; this process is the resource manager, over gRPC on loopback.
"""

from __future__ import annotations

import argparse
import asyncio
import statistics
import sys
import time
from dataclasses import dataclass

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
from pykorn_cli.gc_tuning import tune_garbage_collector
from rmclient.logging_setup import configure_logging

CONFIG = """
partitions:
  - name: default
    queues:
      - name: root
        submitacl: "*"
        queues:
          - name: a
            resources: {guaranteed: {memory: 100000, vcore: 10000}}
          - name: b
            resources: {guaranteed: {memory: 1000000, vcore: 10000}}
"""
# `--limits`: the same, with user limits that apply to the benchmark's user on every level of its path
# and never bind, so every allocation pays for the checks and the tracking.
LIMITS = """
        limits:
          - users: [bench]
            maxresources: {memory: 1000000000000, vcore: 1000000000}
            maxapplications: 10
"""
LEAF_LIMITS = """
            limits:
              - users: ["*"]
                maxresources: {memory: 1000000000000}
"""
CONFIG_WITH_LIMITS = CONFIG.replace(
    '        submitacl: "*"\n', '        submitacl: "*"\n' + LIMITS.lstrip("\n")
).replace("vcore: 10000}}\n", "vcore: 10000}}\n" + LEAF_LIMITS.lstrip("\n"))
ASK = {"memory": 10, "vcore": 1}
RM = "bench"
USER = "bench"


@dataclass(frozen=True)
class Result:
    mode: str
    nodes: int
    asks: int
    seconds: float

    @property
    def rate(self) -> float:
        return self.asks / self.seconds


def node_capacity(asks: int, nodes: int) -> dict[str, int]:
    per_node = asks // nodes + 1
    return {k: v * per_node for k, v in ASK.items()}


# In-process --------------------------------------------------------------------------------------


async def run_inprocess(nodes: int, asks: int, config: str = CONFIG) -> Result:
    context = ClusterContext(time.time)
    received = 0
    done = asyncio.Event()

    def sink(batches: list[ResultBatch]) -> None:
        nonlocal received
        received += sum(len(b.new_allocations) for b in batches)
        if received >= asks:
            done.set()

    engine = Engine(context, sink)
    task = asyncio.create_task(engine.run())
    part = PartitionKey(RM, "default")
    engine.submit(RegisterRM(RM, load_config(config).config))
    apps = (AppAdd("app-a", part, "root.a", user=USER), AppAdd("app-b", part, "root.b", user=USER))
    engine.submit(UpdateApplications(RM, adds=apps))
    capacity = Resource(node_capacity(asks, nodes))
    changes = tuple(NodeChange(f"node-{i}", NodeAction.CREATE, part, {}, capacity) for i in range(nodes))
    engine.submit(UpdateNodes(RM, changes))
    ask_resource = Resource(ASK)
    batch = tuple(
        Allocation(f"ask-{i}", "app-a" if i % 2 == 0 else "app-b", part, ask_resource, create_time=1.0)
        for i in range(asks)
    )
    await asyncio.sleep(0.05)  # registration, apps and nodes applied before the clock starts
    start = time.perf_counter()
    engine.submit(UpdateAllocations(RM, allocations=batch))
    await done.wait()
    seconds = time.perf_counter() - start
    engine.stop()
    await task
    return Result("in-process", nodes, asks, seconds)


# End to end --------------------------------------------------------------------------------------


async def run_e2e(nodes: int, asks: int, core_address: str | None, config: str = CONFIG) -> Result:
    from benchmarks.counting_client import CountingClient
    from rmclient import messages
    from rmclient.core_process import CoreProcess
    from si.v1 import si_pb2

    core: CoreProcess | None = None
    if core_address is None:
        core = CoreProcess()
        core_address = await core.start()
    try:
        async with CountingClient(core_address, f"{RM}-{nodes}") as client:
            await client.register(config=config)
            capacity = node_capacity(asks, nodes)
            await client.add_nodes(*(messages.node(f"node-{i}", capacity) for i in range(nodes)))
            await client.wait_nodes_answered(nodes, timeout=60)
            await client.send_application_request(
                si_pb2.ApplicationRequest(
                    rmID=client.rm_id,
                    new=[
                        messages.application("app-a", "root.a", user=USER),
                        messages.application("app-b", "root.b", user=USER),
                    ],
                )
            )
            await client.wait_apps_answered(2)
            request = si_pb2.AllocationRequest(
                rmID=client.rm_id,
                allocations=[
                    si_pb2.Allocation(
                        allocationKey=f"ask-{i}",
                        applicationID="app-a" if i % 2 == 0 else "app-b",
                        resourcePerAlloc=messages.resource(ASK),
                    )
                    for i in range(asks)
                ],
            )
            await client.send_allocation_request(request)
            start = time.perf_counter()  # every ask has been submitted
            await client.wait_allocations(asks, timeout=300)
            seconds = time.perf_counter() - start
    finally:
        if core is not None:
            await core.stop()
    return Result("e2e gRPC", nodes, asks, seconds)


def print_table(results: list[Result]) -> None:
    """One row per mode and node count: the median rate over the repeats, with the slowest and fastest."""
    out = sys.stdout
    out.write(
        f"{'mode':<12} {'nodes':>7} {'asks':>8} {'runs':>5} {'median/s':>10} {'min/s':>10} {'max/s':>10}\n"
    )
    groups: dict[tuple[str, int], list[Result]] = {}
    for r in results:
        groups.setdefault((r.mode, r.nodes), []).append(r)
    for (mode, nodes), runs in groups.items():
        rates = sorted(r.rate for r in runs)
        out.write(
            f"{mode:<12} {nodes:>7} {runs[0].asks:>8} {len(runs):>5} {statistics.median(rates):>10,.0f} "
            f"{rates[0]:>10,.0f} {rates[-1]:>10,.0f}\n"
        )
    for mode in dict.fromkeys(m for m, _ in groups):
        by_nodes = {
            n: statistics.median(r.rate for r in runs) for (m, n), runs in groups.items() if m == mode
        }
        if len(by_nodes) > 1:
            low, high = min(by_nodes), max(by_nodes)
            out.write(
                f"{mode}: {high}-node rate is {by_nodes[high] / by_nodes[low]:.0%} of the {low}-node rate\n"
            )


async def main_async(args: argparse.Namespace) -> list[Result]:
    results = []
    config = CONFIG_WITH_LIMITS if args.limits else CONFIG
    for nodes in args.nodes:
        for _ in range(args.repeat):
            if args.mode in ("inprocess", "both"):
                results.append(await run_inprocess(nodes, args.asks, config))
            if args.mode in ("e2e", "both"):
                results.append(await run_e2e(nodes, args.asks, args.core, config))
    return results


def main() -> None:
    parser = argparse.ArgumentParser(
        description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter
    )
    parser.add_argument("--mode", choices=["inprocess", "e2e", "both"], default="both")
    parser.add_argument("--nodes", type=int, nargs="+", default=[500, 1000, 2000, 5000])
    parser.add_argument("--asks", type=int, default=10_000)
    parser.add_argument("--repeat", type=int, default=3)
    parser.add_argument("--core", default=None, help="HOST:PORT of a running core for e2e mode")
    parser.add_argument(
        "--limits", action="store_true", help="user limits on every level of the path (never binding)"
    )
    args = parser.parse_args()
    configure_logging("warning")
    tune_garbage_collector()  # as the daemon does; the in-process mode is that engine, driven directly
    print_table(asyncio.run(main_async(args)))


if __name__ == "__main__":
    main()
