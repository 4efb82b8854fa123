"""Scale run: 50,000 nodes and 200,000 pending asks, end to end over gRPC.

Reports the allocation rate (from the moment every ask is submitted to the last allocation) and the
core process's peak resident memory (VmHWM), which must stay under 2 GiB.

    python -m benchmarks.bench_scale [--nodes 50000] [--asks 200000]
"""

from __future__ import annotations

import argparse
import asyncio
import sys
import time
from pathlib import Path

from benchmarks.bench_scheduling import ASK, CONFIG, node_capacity
from benchmarks.counting_client import CountingClient
from pykorn_cli.gc_tuning import tune_garbage_collector
from rmclient import messages
from rmclient.core_process import CoreProcess
from rmclient.logging_setup import configure_logging
from si.v1 import si_pb2


def peak_rss_bytes(pid: int) -> int:
    for line in Path(f"/proc/{pid}/status").read_text().splitlines():
        if line.startswith("VmHWM:"):
            return int(line.split()[1]) * 1024
    raise RuntimeError("no VmHWM in /proc status")


async def run(nodes: int, asks: int) -> tuple[float, int, float]:
    core = CoreProcess()
    await core.start()
    assert core.process is not None
    try:
        async with CountingClient(core.address, "scale") as client:
            await client.register(config=CONFIG)
            capacity = node_capacity(asks, nodes)
            setup = time.perf_counter()
            for start in range(0, nodes, 10_000):
                chunk = range(start, min(start + 10_000, nodes))
                await client.add_nodes(*(messages.node(f"node-{i}", capacity) for i in chunk))
            await client.wait_nodes_answered(nodes, timeout=300)
            await client.send_application_request(
                si_pb2.ApplicationRequest(
                    rmID=client.rm_id,
                    new=[messages.application("app-a", "root.a"), messages.application("app-b", "root.b")],
                )
            )
            await client.wait_apps_answered(2)
            resource = messages.resource(ASK)
            request = si_pb2.AllocationRequest(
                rmID=client.rm_id,
                allocations=[
                    si_pb2.Allocation(
                        allocationKey=f"ask-{i}",
                        applicationID="app-a" if i % 2 == 0 else "app-b",
                        resourcePerAlloc=resource,
                    )
                    for i in range(asks)
                ],
            )
            setup_seconds = time.perf_counter() - setup
            await client.send_allocation_request(request)
            start_time = time.perf_counter()
            await client.wait_allocations(asks, timeout=600)
            seconds = time.perf_counter() - start_time
            peak = peak_rss_bytes(core.process.pid)
    finally:
        await core.stop()
    return seconds, peak, setup_seconds


def main() -> None:
    parser = argparse.ArgumentParser(
        description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter
    )
    parser.add_argument("--nodes", type=int, default=50_000)
    parser.add_argument("--asks", type=int, default=200_000)
    args = parser.parse_args()
    configure_logging("warning")
    tune_garbage_collector()
    seconds, peak, setup = asyncio.run(run(args.nodes, args.asks))
    sys.stdout.write(
        f"scale run: {args.nodes:,} nodes, {args.asks:,} asks: {seconds:.2f}s, {args.asks / seconds:,.0f} "
        f"allocations/s; core peak memory {peak / 2**20:,.0f} MiB (setup {setup:.1f}s)\n"
    )


if __name__ == "__main__":
    main()
