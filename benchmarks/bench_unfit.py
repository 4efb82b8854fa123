"""Unfit-asks run: does a pile of asks that no node can take slow anyone else down?

One resource manager ("probe") sends one ask at a time to its own partition and times each from sent
to allocated (then releases it and sends the next). It does so first on an idle core, then again while
another resource manager ("busy") has `--unfit` asks pending that fit none of its nodes (each asks more
memory than any node has), spread over `--apps` applications. Nothing changes in the busy partition
while the probe runs, so a core that parks what cannot fit costs the probe nothing; one that tries
every pending ask again on every cycle makes each probe wait for that.

    python -m benchmarks.bench_unfit [--unfit 50000] [--apps 100] [--nodes 500] [--probes 1000] [--full]
"""

from __future__ import annotations

import argparse
import asyncio
import statistics
import sys
import time

from benchmarks.bench_scheduling import ASK, CONFIG
from benchmarks.counting_client import CountingClient
from pykorn_cli.gc_tuning import tune_garbage_collector
from rmclient import messages
from rmclient.core_process import CoreProcess
from rmclient.logging_setup import configure_logging
from si.v1 import si_pb2

NODE = {"memory": 1000, "vcore": 100}
UNFIT = {"memory": 2000, "vcore": 1}  # more memory than any node has
# `--full`: the busy RM's nodes are first filled to 600 of 1,000 memory; its waiting asks (500 each)
# would fit an empty node, so they may reserve one after 2 s and look for victims after 30 s.
FILLER = {"memory": 600, "vcore": 1}
WAITING = {"memory": 500, "vcore": 1}
SEND_BATCH = 5000


async def _probe(client: CountingClient, count: int, tag: str) -> list[float]:
    """Ask, wait for the allocation, release it; `count` times. Each ask's time from sent to allocated."""
    latencies: list[float] = []
    for i in range(count):
        want = client.counts.allocations + 1
        started = time.perf_counter()
        key = f"{tag}-{i}"
        await client.ask("probe-app", key, ASK)
        await client.wait_allocations(want, timeout=30.0)
        latencies.append(time.perf_counter() - started)
        await client.release("probe-app", key)
    return latencies


async def _fill_unfit(client: CountingClient, unfit: int, apps: int, nodes: int, full: bool) -> None:
    """`unfit` asks over `apps` applications. Then the release of an ask of an application the core does
    not know: the core takes an RM's messages in order, so once that is refused every ask is in."""
    await client.add_applications(*(messages.application(f"busy-{a}", "root.a") for a in range(apps)))
    await client.wait_apps_answered(apps, timeout=60)
    if full:
        await client.asks(messages.ask("busy-0", f"filler-{n}", FILLER) for n in range(nodes))
        await client.wait_allocations(nodes, timeout=120)
    shape = WAITING if full else UNFIT
    batch: list[si_pb2.Allocation] = []
    for i in range(unfit):
        batch.append(messages.ask(f"busy-{i % apps}", f"unfit-{i}", shape))
        if len(batch) == SEND_BATCH:
            await client.asks(batch)
            batch = []
    if batch:
        await client.asks(batch)
    await client.release("no-such-app", "barrier")
    await client.wait_for(lambda: client.counts.rejected_allocations >= 1, 600.0, "the barrier's refusal")


async def run(unfit: int, apps: int, nodes: int, probes: int, full: bool) -> tuple[list[float], list[float]]:
    core = CoreProcess()
    await core.start()
    try:
        async with (
            CountingClient(core.address, "probe") as probe,
            CountingClient(core.address, "busy") as busy,
        ):
            for client in (probe, busy):
                await client.register(config=CONFIG)
                await client.add_nodes(*(messages.node(f"node-{i}", NODE) for i in range(nodes)))
                await client.wait_nodes_answered(nodes, timeout=120)
            await probe.add_application("probe-app", "root.a")
            await probe.wait_apps_answered(1)
            await _probe(probe, min(probes, 100), "warm")
            idle = await _probe(probe, probes, "idle")
            await _fill_unfit(busy, unfit, apps, nodes, full)
            loaded = await _probe(probe, probes, "loaded")
    finally:
        await core.stop()
    return idle, loaded


def _describe(latencies: list[float]) -> str:
    ordered = sorted(latencies)
    p50 = statistics.median(ordered)
    p99 = ordered[min(len(ordered) - 1, int(0.99 * len(ordered)))]
    return f"p50 {p50 * 1000:.2f} ms, p99 {p99 * 1000:.2f} ms, max {ordered[-1] * 1000:.2f} ms"


def main() -> None:
    parser = argparse.ArgumentParser(
        description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter
    )
    parser.add_argument("--unfit", type=int, default=50_000, help="asks pending that fit no node")
    parser.add_argument("--apps", type=int, default=100, help="applications they are spread over")
    parser.add_argument("--nodes", type=int, default=500, help="nodes of each resource manager")
    parser.add_argument("--probes", type=int, default=1000, help="asks the probe times, each phase")
    parser.add_argument(
        "--full", action="store_true", help="asks that fit an empty node, on nodes already 60%% full"
    )
    args = parser.parse_args()
    configure_logging("warning")
    tune_garbage_collector()
    idle, loaded = asyncio.run(run(args.unfit, args.apps, args.nodes, args.probes, args.full))
    what = "waiting asks on full nodes" if args.full else "unfit asks"
    ratio = statistics.median(loaded) / statistics.median(idle)
    sys.stdout.write(
        f"unfit run: {args.nodes:,} nodes per RM, {args.probes:,} probes each phase\n"
        f"  idle core:                       {_describe(idle)}\n"
        f"  {args.unfit:,} {what} in {args.apps:,} apps: {_describe(loaded)}\n"
        f"  median with / without: {ratio:.2f}x\n"
    )


if __name__ == "__main__":
    main()
