"""Prometheus metrics on /ws/v1/metrics: YuniKorn's names, bounded labels, numbers that move with work."""

from __future__ import annotations

import asyncio
import re
from collections.abc import Callable

import aiohttp

from rmclient.core_process import CoreProcess
from si.v1 import si_pb2
from tests.integration.rest_helpers import CONFIG, load_cluster, resource
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
    waiting = await _scrape(rest_url)  # t2: no node has room for it
    assert _value(waiting, "pykorn_pending_asks", cluster=rm_id, partition="default", waiting="no_node") == 1
    assert _value(waiting, "pykorn_pending_asks", cluster=rm_id, partition="default", waiting="held") == 0
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
    # The asks' node walks (placed or not) and the tries that placed one, apart; the leaf's applications
    # put in order for the cycles that had them.
    evaluated = _value(after, "yunikorn_scheduler_trynode_evaluation_milliseconds_count")
    placed = _value(after, "yunikorn_scheduler_trynode_latency_milliseconds_count")
    assert placed >= 3 and evaluated >= placed
    assert _value(after, "yunikorn_scheduler_node_sorting_latency_milliseconds_count", level="app") >= 1
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


async def _scrape_until(rest_url: str, done: Callable[[dict[str, float]], bool]) -> dict[str, float]:
    """Scrapes until `done` holds for one (the core's periodic work shows on its own clock)."""
    async with asyncio.timeout(10):
        while not done(samples := await _scrape(rest_url)):  # noqa: ASYNC110 - another process's state
            await asyncio.sleep(0.1)
    return samples


async def test_nodes_are_counted_by_state_as_yunikorn_counts_them(
    client: RecordingClient, rest_url: str
) -> None:
    """yunikorn-core pkg/metrics (be3bb487): every registered node is active, a draining one counted in
    draining too; failed counts nodes refused for a partition that is not there. (The core serves
    other tests' RMs too: what this RM adds is read as a change.)"""
    before = await _scrape(rest_url)
    await client.register(config=CONFIG)
    await client.add_node("node-1", {"memory": 4_000})
    await client.add_node("node-2", {"memory": 4_000})
    await client.add_node("node-3", {"memory": 4_000}, attributes={"si/node-partition": "nope"})
    await client.wait_nodes_answered(3)
    await client.node_action("node-2", si_pb2.NodeInfo.DRAIN_NODE)

    def added(samples: dict[str, float], state: str) -> float:
        return _value(samples, "yunikorn_scheduler_node", state=state) - _value(
            before, "yunikorn_scheduler_node", state=state
        )

    samples = await _scrape_until(rest_url, lambda s: added(s, "draining") == 1)
    assert added(samples, "active") == 2
    assert added(samples, "failed") == 1


async def test_every_configured_queue_has_its_max_running_apps(
    client: RecordingClient, rest_url: str
) -> None:
    """As YuniKorn's: resource "apps", 0 (unlimited) where maxapplications is not set."""
    limited = "          - name: default\n            maxapplications: 3\n"
    await client.register(config=CONFIG.replace("          - name: default\n", limited))
    samples = await _scrape(rest_url)
    running_apps = "pykorn_queue_resource"
    mine = {"cluster": client.rm_id, "state": "maxRunningApps", "resource": "apps"}
    assert _value(samples, running_apps, queue="root.default", **mine) == 3
    assert _value(samples, running_apps, queue="root.tenants.a", **mine) == 0
    assert _value(samples, "yunikorn_queue_resource", queue="root.default", state="maxRunningApps") >= 3
    assert not any('state="maxRunningApps",resource=""' in key for key in samples)


async def test_an_idle_scheduler_still_times_its_cycles() -> None:
    """YuniKorn's loop times its cycles with nothing to do: the dashboard's P95 latency panels have
    values at idle (before, the counts stood still without work). A core of its own: the shared one
    may hold other tests' pending asks, and would not be idle."""
    core = CoreProcess()
    await core.start()
    try:
        async with RecordingClient(core.address, "idle") as client:
            await client.register(config=CONFIG)
            await client.add_node("node-1", {"memory": 4_000})
            await client.wait_nodes_answered(1)
            kinds = ("latency", "cycle")
            latency, cycle = (f"yunikorn_scheduler_scheduling_{kind}_milliseconds_count" for kind in kinds)
            first = await _scrape(core.rest_url)

            def timed_twice(samples: dict[str, float]) -> bool:
                return (
                    _value(samples, latency) >= _value(first, latency) + 2
                    and _value(samples, cycle) >= _value(first, cycle) + 2
                )

            idle = await _scrape_until(core.rest_url, timed_twice)
            assert (
                _value(idle, "pykorn_pending_asks", cluster="idle", partition="default", waiting="untried")
                == 0
            )
    finally:
        await core.stop()


async def test_the_core_exports_its_process_metrics(client: RecordingClient, rest_url: str) -> None:
    await client.register(config=CONFIG)
    samples = await _scrape(rest_url)
    assert _value(samples, "process_resident_memory_bytes") > 10 * 1024 * 1024
    assert _value(samples, "process_start_time_seconds") > 1.7e9
    assert _value(samples, "process_open_fds") > 0
    assert _value(samples, "python_info", major="3") == 1
    assert _value(samples, "python_gc_collections_total", generation="0") >= 0
