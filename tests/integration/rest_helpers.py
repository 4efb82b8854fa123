"""Shared by the REST tests: a small loaded cluster and a JSON GET that checks the status."""

from __future__ import annotations

from typing import Any

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
