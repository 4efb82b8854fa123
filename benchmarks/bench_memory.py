"""Whether the core gives memory back when load leaves it (docs/reliability.md, "Memory after RMs leave").

A `pykorn core` process (RM grace period 0.2 s), its resident size (VmRSS) read from /proc:
- **stay**: an RM with one allocation stays; another registers, places `--allocations` asks on 100
  nodes, and leaves (closes its streams; its state goes after the grace period); `--rounds` times;
- **again**: one RM registers, places `--allocations` asks, and registers again (as every reconnect
  does), `--rounds` times;
- **refused**: an RM sends `--rounds` configurations of `--queues` queues that the core refuses (the
  last queue is invalid), back to back: its size after each answer, then once the core has given the
  memory of the last one back (the last figure).

    python -m benchmarks.bench_memory --allocations 100000 --rounds 5 --queues 50000
"""

from __future__ import annotations

import argparse
import asyncio
import json
import sys
import urllib.request
from collections.abc import Awaitable, Callable

import grpc

from rmclient.core_process import CoreProcess
from si.v1 import si_pb2, si_pb2_grpc
from tests.integration.core_helpers import WORK_CONFIG, loaded_rm
from tests.recording_client import RecordingClient

ASK = {"memory": 1, "vcore": 1}


def partitions(core: CoreProcess) -> list[str]:
    with urllib.request.urlopen(f"{core.rest_url}/ws/v1/partitions", timeout=30) as answer:
        return [str(p.get("name")) for p in json.load(answer)]


async def loaded(core: CoreProcess, rm_id: str, allocations: int) -> RecordingClient:
    return await loaded_rm(core, rm_id, allocations, nodes=100, timeout=300)


async def until_gone(core: CoreProcess, rm_id: str, expected: int) -> None:
    """Until the core shows `expected` partitions (the RM's state removed after its grace period)."""
    for _ in range(600):
        if len(partitions(core)) <= expected:
            return
        await asyncio.sleep(0.1)
    raise TimeoutError(f"{rm_id}'s state was not removed")


async def stay(core: CoreProcess, allocations: int, rounds: int) -> list[float]:
    small = await loaded(core, "small", 1)
    figures = [core.resident_mb()]
    for n in range(rounds):
        big = await loaded(core, f"big-{n}", allocations)
        await big.close()
        await until_gone(core, f"big-{n}", 1)
        figures.append(core.resident_mb())
    await small.close()
    return figures


async def again(core: CoreProcess, allocations: int, rounds: int) -> list[float]:
    figures = []
    client = await loaded(core, "again", allocations)
    figures.append(core.resident_mb())
    for _ in range(rounds):
        await client.close()
        client = await loaded(core, "again", allocations)
        figures.append(core.resident_mb())
    await client.close()
    return figures


async def refused(core: CoreProcess, queues: int, rounds: int) -> list[float]:
    client = await loaded(core, "configs", 1)
    lines = [f"          - name: q{i}" for i in range(queues)] + ["          - name: bad queue name!"]
    text = WORK_CONFIG + "\n".join(lines) + "\n"
    figures = [core.resident_mb()]
    async with grpc.aio.insecure_channel(core.address, options=[("grpc.max_send_message_length", -1)]) as ch:
        stub = si_pb2_grpc.SchedulerStub(ch)
        for _ in range(rounds):
            answer = await stub.UpdateConfiguration(
                si_pb2.UpdateConfigurationRequest(rmID="configs", config=text, policyGroup="queues")
            )
            assert not answer.accepted, "the configuration was taken"
            figures.append(core.resident_mb())
        # What stays: once the core has given back the memory of the last one (a moment after it).
        await released_after(core, "a large configuration refused")
        figures.append(core.resident_mb())
    await client.close()
    return figures


async def released_after(core: CoreProcess, reason: str) -> None:
    """Until the core logs one more `memory released` for `reason` than it had logged when called."""

    def count() -> int:
        return sum(1 for li in core.log_text().splitlines() if "memory released" in li and reason in li)

    before = count()
    for _ in range(600):
        if count() > before:
            return
        await asyncio.sleep(0.05)
    raise TimeoutError(f"no memory released for {reason!r}")


async def run(allocations: int, rounds: int, queues: int, event_log_size: int, only: str) -> None:
    scenarios: tuple[tuple[str, Callable[[CoreProcess], Awaitable[list[float]]]], ...] = (
        ("stay", lambda core: stay(core, allocations, rounds)),
        ("again", lambda core: again(core, allocations, rounds)),
        ("refused", lambda core: refused(core, queues, rounds)),
    )
    for name, scenario in scenarios:
        if only and name != only:
            continue
        flags = ["--rm-grace-period", "0.2", "--limit", "max_config_bytes=16000000"]
        core = CoreProcess(extra_args=[*flags, "--event-log-size", str(event_log_size)])
        await core.start()
        try:
            fresh = core.resident_mb()
            figures = await scenario(core)
            sys.stdout.write(
                f"{name}: fresh {fresh:.0f} MB; " + " -> ".join(f"{f:.0f}" for f in figures) + " MB\n"
            )
        finally:
            await core.stop()


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--allocations", type=int, default=100_000)
    parser.add_argument("--rounds", type=int, default=5)
    parser.add_argument("--queues", type=int, default=50_000)
    parser.add_argument("--event-log-size", type=int, default=10_000, help="the core's (its default)")
    parser.add_argument("--only", default="", choices=["", "stay", "again", "refused"])
    args = parser.parse_args()
    asyncio.run(run(args.allocations, args.rounds, args.queues, args.event_log_size, args.only))


if __name__ == "__main__":
    main()
