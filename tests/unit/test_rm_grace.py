"""rmproxy's grace period against a registration under way: the RM coming back must win."""

from __future__ import annotations

import asyncio

import pytest

from core.rm.proxy import CoreStopping, RMProxy
from core.rm.response_stream import MAX_RESPONSE_BYTES, Backlogs, ResponseStream, StreamKind
from core.rm.si_outbound import split_response
from core.scheduler.commands import Command, RegisterRM, UnregisterRM
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
    assert (
        await stream.next() == message.SerializeToString() and stream.unread_bytes == 2 * message.ByteSize()
    )
    for _ in range(2):
        stream.send(message)  # 4 unread: one over the bound
    assert cut == [True] and stream.closed
    assert "response backlog not read: 4 messages" in stream.cut and "(max_unread_responses)" in stream.cut
    assert stream.cut_figures["unreadMessages"] == 4
    assert await stream.next() is None and stream.unread_bytes == 0  # freed: only the end is left
    stream.send(message)  # a cut stream takes nothing more
    assert stream.queue.empty()


class Clock:
    def __init__(self) -> None:
        self.now = 100.0

    def __call__(self) -> float:
        return self.now


def _node_answer(reason_bytes: int) -> si_pb2.NodeResponse:
    return si_pb2.NodeResponse(rejected=[si_pb2.RejectedNode(nodeID="n", reason="y" * reason_bytes)])


async def test_a_burst_over_the_byte_budget_whose_reader_reads_is_not_cut() -> None:
    """A reader busy elsewhere reads late, but reads: what counts is that something is taken."""
    clock = Clock()
    stream = ResponseStream(
        StreamKind.NODE, max_messages=1_000, max_bytes=500, grace_seconds=5.0, clock=clock
    )
    stream.send(_node_answer(300))
    stream.send(_node_answer(300))  # over the budget, under four times it: a burst
    clock.now += 4.0
    await stream.next()  # the reader took one within the grace period
    clock.now += 4.0
    stream.send(_node_answer(300))  # over again, 8 s after the burst began, but read 4 s ago
    assert not stream.cut


async def test_a_reader_that_takes_nothing_past_the_grace_period_is_cut_with_how_far_behind() -> None:
    clock = Clock()
    stream = ResponseStream(
        StreamKind.NODE, max_messages=1_000, max_bytes=500, grace_seconds=5.0, clock=clock
    )
    stream.send(_node_answer(600))
    clock.now += 6.0
    stream.send(_node_answer(10))  # the next answer finds nothing read for 6 s
    assert stream.cut and "over max_unread_response_bytes (500 bytes), nothing read for 6.0 s" in stream.cut
    assert stream.cut_figures == {"unreadMessages": 2, "unreadBytes": stream.cut_figures["unreadBytes"],
                                  "oldestSeconds": 6.0}  # fmt: skip
    assert stream.unread_bytes == 0


def test_four_times_the_budget_is_cut_at_once() -> None:
    stream = ResponseStream(StreamKind.NODE, max_messages=1_000, max_bytes=500)
    stream.send(_node_answer(2_100))
    assert stream.cut and "over 4 times max_unread_response_bytes" in stream.cut


def test_over_the_core_wide_bound_the_stream_furthest_behind_is_cut() -> None:
    backlogs = Backlogs(max_total_bytes=3_000)
    reading = ResponseStream(StreamKind.NODE, max_bytes=2_000, backlogs=backlogs)
    behind = ResponseStream(StreamKind.NODE, max_bytes=2_000, backlogs=backlogs)
    behind.send(_node_answer(1_900))
    reading.send(_node_answer(600))
    assert not behind.cut and not reading.cut and backlogs.total_bytes < 3_000
    reading.send(_node_answer(600))  # together over 3,000: the one furthest behind goes
    assert behind.cut and "max_unread_response_bytes_total" in behind.cut
    assert not reading.cut and backlogs.total_bytes == reading.unread_bytes
    reading.detach()
    behind.detach()
    assert backlogs.total_bytes == 0 and not backlogs.streams


async def test_a_response_over_four_mib_is_split_in_order_with_nothing_lost() -> None:
    stream = ResponseStream(StreamKind.ALLOCATION, max_messages=1_000, max_bytes=64 * 2**20)
    rejected = [si_pb2.RejectedAllocation(allocationKey=f"ask-{i}", applicationID="app", reason="r" * 60)
                for i in range(100_000)]  # fmt: skip
    released = [si_pb2.AllocationRelease(allocationKey=f"done-{i}", applicationID="app") for i in range(3)]
    message = si_pb2.AllocationResponse(rejectedAllocations=rejected, released=released)
    assert message.ByteSize() > 7 * 2**20
    stream.send(message)
    stream.end()
    parts = []
    while (part := await stream.next()) is not None:
        parts.append(si_pb2.AllocationResponse.FromString(part))
    assert len(parts) >= 2 and all(p.ByteSize() <= MAX_RESPONSE_BYTES for p in parts)
    assert [r.allocationKey for p in parts for r in p.released] == [f"done-{i}" for i in range(3)]
    assert [r.allocationKey for p in parts for r in p.rejectedAllocations] == [
        f"ask-{i}" for i in range(100_000)
    ]
    assert stream.unread_bytes == 0


def test_items_of_fields_with_two_byte_tags_are_counted_whole_so_no_part_is_over_the_limit() -> None:
    """schedulingStates is field 100: its tag takes two bytes, each of 200,000 items counted so."""
    state = si_pb2.UpdateContainerSchedulingStateRequest
    states = [state(applicationID="a", allocationKey=f"k{i:07d}", reason="r" * 20) for i in range(200_000)]
    message = si_pb2.AllocationResponse(schedulingStates=states)
    parts = split_response(message)
    assert len(parts) >= 2 and all(p.ByteSize() <= MAX_RESPONSE_BYTES for p in parts)
    assert [s.allocationKey for p in parts for s in p.schedulingStates] == [
        f"k{i:07d}" for i in range(200_000)
    ]


async def test_an_ended_stream_that_is_not_read_is_still_cut_and_not_a_stream_that_reads() -> None:
    """The RM half-closed its side and never read what was queued: its bytes count until it is cut,
    and the core-wide bound takes it rather than a stream that is being read."""
    clock = Clock()
    backlogs = Backlogs(max_total_bytes=3_000)
    ended = ResponseStream(StreamKind.NODE, max_bytes=2_000, backlogs=backlogs, clock=clock)
    reading = ResponseStream(StreamKind.NODE, max_bytes=2_000, backlogs=backlogs, clock=clock)
    ended.send(_node_answer(2_100))  # over its budget, within the grace period
    ended.end()
    reading.send(_node_answer(600))
    reading.send(_node_answer(600))  # the total over 3,000: the ended stream, furthest behind, goes
    assert ended.cut and not reading.cut
    assert backlogs.total_bytes == reading.unread_bytes
