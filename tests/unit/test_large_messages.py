"""Memory given back after large requests and dropped state: asked for by the request's size, and run
once for any number of asks, never more often than MIN_INTERVAL."""

from __future__ import annotations

import asyncio

import pytest

from core.server import grpc_handlers, memory
from core.server.grpc_handlers import LargeMessages
from core.server.memory import MemoryReleaser
from si.v1 import si_pb2


async def test_a_large_request_asks_for_a_release_and_a_small_one_does_not() -> None:
    asked: list[str] = []
    loop = asyncio.get_running_loop()
    parse = LargeMessages(loop, asked.append, threshold=1_000).watch(si_pb2.AllocationRequest.FromString)
    large = si_pb2.AllocationRequest(rmID="r" * 2_000).SerializeToString()
    assert parse(large).rmID == "r" * 2_000  # decoded as ever
    await asyncio.sleep(0)  # the ask is made on the loop's thread
    assert asked == ["a large message handled"]
    assert parse(si_pb2.AllocationRequest(rmID="rm").SerializeToString()).rmID == "rm"
    await asyncio.sleep(0)
    assert asked == ["a large message handled"]
    assert set(grpc_handlers.SERVICE_METHODS) == {
        m.name for m in si_pb2.DESCRIPTOR.services_by_name["Scheduler"].methods
    }  # every method of the service is served, none left to the generated code


async def test_asks_are_coalesced_into_one_release_and_the_next_waits_the_interval(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    runs: list[tuple[float, str]] = []
    ran = asyncio.Event()
    loop = asyncio.get_running_loop()

    def release(reason: str) -> None:
        runs.append((loop.time(), reason))
        ran.set()

    monkeypatch.setattr(memory, "release_memory", release)
    monkeypatch.setattr(memory, "RELEASE_DELAY", 0.01)
    monkeypatch.setattr(memory, "MIN_INTERVAL", 0.3)
    releaser = MemoryReleaser(loop)
    for reason in ("resource manager removed", "a large message handled", "resource manager removed"):
        releaser.request(reason)
    await asyncio.wait_for(ran.wait(), 5)
    assert [r for _, r in runs] == ["resource manager removed; a large message handled"]
    ran.clear()
    releaser.request("resource manager registered again")
    await asyncio.wait_for(ran.wait(), 5)
    assert runs[1][1] == "resource manager registered again"
    assert runs[1][0] - runs[0][0] >= 0.3 - 0.01  # not before the interval
