"""REST: the event log (batch and stream), the configuration in force, and config validation."""

from __future__ import annotations

import asyncio
import json
from typing import Any

import aiohttp
import pytest

from rmclient.core_process import CoreProcess
from si.v1 import si_pb2
from tests.integration.rest_helpers import CONFIG, get_json, load_cluster, named_event, resource
from tests.recording_client import RecordingClient


def _mine(records: list[dict[str, Any]], rm_id: str) -> list[dict[str, Any]]:
    return [r for r in map(named_event, records) if r["rmID"] == rm_id]


async def test_event_batch_records_nodes_allocations_and_application_states(
    client: RecordingClient, rm_id: str, rest_url: str
) -> None:
    await load_cluster(client)
    async with aiohttp.ClientSession() as session:
        batch = await get_json(session, f"{rest_url}/ws/v1/events/batch")
        assert set(batch) == {"InstanceUUID", "LowestID", "HighestID", "EventRecords"}
        records = _mine(batch["EventRecords"], rm_id)
        added = [r for r in records if (r["type"], r["eventChangeType"]) == ("NODE", "ADD")]
        nodes = [(r["objectID"], r["message"]) for r in added if r["eventChangeDetail"] == "DETAILS_NONE"]
        assert nodes == [("node-1", "Node added to the scheduler"), ("node-2", "Node added to the scheduler")]
        # As YuniKorn: an allocation is recorded on its application (APP_ALLOC, the allocation key as
        # the reference) and on its node (NODE_ALLOC).
        allocated = [r for r in records if r["eventChangeDetail"] == "APP_ALLOC"]
        assert sorted(r["referenceID"] for r in allocated) == ["t0", "t1"]
        assert all(r["objectID"] == "app-1" and r.get("resource", {}) == {"memory": 3_000} for r in allocated)
        on_nodes = [r for r in records if r["eventChangeDetail"] == "NODE_ALLOC"]
        assert sorted(r["referenceID"] for r in on_nodes) == ["t0", "t1"]
        states = [
            r["eventChangeDetail"] for r in records
            if r["type"] == "APP" and r["objectID"] == "app-1" and r["eventChangeType"] == "SET"
        ]  # fmt: skip
        assert states[-1] == "APP_RUNNING" and "APP_ACCEPTED" in states

        # Paging by number: start after the newest gives nothing; a window gives exactly that window.
        high = batch["HighestID"]
        after = await get_json(session, f"{rest_url}/ws/v1/events/batch?start={high + 1}")
        assert after["EventRecords"] == []
        window = await get_json(session, f"{rest_url}/ws/v1/events/batch?start={high - 1}&count=2")
        assert [r["pykorn"]["id"] for r in window["EventRecords"]] == [high - 1, high]
        bad = await get_json(session, f"{rest_url}/ws/v1/events/batch?count=lots", status=400)
        assert "count must be a whole number" in bad["message"]


async def test_event_stream_delivers_changes_as_they_happen(
    client: RecordingClient, rm_id: str, rest_url: str
) -> None:
    await load_cluster(client)
    timeout = aiohttp.ClientTimeout(total=30)
    async with (
        aiohttp.ClientSession(timeout=timeout) as session,
        session.get(f"{rest_url}/ws/v1/events/stream") as stream,
    ):
        assert stream.status == 200
        await client.node_action("node-2", si_pb2.NodeInfo.DECOMISSION)
        seen: list[dict[str, Any]] = []
        while not any(r["eventChangeDetail"] == "NODE_DECOMISSION" for r in seen):
            line = await asyncio.wait_for(stream.content.readline(), 20)
            assert line, "the stream ended early"
            record = named_event(json.loads(line))
            if record["rmID"] == rm_id:
                seen.append(record)
    removed = next(r for r in seen if r["eventChangeDetail"] == "NODE_DECOMISSION")
    assert removed["objectID"] == "node-2" and removed["eventChangeType"] == "REMOVE"


async def test_config_shows_the_yaml_in_force_and_validate_conf_explains_refusals(
    client: RecordingClient, rm_id: str, rest_url: str
) -> None:
    await load_cluster(client)
    async with aiohttp.ClientSession() as session:
        async with session.get(f"{rest_url}/ws/v1/config?rmID={rm_id}") as response:
            assert response.status == 200 and response.content_type == "application/x-yaml"
            assert await response.text() == CONFIG
        missing = await get_json(session, f"{rest_url}/ws/v1/config?rmID=nobody", status=404)
        assert "nobody" in missing["message"]

        async with session.post(f"{rest_url}/ws/v1/validate-conf", data=CONFIG) as response:
            assert await response.json() == {"allowed": True, "reason": "", "warnings": []}
        broken = CONFIG.replace("max: {memory: 12000}", "max: {memory: -5}")
        async with session.post(f"{rest_url}/ws/v1/validate-conf", data=broken) as response:
            verdict = await response.json()
        assert verdict["allowed"] is False and "memory" in verdict["reason"]
        async with session.post(f"{rest_url}/ws/v1/validate-conf", data="") as response:
            assert (await response.json())["allowed"] is True  # as YuniKorn: "" means the default
    # Validation checks only: the core still runs the configuration it had.
    await client.asks(
        [
            si_pb2.Allocation(
                allocationKey="more", applicationID="app-1", resourcePerAlloc=resource({"memory": 1})
            )
        ]
    )
    await client.wait_allocations(3)


@pytest.mark.parametrize("reader", ["gone", "still reading"])
async def test_sigterm_stops_the_core_promptly_with_event_stream_readers_gone_or_present(reader: str) -> None:
    """A reader of /ws/v1/events/stream, whether it left or still reads, does not hold up a shutdown:
    the core exits 0 well within the stop's bound (it would otherwise wait out aiohttp's 60 s)."""
    core = CoreProcess()
    await core.start()
    try:
        session = aiohttp.ClientSession()
        stream = await session.get(f"{core.rest_url}/ws/v1/events/stream")
        assert stream.status == 200  # subscribed: the handler waits for the next event
        if reader == "gone":
            stream.close()
            await session.close()
        code = await core.stop(timeout=10)  # SIGTERM; SIGKILL (and a code of -9) after 10 s
        assert code == 0, core.log_text()[-2000:]
        if reader == "still reading":
            assert await asyncio.wait_for(stream.content.read(), 10) == b""  # ended cleanly
            stream.close()
            await session.close()
    finally:
        await core.stop()
