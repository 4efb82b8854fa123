"""What must hold in a core after any fault, read from its REST API in one go per endpoint:

- no node holds more than its capacity, and a node's allocated figure is the sum of its allocations;
- every queue's usage is the sum of its applications' allocations (leaves) or of its children's;
- no allocation key appears twice.

`check` returns every allocation as (application, key) -> node, for comparing with what the RM runs.
"""

from __future__ import annotations

import asyncio
from collections import Counter
from typing import Any
from urllib.parse import quote

import aiohttp

from tests.integration.rest_helpers import get_json

Json = dict[str, Any]


def _add(total: dict[str, int], amounts: dict[str, int]) -> None:
    for name, value in amounts.items():
        total[name] = total.get(name, 0) + value


def _nonzero(amounts: dict[str, int]) -> dict[str, int]:
    return {k: v for k, v in amounts.items() if v}


def _check_nodes(nodes: list[Json]) -> dict[tuple[str, str], str]:
    placed: dict[tuple[str, str], str] = {}
    keys: Counter[tuple[str, str]] = Counter()
    for node in nodes:
        summed: dict[str, int] = {}
        for alloc in node.get("allocations", []):
            _add(summed, alloc.get("resource", {}))
            keys[(alloc["applicationId"], alloc["allocationKey"])] += 1
            placed[(alloc["applicationId"], alloc["allocationKey"])] = node["nodeID"]
        assert _nonzero(summed) == _nonzero(node.get("allocated", {})), (
            f"node {node['nodeID']}: books do not add up"
        )
        over = {k: v for k, v in node.get("allocated", {}).items() if v > node.get("capacity", {}).get(k, 0)}
        assert not over, f"node {node['nodeID']} over capacity: {over} > {node['capacity']}"
    twice = [key for key, count in keys.items() if count > 1]
    assert not twice, f"allocated more than once: {twice}"
    return placed


def _check_queue(queue: Json, used_by_queue: dict[str, dict[str, int]]) -> dict[str, int]:
    """The queue's usage as its parts add up, after checking it against what the queue reports."""
    if queue["isLeaf"]:
        expected = used_by_queue.get(queue["queuename"], {})
    else:
        expected = {}
        for child in queue.get("children", []):
            _add(expected, _check_queue(child, used_by_queue))
    assert _nonzero(queue.get("allocatedResource", {})) == _nonzero(expected), (
        f"queue {queue['queuename']} reports {queue['allocatedResource']}, its parts add up to {expected}"
    )
    return expected


async def _snapshot(session: aiohttp.ClientSession, base: str) -> tuple[list[Json], list[Json], Json] | None:
    """Nodes, applications and queues as of one moment: each endpoint is its own snapshot, so the
    nodes are read before and after the others, and the read is retried while scheduling moves (a
    short pause between tries: the wait is for the fact of two equal reads, not for a time)."""
    for _ in range(50):
        nodes = await get_json(session, f"{base}/nodes")
        apps = await get_json(session, f"{base}/applications/active")
        root = await get_json(session, f"{base}/queues")
        if await get_json(session, f"{base}/nodes") == nodes:
            return nodes, apps, root
        await asyncio.sleep(0.1)
    return None


async def check(rest_url: str, rm_id: str, partition: str = "default") -> dict[tuple[str, str], str]:
    base = f"{rest_url}/ws/v1/partition/{quote(f'[{rm_id}]{partition}', safe='')}"
    async with aiohttp.ClientSession() as session:
        snapshot = await _snapshot(session, base)
    assert snapshot is not None, "the cluster never held still for one consistent read (50 tries)"
    nodes, apps, root = snapshot
    placed = _check_nodes(nodes)
    used_by_queue: dict[str, dict[str, int]] = {}
    app_keys = set()
    for app in apps:
        _add(used_by_queue.setdefault(app["queueName"], {}), app.get("usedResource", {}))
        app_keys |= {(app["applicationID"], a["allocationKey"]) for a in app.get("allocations", [])}
    _check_queue(root, used_by_queue)
    assert app_keys == set(placed), (
        f"applications and nodes disagree: only in applications {sorted(app_keys - set(placed))}, "
        f"only on nodes {sorted(set(placed) - app_keys)}"
    )
    return placed
