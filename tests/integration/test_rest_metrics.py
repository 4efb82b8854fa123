"""Prometheus metrics on /ws/v1/metrics: YuniKorn's names, bounded labels, numbers that move with work."""

from __future__ import annotations

import re

import aiohttp

from si.v1 import si_pb2
from tests.integration.rest_helpers import load_cluster, resource
from tests.recording_client import RecordingClient

# Label values are quoted and may hold any character, `}` and escaped quotes included.
SAMPLE = re.compile(r'^([a-zA-Z_:][a-zA-Z0-9_:]*)(\{(?:[^"}]|"(?:[^"\\]|\\.)*")*\})? (\S+)$')


async def _scrape(rest_url: str) -> dict[str, float]:
    async with aiohttp.ClientSession() as session, session.get(f"{rest_url}/ws/v1/metrics") as response:
        assert response.status == 200
        assert response.headers["Content-Type"].startswith("text/plain; version=0.0.4")
        text = await response.text()
    samples: dict[str, float] = {}
    for line in text.splitlines():
        if line.startswith("#"):
            continue
        match = SAMPLE.match(line)
        assert match, f"not a Prometheus sample line: {line!r}"
        samples[match.group(1) + (match.group(2) or "")] = float(match.group(3))
    return samples


def _value(samples: dict[str, float], name: str, **labels: str) -> float:
    for key, value in samples.items():
        if key.split("{")[0] == name and all(f'{k}="{v}"' in key for k, v in labels.items()):
            return value
    raise AssertionError(f"no sample {name} {labels}")


async def test_metrics_move_when_work_is_scheduled(
    client: RecordingClient, rm_id: str, rest_url: str
) -> None:
    before = await _scrape(rest_url)
    allocated_before = _value(
        before, "yunikorn_scheduler_container_allocation_attempt_total", state="allocated"
    )
    cycles_before = _value(before, "yunikorn_scheduler_scheduling_latency_milliseconds_count")

    await load_cluster(client)  # two asks placed, one pending
    await client.asks(
        [
            si_pb2.Allocation(
                allocationKey="bad", applicationID="nobody", resourcePerAlloc=resource({"memory": 1})
            )
        ]
    )
    await client.wait_rejected_allocations(1)
    await client.release("app-1", "t0")
    await client.wait_allocations(3)  # t2 takes the room t0 left
    await client.wait_released(1)

    after = await _scrape(rest_url)
    attempts = "yunikorn_scheduler_container_allocation_attempt_total"
    assert _value(after, attempts, state="allocated") - allocated_before >= 3
    assert _value(after, attempts, state="rejected") >= 1
    assert _value(after, attempts, state="released") >= 1
    assert _value(after, "yunikorn_scheduler_scheduling_latency_milliseconds_count") > cycles_before
    assert _value(after, "yunikorn_scheduler_scheduling_latency_milliseconds_bucket", le="+Inf") == _value(
        after, "yunikorn_scheduler_scheduling_latency_milliseconds_count"
    )
    queue = {"cluster": rm_id, "queue": "root.tenants.a", "resource": "memory"}
    assert _value(after, "pykorn_queue_resource", state="allocated", **queue) == 6_000
    assert _value(after, "pykorn_queue_resource", state="pending", **queue) == 0
    assert _value(after, "pykorn_queue_resource", state="max", cluster=rm_id, queue="root.tenants",
                  resource="memory") == 12_000  # fmt: skip
    assert _value(after, "yunikorn_scheduler_application_total", state="running") >= 1
    assert _value(after, "yunikorn_scheduler_node", state="active") >= 2
    for kind in ("required_node", "inter_queue", "quota"):
        _value(after, "pykorn_preemption_victims_total", kind=kind)
    # Bounded labels: no series is labelled by application or node.
    assert not any("app-1" in key or "node-1" in key for key in after)
