"""A large request makes the core give memory back once, shortly after; small ones cost nothing."""

from __future__ import annotations

import asyncio

import pytest

from core.server import grpc_handlers
from core.server.grpc_handlers import LargeMessages
from si.v1 import si_pb2


async def test_one_release_after_large_messages_however_many_and_none_for_small(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    released: list[str] = []
    done = asyncio.Event()

    def release(reason: str) -> None:
        released.append(reason)
        done.set()

    monkeypatch.setattr(grpc_handlers, "release_memory", release)
    monkeypatch.setattr(grpc_handlers, "RELEASE_DELAY", 0.0)
    parse = LargeMessages(asyncio.get_running_loop(), threshold=1_000).watch(
        si_pb2.AllocationRequest.FromString
    )
    small = si_pb2.AllocationRequest(rmID="rm").SerializeToString()
    large = si_pb2.AllocationRequest(rmID="r" * 2_000).SerializeToString()
    assert parse(small).rmID == "rm"
    for _ in range(3):
        assert parse(large).rmID == "r" * 2_000  # decoded as ever
    await asyncio.wait_for(done.wait(), 5)
    assert released == ["a large message handled"]
