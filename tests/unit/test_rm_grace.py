"""rmproxy's grace period against a registration under way: the RM coming back must win."""

from __future__ import annotations

import asyncio

import pytest

from core.commands import Command, RegisterRM, UnregisterRM
from core.rmproxy import CoreStopping, ResponseStream, RMProxy, StreamKind
from si.v1 import si_pb2


class SlowEngine:
    """Answers RegisterRM only after `delay`, as a busy engine would; records every command."""

    def __init__(self, delay: float) -> None:
        self.delay = delay
        self.commands: list[Command] = []

    def submit(self, command: Command) -> None:
        self.commands.append(command)
        if isinstance(command, RegisterRM) and command.reply is not None:
            asyncio.get_running_loop().call_later(self.delay, command.reply, None)


async def _registered_then_gone(proxy: RMProxy) -> None:
    await proxy.register(si_pb2.RegisterResourceManagerRequest(rmID="rm-1"))
    stream = proxy.open_stream(StreamKind.NODE)
    proxy.bind_on_open(stream, "rm-1")
    proxy.close_stream(stream)  # its only stream: the grace period starts


async def test_a_grace_period_ending_during_a_registration_does_not_remove_the_rm() -> None:
    engine = SlowEngine(delay=0.01)
    proxy = RMProxy("", engine.submit, grace_period=0.5)
    await _registered_then_gone(proxy)
    engine.delay = 0.8  # the next registration outlasts what is left of the grace period
    await asyncio.sleep(0.02)
    await proxy.register(si_pb2.RegisterResourceManagerRequest(rmID="rm-1"))
    await asyncio.sleep(0.1)
    assert proxy.is_registered("rm-1")
    assert not any(isinstance(c, UnregisterRM) for c in engine.commands)


async def test_without_a_comeback_the_rm_is_removed_once() -> None:
    engine = SlowEngine(delay=0.0)
    proxy = RMProxy("", engine.submit, grace_period=0.05)
    await _registered_then_gone(proxy)
    await asyncio.sleep(0.15)
    assert not proxy.is_registered("rm-1")
    assert [c for c in engine.commands if isinstance(c, UnregisterRM)] == [UnregisterRM("rm-1")]


async def test_while_the_core_stops_a_registration_is_refused_and_a_new_stream_ends_at_once() -> None:
    """An RM that lost its streams to the shutdown reconnects at once; it must not hold the stop open."""
    engine = SlowEngine(delay=0.0)
    proxy = RMProxy("", engine.submit, grace_period=60.0)
    await proxy.register(si_pb2.RegisterResourceManagerRequest(rmID="rm-1"))
    proxy.close_all_streams()  # the shutdown begins
    with pytest.raises(CoreStopping, match="shutting down"):
        await proxy.register(si_pb2.RegisterResourceManagerRequest(rmID="rm-1"))
    stream = proxy.open_stream(StreamKind.ALLOCATION)
    assert stream.closed and await stream.next() is None  # ended cleanly, before any message


async def test_a_stream_whose_responses_are_not_read_is_cut_at_its_bound_and_its_queue_freed() -> None:
    stream = ResponseStream(StreamKind.ALLOCATION, max_messages=3, max_bytes=10_000)
    cut: list[bool] = []
    stream.on_cut = lambda: cut.append(True)
    message = si_pb2.AllocationResponse(rejectedAllocations=[si_pb2.RejectedAllocation(reason="x" * 100)])
    for _ in range(3):
        stream.send(message)
    assert not stream.cut and stream.unread_bytes == 3 * message.ByteSize()
    assert await stream.next() is message and stream.unread_bytes == 2 * message.ByteSize()
    for _ in range(2):
        stream.send(message)  # 4 unread: one over the bound
    assert cut == [True] and stream.closed
    assert "response backlog of 4 messages" in stream.cut and "(max_unread_responses" in stream.cut
    assert await stream.next() is None and stream.unread_bytes == 0  # freed: only the end is left
    stream.send(message)  # a cut stream takes nothing more
    assert stream.queue.empty()


def test_the_bytes_bound_cuts_too() -> None:
    stream = ResponseStream(StreamKind.NODE, max_messages=1_000, max_bytes=500)
    big = si_pb2.NodeResponse(rejected=[si_pb2.RejectedNode(nodeID="n", reason="y" * 600)])
    stream.send(big)
    assert stream.cut and "bytes) not read" in stream.cut
