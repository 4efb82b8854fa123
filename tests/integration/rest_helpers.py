"""Shared by the REST tests: a small loaded cluster, a JSON GET that checks the status, and reads of
the core's state that tests wait on instead of sleeping."""

from __future__ import annotations

import asyncio
from collections.abc import Callable
from typing import Any
from urllib.parse import quote

import aiohttp

from si.v1 import si_pb2
from tests.recording_client import RecordingClient

CONFIG = """
partitions:
  - name: default
    queues:
      - name: root
        submitacl: "*"
        queues:
          - name: tenants
            properties: {priority.policy: fence, priority.offset: "5"}
            resources: {guaranteed: {memory: 4000}, max: {memory: 12000}}
            queues:
              - name: a
          - name: default
"""


async def get_json(session: aiohttp.ClientSession, url: str, status: int = 200) -> Any:
    async with session.get(url) as response:
        body = await response.json()
        assert response.status == status, body
        return body


def partition_url(rest_url: str, rm_id: str, partition: str = "default") -> str:
    """The REST base of one RM's partition, by its internal name `[rmID]partition`."""
    return f"{rest_url}/ws/v1/partition/{quote(f'[{rm_id}]{partition}', safe='')}"


async def rest_until(
    session: aiohttp.ClientSession,
    url: str,
    holds: Callable[[Any], object],
    what: str,
    timeout: float = 15.0,
) -> Any:
    """GET `url` until `holds(body)` is true; returns that body. For state the core reaches on its own
    time (a timer firing, a tick's scheduling) or another client brings about: each read is one
    consistent look at the core's state, and the short pause between reads only spaces them out; the
    wait ends as soon as the state shows. A 404 (the partition or application is not there yet) is
    a state that does not hold; any other status but 200 fails."""
    loop = asyncio.get_running_loop()
    deadline = loop.time() + timeout
    while True:
        async with session.get(url) as response:
            body = await response.json()
            assert response.status in (200, 404), body
        if response.status == 200 and holds(body):
            return body
        if loop.time() > deadline:
            raise TimeoutError(f"timed out after {timeout}s waiting for {what}; last read: {body}")
        await asyncio.sleep(0.05)


def pending_request(app: dict[str, Any], key: str) -> dict[str, Any] | None:
    """The pending request `key` in an /application/{id} answer, or None when it is not pending."""
    return next((r for r in app.get("requests", []) if r["allocationKey"] == key), None)  # omitted when none


def resource(values: dict[str, int]) -> si_pb2.Resource:
    return si_pb2.Resource(resources={k: si_pb2.Quantity(value=v) for k, v in values.items()})


async def load_cluster(client: RecordingClient) -> None:
    """Two 4000-memory nodes, app-1 in root.tenants.a with two of three 3000-memory asks placed."""
    await client.register(config=CONFIG)
    for node in ("node-1", "node-2"):
        await client.add_node(node, {"memory": 4_000, "vcore": 4_000})
    await client.wait_nodes_answered(2)
    await client.add_application("app-1", "root.tenants.a")
    await client.wait_apps_answered(1)
    await client.asks(
        [
            si_pb2.Allocation(
                allocationKey=f"t{i}", applicationID="app-1", resourcePerAlloc=resource({"memory": 3_000})
            )
            for i in range(3)
        ]
    )
    await client.wait_allocations(2)


def named_event(record: dict[str, Any]) -> dict[str, Any]:
    """A REST event record (si EventRecord as upstream's JSON: enums as numbers, the resource as
    si.Resource) read back with names, a flat resource, and pykorn's id and rmID beside them."""
    named = {
        "type": si_pb2.EventRecord.Type.Name(record.get("type", 0)),
        "objectID": record.get("objectID", ""),
        "referenceID": record.get("referenceID", ""),
        "message": record.get("message", ""),
        "timestampNano": record.get("timestampNano", 0),
        "eventChangeType": si_pb2.EventRecord.ChangeType.Name(record.get("eventChangeType", 0)),
        "eventChangeDetail": si_pb2.EventRecord.ChangeDetail.Name(record.get("eventChangeDetail", 0)),
        "resource": {
            k: v.get("value", 0) for k, v in (record.get("resource") or {}).get("resources", {}).items()
        },
    }
    return {**named, **record["pykorn"]}
