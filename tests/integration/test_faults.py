"""Faults with real processes on loopback: the core SIGKILLed mid-scenario, shims cut off and coming
back, a node decommissioned under running work, reloads during heavy scheduling, 20 shims at once.

After each: no node over capacity, each queue's usage equal to the sum of its allocations, no ask
allocated twice, and the core holding exactly what the shim runs (tests/integration/invariants.py).

The scenarios run on real time (speed 1), and so do their faults: when a fault strikes is part of the
scenario, set in scenario seconds (`_at_scenario_time`), and how long the core stays down is a short
stretch of real time during which the shim retries with backoff. Everything else waits for facts: the
shim's reconnect, the core's REST state matching what the shim runs.
"""

from __future__ import annotations

import asyncio
import os
from collections import defaultdict
from collections.abc import AsyncIterator
from functools import partial

import grpc
import pytest

from rmclient import messages
from rmclient.core_process import CoreProcess
from shim_fake.scenario.runner import Runner
from tests.fake_scenarios import parse_scenario
from tests.integration import invariants
from tests.integration.core_helpers import free_port
from tests.recording_client import RecordingClient, recorded

SCENARIO = """
name: faults
speed: 1
end: %(end)ss
queues: |
  partitions:
    - name: default
      queues:
        - name: root
          submitacl: "*"
          queues:
            - name: services
              resources: {max: {memory: 12Gi}}
            - name: batch
nodes:
  - count: 4
    prefix: node
    resources: {memory: 8Gi, vcore: 8}
applications:
  - id: web
    queue: root.services
    restart: true
    tasks:
      - {name: svc, count: 10, resources: {memory: 1Gi, vcore: 1}, duration: until stopped}
  - id: etl
    queue: root.batch
    restart: true
    tasks:
      - {name: step, count: 60, resources: {memory: 512Mi, vcore: 1}, duration: 1s}
  - id: late
    queue: root.batch
    arrival: 2s
    restart: true
    tasks:
      - {name: job, count: 6, resources: {memory: 1Gi, vcore: 1}, duration: until stopped}
%(events)s
"""


@pytest.fixture
async def fixed_core() -> AsyncIterator[CoreProcess]:
    """A core on a fixed port, so a restarted one is where its shims expect it."""
    core = CoreProcess(listen=f"127.0.0.1:{free_port()}")
    await core.start()
    try:
        yield core
    finally:
        await core.stop()
        assert "Traceback" not in core.log_text()


async def _at_scenario_time(runner: Runner, at: float) -> None:
    """Until the scenario's own clock reads `at` seconds (at once if it is past): the schedule of a
    fault, as a scenario's events are scheduled, not a wait for anything to have happened."""
    await asyncio.sleep(max(0.0, at - runner.clock.now()))


def _running(runner: Runner) -> dict[tuple[str, str], str]:
    return {(t.app.app_id, t.key): t.node_id for t in runner.tasks.values() if t.state == "running"}


async def _converged(runner: Runner, core: CoreProcess, rm_id: str, timeout: float = 20) -> None:
    """Until the core holds exactly what the runner runs; every snapshot must keep the invariants.
    Polls the core's REST state (a few reads per look) every 0.2 s, as the shim's tasks move on."""
    loop = asyncio.get_running_loop()
    deadline = loop.time() + timeout
    while True:
        placed = await invariants.check(core.rest_url, rm_id)
        if placed == _running(runner):
            return
        if loop.time() > deadline:
            raise AssertionError(f"core {sorted(placed.items())} != shim {sorted(_running(runner).items())}")
        await asyncio.sleep(0.2)


def _one_node_per_key(client: RecordingClient) -> None:
    """A key may be confirmed again after a reconnect, but never placed on a second node."""
    nodes: dict[tuple[str, str], set[str]] = defaultdict(set)
    for alloc in client.seen.new_allocations:
        nodes[(alloc.applicationID, alloc.allocationKey)].add(alloc.nodeID)
    twice = {key: found for key, found in nodes.items() if len(found) > 1}
    assert not twice, f"allocated on two nodes: {twice}"


