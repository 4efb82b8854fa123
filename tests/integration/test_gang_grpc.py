"""Gang scheduling over gRPC against a real core: placeholders placed, real tasks in their place in two
steps, Soft and Hard timeouts, a gang held under its queue's max, and recovery after a restart."""

from __future__ import annotations

from collections.abc import Iterator
from typing import Any
from urllib.parse import quote

import aiohttp
import pytest

from rmclient import messages
from rmclient.core_process import CoreProcess
from si.v1 import si_pb2
from tests.integration.core_helpers import running
from tests.recording_client import RecordingClient

CONFIG = """
partitions:
  - name: default
    queues:
      - name: root
        submitacl: "*"
        queues:
          - name: jobs
          - name: small
            resources:
              max: {memory: 5}
"""
PH = {"memory": 2}
REAL = {"memory": 1}
FAST_TIMEOUT_MS = 1_500  # the placeholder timeout of the timeout tests: the engine checks it twice a second


@pytest.fixture(scope="module")
def core() -> Iterator[CoreProcess]:
    yield from running(CoreProcess())


async def _rm(client: RecordingClient, nodes: int = 2) -> None:
    await client.register(config=CONFIG)
    for n in range(nodes):
        await client.add_node(f"node-{n}", {"memory": 4})
    await client.wait_nodes_answered(nodes)


async def _gang(
    client: RecordingClient, members: int, queue: str = "root.jobs", style: str = "", timeout_ms: int = 0
) -> None:
    size = {"memory": PH["memory"] * members}
    await client.add_applications(
        messages.application(
            "job", queue, placeholder_ask=size, gang_style=style, placeholder_timeout_ms=timeout_ms
        )
    )
    await client.wait_apps_answered(1)
    await client.asks(
        messages.ask("job", f"ph-{i}", PH, task_group="workers", placeholder=True) for i in range(members)
    )


async def _real(client: RecordingClient, count: int) -> None:
    await client.asks(messages.ask("job", f"real-{i}", REAL, task_group="workers") for i in range(count))


def _released(client: RecordingClient, termination: int) -> list[si_pb2.AllocationRelease]:
    return [r for r in client.seen.released if r.terminationType == termination]


async def _wait_released(
    client: RecordingClient, termination: int, count: int, timeout: float = 15.0
) -> list[si_pb2.AllocationRelease]:
    """Until `count` releases of this type arrived (the allocation stream: not ordered with the
    application stream's state changes)."""
    await client.wait_for(lambda: len(_released(client, termination)) >= count, timeout, f"{count} releases")
    return _released(client, termination)


async def _confirm(client: RecordingClient, releases: list[si_pb2.AllocationRelease]) -> None:
    """The RM's side of a release the core asked for: the pod is gone, say so with the same type."""
    for release in releases:
        await client.release_many([("job", release.allocationKey)], termination=release.terminationType)


async def _wait_state(client: RecordingClient, state: str, timeout: float = 15.0) -> None:
    await client.wait_for(lambda: state in client.seen.app_states.get("job", []), timeout, f"job {state}")


async def _rest(core: CoreProcess, rm_id: str, path: str) -> Any:
    """GET a REST view of the RM's default partition (named `[rmID]default` there)."""
    url = f"{core.rest_url}/ws/v1/partition/{quote(f'[{rm_id}]default', safe='')}/{path}"
    async with aiohttp.ClientSession() as session, session.get(url) as response:
        assert response.status == 200, await response.text()
        return await response.json()


async def test_each_real_task_takes_a_placeholders_place_on_its_node_in_two_steps(core: CoreProcess) -> None:
    async with RecordingClient(core.address, "gang-replace") as client:
        await _rm(client)
        await _gang(client, members=4)
        placeholders = await client.wait_allocations(4)
        node_of = {a.allocationKey: a.nodeID for a in placeholders}
        await _wait_state(client, "Running")
        await _real(client, 4)
        swaps = await _wait_released(client, si_pb2.PLACEHOLDER_REPLACED, 4)
        await client.barrier()
        assert len(client.seen.new_allocations) == 4  # no real allocation before the RM confirms
        await _confirm(client, swaps)
        allocated = await client.wait_allocations(8)
        real = {a.allocationKey: a for a in allocated[4:]}
        assert sorted(real) == [f"real-{i}" for i in range(4)]
        # Each real task is on the node of the placeholder it replaced, and the RM heard of no other release.
        assert sorted(real[key].nodeID for key in real) == sorted(node_of[s.allocationKey] for s in swaps)
        await client.barrier()
        assert len(client.seen.released) == 4
        app = await _rest(core, "gang-replace", "application/job")
        assert app.get("placeholderData", []) == [
            {"taskGroupName": "workers", "count": 4, "minResource": PH, "replaced": 4, "timedout": 0}
        ]
        assert all(a["placeholderUsed"] for a in app.get("allocations", []))
        assert app.get("usedResource", {}) == {"memory": 4}  # the real tasks' size, not the placeholders'


