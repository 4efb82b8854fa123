"""An RM that stops reading its responses: the core cuts that stream at its bound, its memory stays
bounded, and another RM's allocations keep flowing."""

from __future__ import annotations

import asyncio
from collections.abc import AsyncIterator, Iterator
from typing import Any

import aiohttp
import grpc
import pytest

from rmclient import messages
from rmclient.core_process import CoreProcess
from si.v1 import metadata, si_pb2, si_pb2_grpc
from tests.integration.core_helpers import WORK_CONFIG, running
from tests.recording_client import RecordingClient

UNREAD_BOUND = 200
RSS_CEILING_MB = 400  # what the core may grow to meanwhile; unbounded it grew by about 12 MB a second
ASK = {"memory": 1, "vcore": 1}


@pytest.fixture(scope="module")
def bounded_core() -> Iterator[CoreProcess]:
    yield from running(CoreProcess(extra_args=["--limit", f"max_unread_responses={UNREAD_BOUND}"]))


async def _cut_count(session: aiohttp.ClientSession, core: CoreProcess) -> int:
    async with session.get(f"{core.rest_url}/ws/v1/metrics") as response:
        text = await response.text()
    line = next(li for li in text.splitlines() if li.startswith("pykorn_response_streams_cut_total"))
    return int(float(line.split()[-1]))


async def _until_cut(session: aiohttp.ClientSession, core: CoreProcess, before: int) -> None:
    """Until the core's metrics count one more cut stream (read every 50 ms, up to a minute)."""
    loop = asyncio.get_running_loop()
    deadline = loop.time() + 60
    while await _cut_count(session, core) <= before:
        assert loop.time() < deadline, "the stream that is not read was never cut"
        await asyncio.sleep(0.05)


async def _requests(
    rm_id: str, stop: asyncio.Event, tag_bytes: int = 0
) -> AsyncIterator[si_pb2.AllocationRequest]:
    """Asks and releases, one of each a message, until told to stop; never a look at the answers.
    `tag_bytes`: a tag that size on each ask, which its allocation carries back (answers grow faster)."""
    tags = {"pad": "x" * tag_bytes} if tag_bytes else None
    i = 0
    while not stop.is_set():
        releases = [messages.release("hog-app", f"k{i - 1}")] if i else []
        yield si_pb2.AllocationRequest(
            rmID=rm_id,
            allocations=[messages.ask("hog-app", f"k{i}", ASK, tags=tags)],
            releases=si_pb2.AllocationReleasesRequest(allocationsToRelease=releases),
        )
        i += 1
        if i % 100 == 0:
            await asyncio.sleep(0)  # let the channel send


def _unread_stream(core: CoreProcess, tag_bytes: int = 0) -> tuple[grpc.aio.Channel, asyncio.Event, Any]:
    """The hog's second allocation stream, bound to it by name on a channel with small HTTP/2 windows,
    sending asks and releases until `stop` is set and never reading an answer."""
    channel = grpc.aio.insecure_channel(core.address, options=[("grpc.http2.bdp_probe", 0)])
    stop = asyncio.Event()
    call = si_pb2_grpc.SchedulerStub(channel).UpdateAllocation(
        _requests("hog", stop, tag_bytes), metadata=((metadata.RM_ID, "hog"),)
    )
    return channel, stop, call


async def _cut_status(call: Any) -> grpc.aio.AioRpcError:
    """What the hog learns once it reads: what was written before the cut, then RESOURCE_EXHAUSTED."""
    with pytest.raises(grpc.aio.AioRpcError) as cut:
        async for _ in call:
            pass
    assert cut.value.code() == grpc.StatusCode.RESOURCE_EXHAUSTED
    return cut.value


