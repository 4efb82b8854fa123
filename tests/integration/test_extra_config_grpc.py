"""An RM's extraConfig over real gRPC, on a core of its own (the settings are the whole core's): the
event system's keys change what REST and StreamEvents serve, log levels change what the core logs, and
every key the core cannot use is named in the answer to UpdateConfiguration and in the core's log."""

from __future__ import annotations

import asyncio

import aiohttp
import grpc
import pytest

from rmclient.core_process import CoreProcess
from si.v1 import si_pb2
from tests.recording_client import RecordingClient

NODE = {"memory": 10_000, "vcore": 10_000}


@pytest.fixture
async def core(own_core: CoreProcess) -> CoreProcess:
    return own_core


async def _get(session: aiohttp.ClientSession, url: str) -> tuple[int, dict[str, object]]:
    async with session.get(url) as response:
        return response.status, await response.json()


async def test_tracking_turned_off_and_on_again_by_extra_config(core: CoreProcess, rm_id: str) -> None:
    async with RecordingClient(core.address, rm_id) as client, aiohttp.ClientSession() as session:
        await client.register(extra_config={"event.trackingEnabled": "false"})
        await client.add_node("n1", NODE)
        await client.wait_nodes_answered(1)
        status, body = await _get(session, f"{core.rest_url}/ws/v1/events/batch")
        assert (status, body["message"]) == (500, "Event tracking is disabled")
        with pytest.raises(grpc.aio.AioRpcError) as refused:
            await client.stream_events()
        assert refused.value.code() == grpc.StatusCode.FAILED_PRECONDITION
        assert "event.trackingEnabled" in (refused.value.details() or "")

        response = await client.update_configuration("", extra_config={})  # left out: the default, on
        assert response.accepted and list(response.warnings) == []
        await client.add_node("n2", NODE)
        await client.wait_nodes_answered(2)
        status, body = await _get(session, f"{core.rest_url}/ws/v1/events/batch")
        assert status == 200
        records = body["EventRecords"]
        assert isinstance(records, list)
        nodes = {r["objectID"] for r in records if r["type"] == si_pb2.EventRecord.NODE}
        assert nodes == {"n2"}  # n1's were never kept (n2's: its schedulable flag, and added)


async def test_ring_and_response_size_and_stream_limits_follow_extra_config(
    core: CoreProcess, rm_id: str
) -> None:
    async with RecordingClient(core.address, rm_id) as client, aiohttp.ClientSession() as session:
        await client.register()
        extra = {
            "event.ringBufferCapacity": "4",
            "event.RESTResponseSize": "2",
            "event.maxStreams": "1",
            "event.requestCapacity": "10",
            "health.checkInterval": "1m",
            "mystery.key": "x",
            "service.placeholderImage": "pause",  # the RM's own: not a word
        }
        response = await client.update_configuration("", extra_config=extra)
        assert response.accepted
        warnings = list(response.warnings)
        assert len(warnings) == 2, warnings
        assert warnings[0].startswith("event.requestCapacity: accepted, and changes nothing")
        assert warnings[1].startswith("mystery.key: not a key the core knows")
        for i in range(6):
            await client.add_node(f"n{i}", NODE)
        await client.wait_nodes_answered(6)
        status, body = await _get(session, f"{core.rest_url}/ws/v1/events/batch?count=100")
        records = body["EventRecords"]
        assert status == 200 and isinstance(records, list) and len(records) == 2  # RESTResponseSize
        lowest, highest = body["LowestID"], body["HighestID"]
        assert isinstance(lowest, int) and isinstance(highest, int) and highest - lowest + 1 == 4  # the ring
        async with session.get(f"{core.rest_url}/ws/v1/events/stream") as first:
            assert first.status == 200
            status, body = await _get(session, f"{core.rest_url}/ws/v1/events/stream")
            assert status == 503 and "event.maxStreams" in str(body["message"])
        log = core.log_text()
        assert "mystery.key: not a key the core knows" in log and "periodic health checker restarted" in log


async def test_log_levels_from_extra_config_change_what_the_core_logs(core: CoreProcess, rm_id: str) -> None:
    async with RecordingClient(core.address, rm_id) as client:
        await client.register(extra_config={"log.level": "debug"})
        await client.add_application("app-debug", "root.default")
        await client.wait_apps_answered(1)
        await _until_logged(core, '"applicationID": "app-debug"')
        response = await client.update_configuration(
            "", extra_config={"log.level": "debug", "log.core.scheduler.level": "info"}
        )
        assert response.accepted and list(response.warnings) == []
        await client.add_application("app-quiet", "root.default")
        await client.wait_apps_answered(2)
        await client.barrier()
        assert '"applicationID": "app-quiet"' not in core.log_text()  # its debug line: below info now


async def _until_logged(core: CoreProcess, text: str) -> None:
    async with asyncio.timeout(10):
        while text not in core.log_text():  # noqa: ASYNC110 - the core's log file, written by another process
            await asyncio.sleep(0.05)


async def test_the_periodic_health_check_runs_at_the_interval_sent_and_reports_a_failed_node(
    core: CoreProcess, rm_id: str
) -> None:
    async with RecordingClient(core.address, rm_id) as client, aiohttp.ClientSession() as session:
        await client.register(extra_config={"health.checkInterval": "100ms"})
        await client.add_node("n1", NODE)
        # A partition this RM does not have: a failed node, as YuniKorn counts them.
        await client.add_node("n2", NODE, attributes={"si/node-partition": "nope"})
        await client.wait_nodes_answered(2)
        assert len(client.seen.rejected_nodes) == 1
        # The next periodic check (the interval's floor, 1 s, on) says so in the metrics, then REST.
        metrics = await _until_text(session, f"{core.rest_url}/ws/v1/metrics", "pykorn_scheduler_healthy 0")
        status, health = await _get(session, f"{core.rest_url}/ws/v1/scheduler/healthcheck")
        assert status == 200 and health["Healthy"] is False
        checks = health["HealthChecks"]
        assert isinstance(checks, list)
        [failed] = [c for c in checks if not c["Succeeded"]]
        assert failed["Name"] == "Failed nodes"
        assert failed["DiagnosisMessage"] == "There were 1 failed nodes logged in the metrics"
        assert 'pykorn_scheduler_health_check_failed{name="Failed nodes"' in metrics
        log = core.log_text()
        assert "scheduler is not healthy" in log and "is below pykorn's floor; 1s is used" in log


async def _text(session: aiohttp.ClientSession, url: str) -> str:
    async with session.get(url) as response:
        return await response.text()


async def _until_text(session: aiohttp.ClientSession, url: str, text: str) -> str:
    """The REST answer at `url` once it holds `text` (asked again every 50 ms, for 10 s at most)."""
    async with asyncio.timeout(10):
        while True:
            body = await _text(session, url)
            if text in body:
                return body
            await asyncio.sleep(0.05)
