"""An RM whose streams all close keeps its state for the grace period, then loses it; RMs that stay
connected, or come back in time, keep theirs. Runs its own core with a 1-second grace period.

The grace period is the daemon's real time, so the tests that are about it wait it out once; they wait
for the fact (REST no longer shows the RM's partition), and tell "not yet" from "gone" by facts too:
the time the removal took against the grace period, and an RM that closed its streams later and is
removed first."""

from __future__ import annotations

import asyncio
from collections.abc import AsyncIterator, Callable

import aiohttp
import pytest

from rmclient.core_process import CoreProcess
from tests.integration.rest_helpers import get_json, partition_url, rest_until
from tests.recording_client import RecordingClient

GRACE = 1.0  # short: the tests about it wait it out; each wait is for a fact, not a fixed time


async def _running_core(grace: float) -> AsyncIterator[CoreProcess]:
    async with CoreProcess(extra_args=["--rm-grace-period", str(grace)]) as process:
        yield process
    assert "Traceback" not in process.log_text()


@pytest.fixture
async def core() -> AsyncIterator[CoreProcess]:
    async for process in _running_core(GRACE):
        yield process


@pytest.fixture
async def patient_core() -> AsyncIterator[CoreProcess]:
    """A grace period no step of a test comes near, for tests that are not about it."""
    async for process in _running_core(60.0):
        yield process


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


async def _clusters_once(core: CoreProcess, holds: Callable[[set[str]], bool], what: str) -> set[str]:
    """The RMs with partitions, once `holds` of them (the grace timer fires on the core's own time)."""
    async with aiohttp.ClientSession() as session:
        parts = await rest_until(
            session,
            f"{core.rest_url}/ws/v1/partitions",
            lambda body: holds({p["clusterId"] for p in body}),
            what,
            timeout=GRACE + 20,
        )
    return {p["clusterId"] for p in parts}


async def test_a_vanished_rm_is_removed_after_the_grace_period_and_others_stay(core: CoreProcess) -> None:
    gone = await _busy_rm(core, "rm-gone")
    stays = await _busy_rm(core, "rm-stays")
    try:
        loop = asyncio.get_running_loop()
        closing = loop.time()  # the core starts the grace timer once it sees the streams closed, later
        await gone.close()  # every stream ends, as when the shim's process dies
        left = await _clusters_once(core, lambda rms: "rm-gone" not in rms, "rm-gone to be removed")
        # Not a moment before its grace period ran out (so still there at any earlier look).
        took = loop.time() - closing
        assert took >= GRACE, f"removed {took:.3f}s after its streams closed: before the grace period ran out"
        assert left == {"rm-stays"}

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
    control = await _busy_rm(core, "rm-control")
    try:
        # Closing waits until the core has ended each stream, so its grace timer for rm-blip is running
        # when the streams open again (named in their metadata: bound at once, which stops the timer).
        await client.reopen_streams()
        # rm-control goes away for good after that: its grace timer starts later and fires later than
        # rm-blip's would have. Once it is removed, rm-blip's time is up too; rm-blip sends nothing at
        # all in the meantime.
        await control.close()
        rms = await _clusters_once(core, lambda rms: "rm-control" not in rms, "rm-control to be removed")
        assert "rm-blip" in rms
        async with aiohttp.ClientSession() as session:
            base = f"{core.rest_url}/ws/v1/partition/%5Brm-blip%5Ddefault"
            app = await get_json(session, f"{base}/application/app")
        assert [a["allocationKey"] for a in app.get("allocations", [])] == ["a0"]
    finally:
        await client.close()
        await control.close()


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


async def test_answers_made_while_no_stream_was_open_arrive_when_one_opens(patient_core: CoreProcess) -> None:
    core = patient_core
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
        async with aiohttp.ClientSession() as session:
            await rest_until(
                session,
                f"{partition_url(core.rest_url, 'rm-away')}/application/app",
                lambda app: "big" in {a["allocationKey"] for a in app.get("allocations", [])},
                "big to be allocated in the core",
            )
        assert [a.allocationKey for a in client.seen.new_allocations] == ["small"]
        client.open_streams()  # and nothing sent: the held answer comes anyway
        await client.wait_allocations(2)
        assert [a.allocationKey for a in client.seen.new_allocations] == ["small", "big"]
    finally:
        await client.close()