async def _start_runner(
    address: str, rm_id: str, end: float, events: str = ""
) -> tuple[Runner, asyncio.Task]:
    client = RecordingClient(address, rm_id)
    await client.connect()
    runner = Runner(parse_scenario(SCENARIO % {"end": end, "events": events}), client, 1.0, None)
    return runner, asyncio.create_task(runner.run())


async def _finish(runner: Runner, task: asyncio.Task) -> None:
    try:
        recording = await asyncio.wait_for(task, 60)
    finally:
        await runner.client.close()
    summary = recording.task_summary()
    etl = [t for t in runner.all_tasks if t.app.app_id == "etl"]
    assert all(t.state == "done" for t in etl), summary  # every short task ran to its end
    assert all(t.ran for t in runner.all_tasks), "a task never ran"


# More for a longer soak: PYKORN_FAULT_KILLS=10 PYKORN_FAULT_DROPS=10 make test (docs/reliability.md).
KILLS = int(os.environ.get("PYKORN_FAULT_KILLS", "3"))
DROPS = int(os.environ.get("PYKORN_FAULT_DROPS", "2"))


def _reconnected_more(runner: Runner, than: int) -> bool:
    return runner.reconnects > than


async def test_the_core_killed_several_times_during_a_scenario(fixed_core: CoreProcess) -> None:
    rm_id = "rm-sigkill"
    runner, task = await _start_runner(fixed_core.address, rm_id, end=6 + 2.7 * KILLS)
    for kill in range(KILLS):
        await _at_scenario_time(runner, 1.2 + 2.7 * kill)  # each kill in its own stretch of the scenario
        assert fixed_core.kill() == -9
        # Down for a while (scenario, not synchronisation): 0.15 to 0.45 s, plus the restart's own
        # ~0.7 s before the port opens; the shim keeps retrying with backoff meanwhile.
        await asyncio.sleep(0.15 * (kill % 3 + 1))
        await fixed_core.start()
        await runner.client.wait_for(partial(_reconnected_more, runner, kill), timeout=20, what="a reconnect")
        await _converged(runner, fixed_core, rm_id)
    _one_node_per_key(recorded(runner.client))
    await _finish(runner, task)
    assert runner.reconnects == KILLS
    assert [e["kind"] for e in runner.record.events].count("core reconnect") == KILLS


async def test_a_shim_cut_off_repeatedly_reconnects_and_the_core_matches_it(fixed_core: CoreProcess) -> None:
    from tests.integration.tcp_proxy import TcpProxy

    proxy = TcpProxy(fixed_core.port)
    await proxy.start()
    rm_id = "rm-dropped"
    runner, task = await _start_runner(proxy.address, rm_id, end=6 + 2 * DROPS)
    try:
        for drop in range(DROPS):
            await _at_scenario_time(runner, 1.5 + 2 * drop)  # each cut in its own stretch of the scenario
            assert proxy.drop() > 0
            await runner.client.wait_for(
                partial(_reconnected_more, runner, drop), timeout=20, what="a reconnect"
            )
            await _converged(runner, fixed_core, rm_id)
        _one_node_per_key(recorded(runner.client))
        await _finish(runner, task)
    finally:
        await proxy.close()


DECOMMISSION = """events:
  - at: 2s
    node: {action: decommission, id: node-1}
"""


async def test_a_node_decommissioned_under_running_work(fixed_core: CoreProcess) -> None:
    rm_id = "rm-decommission"
    runner, task = await _start_runner(fixed_core.address, rm_id, end=8, events=DECOMMISSION)
    await runner.client.wait_for(lambda: bool(runner.record.events), timeout=20, what="the decommission")
    await runner.client.wait_for(
        lambda: any(t.lost for t in runner.all_tasks), timeout=10, what="tasks lost with the node"
    )
    await _converged(runner, fixed_core, rm_id)
    assert "node-1" not in set(_running(runner).values())
    await _finish(runner, task)
    assert all(t.state != "pending" for t in runner.all_tasks)