async def test_a_stream_not_read_is_cut_at_its_bound_and_others_keep_being_served(
    bounded_core: CoreProcess,
) -> None:
    core = bounded_core
    async with (
        RecordingClient(core.address, "hog") as hog,
        RecordingClient(core.address, "neighbour") as other,
    ):
        for client, app in ((hog, "hog-app"), (other, "other-app")):
            await client.register(config=WORK_CONFIG)
            await client.add_node("node-1", {"memory": 10**9, "vcore": 10**9})
            await client.wait_nodes_answered(1)
            await client.add_application(app, "root.work")
            await client.wait_apps_answered(1)
        # The hog opens another allocation stream on a channel with small HTTP/2 windows, binds it by
        # name (it now receives the hog's allocation answers) and never reads it.
        channel, stop, call = _unread_stream(core)
        async with aiohttp.ClientSession() as session:
            before = await _cut_count(session, core)
            await _until_cut(session, core, before)
            assert core.resident_mb() < RSS_CEILING_MB
            # The neighbour is served all along, and after the cut.
            await other.asks(messages.ask("other-app", f"o{i}", ASK) for i in range(50))
            await other.wait_allocations(50)
        stop.set()
        # The hog is told why, once it reads: what was written before the cut, then the status.
        cut = await _cut_status(call)
        details = cut.details() or ""
        assert "response backlog not read:" in details and "(max_unread_responses)" in details
        assert "stream cut: responses not read" in core.log_text() and "unreadMessages" in core.log_text()
        await channel.close()
        # The hog's resync brings it back, as after any dropped stream: it registers again, re-sends
        # its state and is served.
        await hog.close()
        async with RecordingClient(core.address, "hog") as back:
            await back.register(config=WORK_CONFIG)
            await back.add_node("node-1", {"memory": 10**9, "vcore": 10**9})
            await back.wait_nodes_answered(1)
            await back.add_application("hog-app", "root.work")
            await back.wait_apps_answered(1)
            await back.asks(messages.ask("hog-app", f"again-{i}", ASK) for i in range(10))
            allocated = await back.wait_allocations(10)
            assert {a.allocationKey for a in allocated} == {f"again-{i}" for i in range(10)}


@pytest.fixture(scope="module")
def byte_bounded_core() -> Iterator[CoreProcess]:
    """The default byte budgets, no message bound, a short grace: the bytes alone decide."""
    limits = ["max_unread_responses=0", "unread_grace_seconds=1"]
    yield from running(CoreProcess(extra_args=[a for limit in limits for a in ("--limit", limit)]))


async def test_a_stream_not_read_is_cut_by_its_byte_budget_and_the_log_says_how_far_behind(
    byte_bounded_core: CoreProcess,
) -> None:
    core = byte_bounded_core
    async with RecordingClient(core.address, "hog") as hog:
        await hog.register(config=WORK_CONFIG)
        await hog.add_node("node-1", {"memory": 10**9, "vcore": 10**9})
        await hog.wait_nodes_answered(1)
        await hog.add_application("hog-app", "root.work")
        await hog.wait_apps_answered(1)
        channel, stop, call = _unread_stream(core, tag_bytes=4_000)  # the budget reached in seconds
        async with aiohttp.ClientSession() as session:
            await _until_cut(session, core, await _cut_count(session, core))
            assert core.resident_mb() < RSS_CEILING_MB
        stop.set()
        cut = await _cut_status(call)
        assert "max_unread_response_bytes" in (cut.details() or "")
        line = next(li for li in core.log_text().splitlines() if "stream cut: responses not read" in li)
        assert '"unreadBytes"' in line and '"oldestSeconds"' in line
        await channel.close()


async def test_a_standard_client_reads_an_answer_larger_than_its_four_mib_receive_limit(
    core_address: str, rm_id: str
) -> None:
    """100,000 refused asks make an answer of about 8 MiB: it comes in parts a stock gRPC client (4 MiB
    receive limit) reads, in order, every rejection with its reason."""
    async with grpc.aio.insecure_channel(core_address) as channel:  # gRPC's defaults
        stub = si_pb2_grpc.SchedulerStub(channel)
        await stub.RegisterResourceManager(
            si_pb2.RegisterResourceManagerRequest(rmID=rm_id, config=WORK_CONFIG, policyGroup="queues")
        )
        # Refused at once, in order: a partition the RM does not have (an unknown application's asks
        # would be held for it a while first, core.scheduler.early_asks).
        nowhere = "nobody-knows-this-partition"
        asks = [messages.ask("app", f"ask-{i:06d}", ASK, partition=nowhere) for i in range(100_000)]

        answered = asyncio.Event()

        async def one_message() -> AsyncIterator[si_pb2.AllocationRequest]:
            yield si_pb2.AllocationRequest(rmID=rm_id, allocations=asks)
            # Open until answered, as an RM's stream is: the core ends a stream its RM half-closed
            # after what is queued then, and the engine may not have refused every ask by then.
            await answered.wait()

        keys: list[str] = []
        parts = 0
        call = stub.UpdateAllocation(one_message(), metadata=((metadata.RM_ID, rm_id),))
        async with asyncio.timeout(60):  # a missing answer fails here rather than hanging the suite
            async for response in call:
                parts += 1
                keys.extend(r.allocationKey for r in response.rejectedAllocations)
                assert all(nowhere in r.reason for r in response.rejectedAllocations)
                if len(keys) >= len(asks):
                    answered.set()
        assert keys == [f"ask-{i:06d}" for i in range(100_000)] and parts >= 2