async def test_soft_timeout_releases_placeholders_resumes_and_runs_the_real_tasks(core: CoreProcess) -> None:
    async with RecordingClient(core.address, "gang-soft") as client:
        await _rm(client, nodes=1)
        await _gang(client, members=3, style="Soft", timeout_ms=FAST_TIMEOUT_MS)  # room for two
        await _real(client, 2)
        await client.wait_allocations(2)
        await _wait_state(client, "Resuming")
        timed_out = await _wait_released(client, si_pb2.TIMEOUT, 3)
        assert sorted(r.allocationKey for r in timed_out) == ["ph-0", "ph-1", "ph-2"]
        placed = {a.allocationKey for a in client.seen.new_allocations}
        await _confirm(client, [r for r in timed_out if r.allocationKey in placed])  # ph-2 never ran
        allocated = await client.wait_allocations(4)
        assert sorted(a.allocationKey for a in allocated[2:]) == ["real-0", "real-1"]
        await _wait_state(client, "Running")
        assert client.seen.app_states["job"][-3:] == ["Resuming", "Accepted", "Running"]


async def test_hard_timeout_fails_the_application(core: CoreProcess) -> None:
    async with RecordingClient(core.address, "gang-hard") as client:
        await _rm(client, nodes=1)
        await _gang(client, members=3, style="Hard", timeout_ms=FAST_TIMEOUT_MS)
        await _real(client, 1)
        await client.wait_allocations(2)
        await _wait_state(client, "Failing")
        timed_out = await _wait_released(client, si_pb2.TIMEOUT, 4)
        assert sorted(r.allocationKey for r in timed_out) == ["ph-0", "ph-1", "ph-2", "real-0"]
        await _confirm(client, [r for r in timed_out if r.allocationKey in ("ph-0", "ph-1")])
        await _wait_state(client, "Failed")
        await client.barrier()
        assert len(client.seen.new_allocations) == 2  # the real task never ran


async def test_a_gang_that_does_not_fit_under_its_queue_max_holds_its_real_tasks_until_the_timeout(
    core: CoreProcess,
) -> None:
    async with RecordingClient(core.address, "gang-held") as client:
        await _rm(client)
        # Three placeholders of 2 under a max of 5: two fit, the third never does.
        await _gang(client, members=3, queue="root.small", timeout_ms=2 * FAST_TIMEOUT_MS)
        await _real(client, 3)
        await client.wait_allocations(2)
        await client.barrier()
        assert [a.allocationKey for a in client.seen.new_allocations] == ["ph-0", "ph-1"]
        assert _released(client, si_pb2.PLACEHOLDER_REPLACED) == []  # the incomplete gang is not started
        app = await _rest(core, "gang-held", "application/job")
        held = {
            r["allocationKey"]: r.get("allocationLog", [])[0]["message"]
            for r in app.get("requests", [])
            if r["taskGroupName"]
        }
        del held["ph-2"]
        assert all("gang is not complete" in why for why in held.values()), held
        assert app["applicationState"] == "Accepted"
        # The timeout (Soft) gives the placeholders up; the real tasks then run as ordinary tasks.
        await _wait_state(client, "Resuming")
        timed_out = await _wait_released(client, si_pb2.TIMEOUT, 3)
        await _confirm(client, [r for r in timed_out if r.allocationKey != "ph-2"])
        allocated = await client.wait_allocations(5)
        assert sorted(a.allocationKey for a in allocated[2:]) == ["real-0", "real-1", "real-2"]


async def test_recovery_after_a_restart_counts_placeholders_and_real_tasks_once() -> None:
    first = CoreProcess()
    await first.start()
    second = CoreProcess(listen=first.address)
    try:
        async with RecordingClient(first.address, "gang-restart") as client:
            await _rm(client)
            await _gang(client, members=2)
            await client.wait_allocations(2)
            await _real(client, 1)
            await _confirm(client, await _wait_released(client, si_pb2.PLACEHOLDER_REPLACED, 1))
            await client.wait_allocations(3)
            running_now = dict(client.seen.allocations)
        assert len(running_now) == 2 and "real-0" in running_now  # one placeholder, one real task
        await first.stop()
        await second.start()
        async with RecordingClient(second.address, "gang-restart") as client:
            await _rm(client)
            await client.add_applications(
                messages.application("job", "root.jobs", placeholder_ask={"memory": 4})
            )
            await client.wait_apps_answered(1)
            await client.asks(
                messages.ask(
                    "job", a.allocationKey, messages.resource_dict(a.resourcePerAlloc), node_id=a.nodeID,
                    task_group="workers", placeholder=a.placeholder,
                )
                for a in running_now.values()
            )  # fmt: skip
            await client.wait_allocations(len(running_now))
            queue = await _rest(second, "gang-restart", "queue/root.jobs")
            assert queue.get("allocatedResource", {}) == {"memory": PH["memory"] + REAL["memory"]}
            await _wait_state(client, "Running")
    finally:
        await second.stop()
        await first.stop()