RELOAD_CONFIG = """
partitions:
  - name: default
    queues:
      - name: root
        submitacl: "*"
        queues:
          - name: work
            resources: {max: {memory: %d}}
          - name: other%d
"""


async def test_config_reloads_during_heavy_scheduling(client: RecordingClient, rest_url: str) -> None:
    asks_total, size = 10_000, 20
    await client.register(config=RELOAD_CONFIG % (400_000, 0))
    await client.add_nodes(*(messages.node(f"n{i}", {"memory": 20_000}) for i in range(20)))
    await client.wait_nodes_answered(20)
    await client.add_application("bulk", "root.work")
    await client.wait_apps_answered(1)
    await client.asks(messages.ask("bulk", f"k{i}", {"memory": size}) for i in range(asks_total))
    mid_scheduling = 0
    for round_ in range(12):  # the max moves down and up and queues come and go while asks are placed
        placed_before = len(client.seen.new_allocations)
        response = await client.update_configuration(
            RELOAD_CONFIG % (100_000 + 25_000 * (round_ % 4), round_)
        )
        assert response.accepted, response.errors
        mid_scheduling += placed_before < asks_total
    assert mid_scheduling, "every reload came after the scheduling was over"
    await client.update_configuration(RELOAD_CONFIG % (400_000, 99))
    await client.wait_allocations(asks_total, timeout=60)
    placed = await invariants.check(rest_url, client.rm_id)
    assert len(placed) == asks_total
    per_node: dict[str, int] = defaultdict(int)
    for node in placed.values():
        per_node[node] += size
    assert max(per_node.values()) <= 20_000


async def test_twenty_shims_at_once(core_address: str, rest_url: str) -> None:
    async def one_shim(n: int) -> tuple[str, dict[tuple[str, str], str], RecordingClient]:
        client = RecordingClient(core_address, f"rm-many-{n:02d}")
        await client.connect()
        await client.register()
        await client.add_nodes(
            *(messages.node(f"node-{i}", {"memory": 4_000, "vcore": 4_000}) for i in range(2))
        )
        await client.wait_nodes_answered(2)
        await client.add_application("app", "root.default", tags={"namespace": "default"})
        await client.wait_apps_answered(1)
        # 10 fit (8,000 of memory); 2 more than fit stay pending.
        await client.asks(messages.ask("app", f"t{i}", {"memory": 800, "vcore": 100}) for i in range(12))
        await client.wait_allocations(10, timeout=30)
        return (
            client.rm_id,
            {(a.applicationID, a.allocationKey): a.nodeID for a in client.seen.new_allocations},
            client,
        )

    results = await asyncio.gather(*(one_shim(n) for n in range(20)))
    try:
        for rm_id, seen, client in results:
            placed = await invariants.check(rest_url, rm_id)
            assert placed == seen and len(placed) == 10, rm_id
            assert set(placed.values()) <= {"node-0", "node-1"}
            assert not client.seen.rejected_allocations and not client.seen.stream_errors
    finally:
        await asyncio.gather(*(client.close() for _, _, client in results))


async def test_a_refused_registration_is_not_retried(core_address: str) -> None:
    """Reconnecting cannot fix a config the core rejects: the runner gives up with the core's reason."""
    scenario = parse_scenario(SCENARIO % {"end": 2, "events": ""})
    async with RecordingClient(core_address, "rm-refused") as client:
        runner = Runner(scenario, client, 1.0, None)
        runner.config = "partitions: 7"  # as if the queues changed to something the core rejects
        with pytest.raises(grpc.aio.AioRpcError) as refused:
            await asyncio.wait_for(runner.run(), 10)
    assert refused.value.code() == grpc.StatusCode.INVALID_ARGUMENT
    assert runner.reconnects == 0
