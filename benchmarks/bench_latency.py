"""Latency run: a steady state on 5,000 nodes kept about 90 % full, tasks finishing and 1,000 new
asks per second arriving; how long each ask takes from being sent to its allocation arriving back.

The time is taken at the resource manager (this process), so it includes the gRPC hop both ways and
is an upper bound of the core's own arrival-to-allocation time.

    python -m benchmarks.bench_latency [--nodes 5000] [--rate 1000] [--seconds 10]
"""

from __future__ import annotations

import argparse
import asyncio
import statistics
import sys
import time
from collections import deque

from benchmarks.bench_scheduling import ASK, CONFIG
from benchmarks.counting_client import CountingClient
from pykorn_cli.gc_tuning import tune_garbage_collector
from rmclient import messages
from rmclient.core_process import CoreProcess
from rmclient.logging_setup import configure_logging
from si.v1 import si_pb2

SLOTS_PER_NODE = 2
FILL = 0.9
TICK = 0.01  # seconds between batches of new asks
WARMUP = 1.0  # seconds of steady state before latencies count


async def run(nodes: int, rate: int, seconds: float) -> list[float]:
    core = CoreProcess()
    await core.start()
    sent_at: dict[str, float] = {}
    latencies: list[float] = []
    measuring = False

    def on_allocation(alloc: si_pb2.Allocation) -> None:
        t0 = sent_at.pop(alloc.allocationKey, None)
        if t0 is not None and measuring:
            latencies.append(time.perf_counter() - t0)

    try:
        async with CountingClient(core.address, "latency") as client:
            client.counts.allocation_listeners.append(on_allocation)
            await client.register(config=CONFIG)
            capacity = {k: v * SLOTS_PER_NODE for k, v in ASK.items()}
            await client.add_nodes(*(messages.node(f"node-{i}", capacity) for i in range(nodes)))
            await client.wait_nodes_answered(nodes, timeout=120)
            await client.send_application_request(
                si_pb2.ApplicationRequest(rmID=client.rm_id, new=[messages.application("app-a", "root.a")])
            )
            await client.wait_apps_answered(1)
            running: deque[str] = deque()
            counter = 0

            def asks(n: int) -> list[si_pb2.Allocation]:
                nonlocal counter
                out = []
                now = time.perf_counter()
                for _ in range(n):
                    key = f"ask-{counter}"
                    counter += 1
                    sent_at[key] = now
                    running.append(key)
                    out.append(messages.ask("app-a", key, ASK))
                return out

            fill = int(nodes * SLOTS_PER_NODE * FILL)
            await client.asks(asks(fill))
            await client.wait_allocations(fill, timeout=120)
            per_tick = max(1, round(rate * TICK))
            loop = asyncio.get_running_loop()
            start = loop.time()
            tick = 0
            while loop.time() - start < WARMUP + seconds:
                measuring = loop.time() - start >= WARMUP
                # The oldest tasks finish; as many new asks arrive: the cluster stays about 90 % full.
                await client.release_many(("app-a", running.popleft()) for _ in range(per_tick))
                await client.asks(asks(per_tick))
                tick += 1
                await asyncio.sleep(max(0.0, start + tick * TICK - loop.time()))
            await asyncio.sleep(0.5)  # the last answers
    finally:
        await core.stop()
    return latencies


def main() -> None:
    parser = argparse.ArgumentParser(
        description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter
    )
    parser.add_argument("--nodes", type=int, default=5000)
    parser.add_argument("--rate", type=int, default=1000, help="new asks per second")
    parser.add_argument("--seconds", type=float, default=10.0, help="measured steady state")
    args = parser.parse_args()
    configure_logging("warning")
    tune_garbage_collector()
    latencies = sorted(asyncio.run(run(args.nodes, args.rate, args.seconds)))
    if not latencies:
        sys.stdout.write("latency run: no allocation measured\n")
        sys.exit(1)
    p50 = statistics.median(latencies)
    p99 = latencies[min(len(latencies) - 1, int(0.99 * len(latencies)))]
    sys.stdout.write(
        f"latency run: {args.nodes:,} nodes ~{FILL:.0%} full, {args.rate:,} asks/s for {args.seconds:g}s: "
        f"{len(latencies):,} asks, p50 {p50 * 1000:.2f} ms, p99 {p99 * 1000:.2f} ms, "
        f"max {latencies[-1] * 1000:.2f} ms\n"
    )


if __name__ == "__main__":
    main()
