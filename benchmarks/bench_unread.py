"""RMs that never read their allocation stream, against a `pykorn core` process with its default limits:
how large the core grows, how soon each such stream is cut, and what a reading RM's round trip is
meanwhile (docs/reliability.md, "Unread responses").

Each hog registers, then opens an allocation stream on a channel with small HTTP/2 windows and sends
asks (each with `--tag-bytes` of tags, which its allocation echoes back, so its answers are large) and
releases of the previous ask, never reading. A neighbour RM asks for one allocation at a time and
times each round trip.

    python -m benchmarks.bench_unread --hogs 1 --tag-bytes 2000
    python -m benchmarks.bench_unread --hogs 4 --tag-bytes 2000
"""

from __future__ import annotations

import argparse
import asyncio
import statistics
import sys
import time
import urllib.request
from collections.abc import AsyncIterator
from typing import Any

import grpc

from rmclient import messages
from rmclient.core_process import CoreProcess
from si.v1 import metadata, si_pb2, si_pb2_grpc
from tests.integration.core_helpers import WORK_CONFIG
from tests.recording_client import RecordingClient

ASK = {"memory": 1, "vcore": 1}


def streams_cut(core: CoreProcess) -> int:
    """The core's count of cut streams (its metrics; the cut hogs are counted in the order cut)."""
    with urllib.request.urlopen(f"{core.rest_url}/ws/v1/metrics", timeout=10) as answer:
        text = answer.read().decode()
    line = next(li for li in text.splitlines() if li.startswith("pykorn_response_streams_cut_total"))
    return int(float(line.split()[-1]))


async def hog_requests(
    rm_id: str, tags: dict[str, str], stop: asyncio.Event
) -> AsyncIterator[si_pb2.AllocationRequest]:
    i = 0
    while not stop.is_set():
        releases = [messages.release(f"{rm_id}-app", f"k{i - 1}")] if i else []
        yield si_pb2.AllocationRequest(
            rmID=rm_id,
            allocations=[messages.ask(f"{rm_id}-app", f"k{i}", ASK, tags=tags)],
            releases=si_pb2.AllocationReleasesRequest(allocationsToRelease=releases),
        )
        i += 1
        if i % 50 == 0:
            await asyncio.sleep(0)


async def run(hogs: int, tag_bytes: int, seconds: float) -> None:
    core = CoreProcess()
    await core.start()
    tags = {f"kubernetes.io/label/k{i}": "v" * 100 for i in range(max(1, tag_bytes // 130))}
    clients: list[RecordingClient] = []
    calls: list[tuple[grpc.aio.Channel, Any]] = []
    stop = asyncio.Event()
    try:
        for n in range(hogs):
            hog = RecordingClient(core.address, f"hog-{n}")
            await hog.__aenter__()
            clients.append(hog)
            await hog.register(config=WORK_CONFIG)
            await hog.add_node("node-1", {"memory": 10**12, "vcore": 10**12})
            await hog.wait_nodes_answered(1)
            await hog.add_application(f"hog-{n}-app", "root.work")
            await hog.wait_apps_answered(1)
        neighbour = RecordingClient(core.address, "neighbour")
        await neighbour.__aenter__()
        clients.append(neighbour)
        await neighbour.register(config=WORK_CONFIG)
        await neighbour.add_node("node-1", {"memory": 10**12, "vcore": 10**12})
        await neighbour.wait_nodes_answered(1)
        await neighbour.add_application("n-app", "root.work")
        await neighbour.wait_apps_answered(1)
        idle = core.resident_mb()
        cuts_before = streams_cut(core)
        started = time.monotonic()
        for n in range(hogs):
            channel = grpc.aio.insecure_channel(core.address, options=[("grpc.http2.bdp_probe", 0)])
            call = si_pb2_grpc.SchedulerStub(channel).UpdateAllocation(
                hog_requests(f"hog-{n}", tags, stop), metadata=((metadata.RM_ID, f"hog-{n}"),)
            )
            calls.append((channel, call))
        peak, trips, cut_at = idle, [], [0.0] * hogs
        i = 0
        while time.monotonic() - started < seconds:
            t0 = time.perf_counter()
            await neighbour.asks([messages.ask("n-app", f"n{i}", ASK)])
            await neighbour.wait_allocations(i + 1)
            trips.append(time.perf_counter() - t0)
            await neighbour.release("n-app", f"n{i}")
            i += 1
            peak = max(peak, core.resident_mb())
            if i % 50 == 0:
                for n in range(streams_cut(core) - cuts_before):
                    if n < hogs and not cut_at[n]:
                        cut_at[n] = time.monotonic() - started
        stop.set()
        after = core.resident_mb()
        cuts = ", ".join(f"{c:.1f} s" if c else "not cut" for c in sorted(cut_at))
        p99 = statistics.quantiles(trips, n=100)[98] * 1000 if len(trips) >= 100 else max(trips) * 1000
        sys.stdout.write(
            f"hogs {hogs}, tags {tag_bytes} bytes an ask: RSS idle {idle:.0f} MB, peak {peak:.0f} MB, "
            f"after {after:.0f} MB; cut after {cuts}; neighbour round trip median "
            f"{statistics.median(trips) * 1000:.1f} ms, p99 {p99:.1f} ms ({len(trips)} trips)\n"
        )
    finally:
        stop.set()
        for channel, call in calls:
            call.cancel()
            await channel.close()
        for client in clients:
            await client.__aexit__(None, None, None)
        await core.stop()


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--hogs", type=int, default=1)
    parser.add_argument("--tag-bytes", type=int, default=2000)
    parser.add_argument("--seconds", type=float, default=20.0)
    args = parser.parse_args()
    asyncio.run(run(args.hogs, args.tag_bytes, args.seconds))


if __name__ == "__main__":
    main()
