"""An RM whose streams all close keeps its state for the grace period, then loses it; RMs that stay
connected, or come back in time, keep theirs. Runs its own core with a 1-second grace period."""

from __future__ import annotations

import asyncio
from collections.abc import AsyncIterator

import aiohttp
import pytest

from rmclient.core_process import CoreProcess
from tests.integration.rest_helpers import get_json
from tests.recording_client import RecordingClient

GRACE = 2.0  # long enough for a loaded 2-core machine to tell "in time" from "too late"


@pytest.fixture
async def core() -> AsyncIterator[CoreProcess]:
    async with CoreProcess(extra_args=["--rm-grace-period", str(GRACE)]) as process:
        yield process
    assert "Traceback" not in process.log_text()


async def _busy_rm(core: CoreProcess, rm_id: str) -> RecordingClient:
    client = RecordingClient(core.address, rm_id)
    await client.connect()
    await client.register()
    await client.add_node(f"{rm_id}-node", {"memory": 1_000})
    await client.wait_nodes_answered(1)
    await client.add_application("app", "root.default", user="u", tags={"namespace": "default"})
    await client.wait_apps_answered(1)
    await client.ask("app", "a0", {"memory": 100})
    await client.wait_allocations(1)
    return client


async def _clusters(core: CoreProcess) -> set[str]:
    async with aiohttp.ClientSession() as session:
        parts = await get_json(session, f"{core.rest_url}/ws/v1/partitions")
    return {p["clusterId"] for p in parts}


async def test_a_vanished_rm_is_removed_after_the_grace_period_and_others_stay(core: CoreProcess) -> None:
    gone = await _busy_rm(core, "rm-gone")
    stays = await _busy_rm(core, "rm-stays")
    try:
        await gone.close()  # every stream ends, as when the shim's process dies
        await asyncio.sleep(GRACE / 4)
        assert await _clusters(core) == {"rm-gone", "rm-stays"}, "removed before the grace period ran out"
        await asyncio.sleep(GRACE * 1.5)
        assert await _clusters(core) == {"rm-stays"}

        # The connected RM did not notice: it keeps its allocation and still gets new ones.
        await stays.ask("app", "a1", {"memory": 100})
        await stays.wait_allocations(2)

        # The removed RM must register again; until then its messages are refused with the reason.
        async with RecordingClient(core.address, "rm-gone") as back:
            back.open_streams()
            await back.add_node("rm-gone-node", {"memory": 1_000})
            await back.wait_nodes_answered(1)
            assert "not registered" in back.seen.rejected_nodes[0].reason
    finally:
        await stays.close()


async def test_an_rm_that_reopens_its_streams_in_time_keeps_everything(core: CoreProcess) -> None:
    client = await _busy_rm(core, "rm-blip")
    try:
        await client.reopen_streams()  # names the RM in the streams' metadata: bound at once
        await asyncio.sleep(GRACE * 1.5)  # sends nothing at all in the meantime
        assert "rm-blip" in await _clusters(core)
        async with aiohttp.ClientSession() as session:
            base = f"{core.rest_url}/ws/v1/partition/%5Brm-blip%5Ddefault"
            app = await get_json(session, f"{base}/application/app")
        assert [a["allocationKey"] for a in app["allocations"]] == ["a0"]
    finally:
        await client.close()


CAPPED = """
partitions:
  - name: default
    queues:
      - name: root
        submitacl: "*"
        queues:
          - name: default
            resources: {max: {memory: %d}}
"""


async def test_answers_made_while_no_stream_was_open_arrive_when_one_opens(core: CoreProcess) -> None:
    client = RecordingClient(core.address, "rm-away")
    await client.connect()
    try:
        await client.register(config=CAPPED % 100)
        await client.add_node("n", {"memory": 1_000})
        await client.wait_nodes_answered(1)
        await client.add_application("app", "root.default")
        await client.wait_apps_answered(1)
        await client.ask("app", "big", {"memory": 500})  # waits: over the queue's max
        await client.ask("app", "small", {"memory": 100})
        await client.wait_allocations(1)
        await client.close_streams()
        # While the RM has no stream, raising the max lets the waiting ask in; its answer is held.
        assert (await client.update_configuration(CAPPED % 1_000)).accepted
        await asyncio.sleep(0.5)
        assert [a.allocationKey for a in client.seen.new_allocations] == ["small"]
        client.open_streams()  # and nothing sent: the held answer comes anyway
        await client.wait_allocations(2)
        assert [a.allocationKey for a in client.seen.new_allocations] == ["small", "big"]
    finally:
        await client.close()
