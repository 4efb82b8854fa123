"""The REST state API (ws/v1) on a running core: YuniKorn's paths and JSON field names, real HTTP."""

from __future__ import annotations

from urllib.parse import quote

import aiohttp
import pytest

from tests.integration.rest_helpers import get_json, load_cluster
from tests.recording_client import RecordingClient

# What these states show (upstream leaves out empty values; tests/integration/test_rest_dao_facts.py
# compares every key and type with YuniKorn's dao json tags).
QUEUE_FIELDS = {
    "queuename", "status", "partition", "pendingResource", "maxResource", "allocatedResource", "headroom",
    "isLeaf", "isManaged", "childNames", "absUsedCapacity", "runningApps", "currentPriority",
    "sortingPolicy", "prioritySorting", "preemptionEnabled", "isPreemptionFence", "preemptionDelay",
    "quotaPreemptionDelay", "isPriorityFence", "pykorn",
}  # fmt: skip
NODE_FIELDS = {
    "nodeID", "capacity", "allocated", "available", "utilized", "allocations", "schedulable", "isReserved",
}  # fmt: skip
APP_FIELDS = {
    "applicationID", "usedResource", "maxUsedResource", "pendingResource", "partition", "queueName",
    "submissionTime", "allocations", "requests", "applicationState", "user", "stateLog",
    "startTime", "resourceHistory", "pykorn",
}  # fmt: skip
ALLOC_FIELDS = {
    "allocationKey", "resource", "priority", "nodeId", "applicationId", "requestTime", "allocationTime",
    "allocationDelay",
}  # fmt: skip


@pytest.fixture
async def loaded(client: RecordingClient) -> RecordingClient:
    await load_cluster(client)
    return client


async def test_queue_tree_shows_usage_limits_and_priority_settings(
    loaded: RecordingClient, rm_id: str, rest_url: str
) -> None:
    part = quote(f"[{rm_id}]default", safe="")
    async with aiohttp.ClientSession() as session:
        partitions = await get_json(session, f"{rest_url}/ws/v1/partitions")
        mine = [p for p in partitions if p["clusterId"] == rm_id]
        assert len(mine) == 1 and mine[0]["name"] == "default"
        assert mine[0]["totalNodes"] == 2
        assert mine[0].get("capacity", {}).get("capacity", {})["memory"] == 8_000
        assert mine[0].get("capacity", {})["usedCapacity"]["memory"] == 6_000
        assert mine[0]["applications"]["total"] == 1

        root = await get_json(session, f"{rest_url}/ws/v1/partition/{part}/queues")
        assert QUEUE_FIELDS | {"children"} <= set(root), set(root)
        assert root["queuename"] == "root" and root.get("maxResource", {})["memory"] == 8_000
        tenants = next(c for c in root.get("children", []) if c["queuename"] == "root.tenants")
        assert tenants["isPriorityFence"] is True and tenants["priorityOffset"] == 5
        assert tenants.get("guaranteedResource", {}) == {"memory": 4_000}
        assert tenants.get("allocatedResource", {})["memory"] == 6_000
        assert tenants.get("pendingResource", {})["memory"] == 3_000
        assert tenants.get("headroom", {})["memory"] == 2_000  # root: 8000 - 6000
        assert tenants["pykorn"]["quotaPreemption"]["pendingSince"] is None
        assert tenants.get("childNames", []) == ["root.tenants.a"]  # full paths, as upstream

        leaf = await get_json(session, f"{rest_url}/ws/v1/partition/{part}/queue/root.tenants.a")
        assert leaf["isLeaf"] is True and leaf["parent"] == "root.tenants" and leaf["runningApps"] == 1
        apps = await get_json(session, f"{rest_url}/ws/v1/partition/{part}/queue/root.tenants.a/applications")
        assert [a["applicationID"] for a in apps] == ["app-1"]


async def test_nodes_and_applications_show_what_is_placed_and_what_waits(
    loaded: RecordingClient, rm_id: str, rest_url: str
) -> None:
    part = quote(f"[{rm_id}]default", safe="")
    async with aiohttp.ClientSession() as session:
        nodes = await get_json(session, f"{rest_url}/ws/v1/partition/{part}/nodes")
        assert [n["nodeID"] for n in nodes] == ["node-1", "node-2"]
        for node in nodes:
            assert set(node) >= NODE_FIELDS, set(node)
            assert (
                node.get("allocated", {})["memory"] == 3_000 and node.get("available", {})["memory"] == 1_000
            )
            assert (
                len(node.get("allocations", [])) == 1 and set(node.get("allocations", [])[0]) >= ALLOC_FIELDS
            )
        one = await get_json(session, f"{rest_url}/ws/v1/partition/{part}/node/node-1")
        assert one["nodeID"] == "node-1" and one.get("utilized", {})["memory"] == 75

        app = await get_json(session, f"{rest_url}/ws/v1/partition/{part}/application/app-1")
        assert set(app) >= APP_FIELDS, set(app)
        assert [entry["applicationState"] for entry in app["stateLog"]] == ["New", "Accepted", "Running"]
        assert app["queueName"] == "root.tenants.a" and app["applicationState"] == "Running"
        assert sorted(a["nodeId"] for a in app.get("allocations", [])) == ["node-1", "node-2"]
        assert [r["allocationKey"] for r in app.get("requests", [])] == ["t2"]
        assert (
            app.get("usedResource", {})["memory"] == 6_000
            and app.get("pendingResource", {})["memory"] == 3_000
        )

        running = await get_json(
            session, f"{rest_url}/ws/v1/partition/{part}/applications/active?status=running"
        )
        assert [a["applicationID"] for a in running] == ["app-1"]
        wrong = await get_json(session, f"{rest_url}/ws/v1/partition/{part}/applications/running", status=400)
        assert (
            wrong["message"] == "Only following application states are allowed: active, rejected, completed"
        )
        active = await get_json(session, f"{rest_url}/ws/v1/partition/{part}/applications/active")
        assert [a["applicationID"] for a in active] == ["app-1"]
        assert await get_json(session, f"{rest_url}/ws/v1/partition/{part}/applications/completed") == []

        health = await get_json(session, f"{rest_url}/ws/v1/scheduler/healthcheck")
        # The books balance. (The metrics' checks count for the whole core since it started: the
        # session's core has been sent bad nodes by other tests by now.)
        books = [c for c in health["HealthChecks"] if c["Name"] not in ("Scheduling errors", "Failed nodes")]
        assert books and all(c["Succeeded"] for c in books), books


@pytest.mark.parametrize(
    "path, names",
    [
        ("/ws/v1/partition/nope/queues", "partition 'nope'"),
        ("/ws/v1/partition/{part}/queue/root.nope", "queue 'root.nope'"),
        ("/ws/v1/partition/{part}/node/node-9", "node 'node-9'"),
        ("/ws/v1/partition/{part}/application/app-9", "application 'app-9'"),
        ("/ws/v1/nothing-here", "no such endpoint"),
    ],
)
async def test_unknown_objects_answer_404_with_a_reason(
    loaded: RecordingClient, rm_id: str, rest_url: str, path: str, names: str
) -> None:
    url = rest_url + path.format(part=quote(f"[{rm_id}]default", safe=""))
    async with aiohttp.ClientSession() as session:
        body = await get_json(session, url, status=404)
    assert body["status_code"] == 404 and names in body["message"]
