"""The whole Kubernetes shim (`shim_k8s.main.run_shim`: the official client, informers, the shim) against
an HTTP emulation of the API server and a real core over gRPC."""

from __future__ import annotations

import asyncio
from collections.abc import AsyncIterator

import pytest

from shim_k8s.main import run_shim
from tests.integration.kube_api import FakeKubeAPI
from tests.integration.test_k8s_shim import daemonset_pod, node, pod


@pytest.fixture
async def api() -> AsyncIterator[FakeKubeAPI]:
    fake = FakeKubeAPI()
    await fake.start()
    yield fake
    await fake.stop()


async def _until(condition, what: str, timeout: float = 15.0) -> None:  # type: ignore[no-untyped-def]
    loop = asyncio.get_running_loop()
    deadline = loop.time() + timeout
    while not condition():
        if loop.time() > deadline:
            raise TimeoutError(f"timed out waiting for {what}")
        await asyncio.sleep(0.05)


async def test_pods_in_the_api_are_bound_where_the_core_says_even_after_a_410(
    api: FakeKubeAPI, core_address: str, rm_id: str
) -> None:
    await api.put("nodes", node("n1", memory="4Gi"))
    await api.put("pods", pod("early"))  # exists before the shim starts: found by the initial list
    stop = asyncio.Event()
    shim = asyncio.create_task(
        run_shim(core_address, host=f"http://127.0.0.1:{api.port}", rm_id=rm_id, stop=stop)
    )
    try:
        await _until(lambda: ("early", "n1") in api.bindings, "the listed pod to be bound")
        await api.put("pods", pod("late"))  # arrives through the watch
        await _until(lambda: ("late", "n1") in api.bindings, "the watched pod to be bound")
        api.expire_watches()  # the API server forgets old versions: watches answer 410 Gone
        await api.put("pods", pod("after-410"))
        await _until(lambda: ("after-410", "n1") in api.bindings, "a pod seen after re-listing")
        assert len(api.bindings) == len({p for p, _ in api.bindings})  # nobody bound twice
        assert any(e["reason"] == "Scheduled" for e in api.events)
    finally:
        stop.set()
        await asyncio.wait_for(shim, 10)


async def test_a_preemption_becomes_an_eviction_through_the_api(
    api: FakeKubeAPI, core_address: str, rm_id: str
) -> None:
    await api.put("nodes", node("n1", memory="2Gi"))
    await api.put("pods", pod("batch-1"))
    await api.put("pods", pod("batch-2", created="2026-11-22T10:05:00Z"))
    stop = asyncio.Event()
    shim = asyncio.create_task(
        run_shim(core_address, host=f"http://127.0.0.1:{api.port}", rm_id=rm_id, stop=stop)
    )
    try:
        await _until(lambda: len(api.bindings) == 2, "the node to fill")
        daemon = daemonset_pod("agent-n1", "n1")
        await api.put("pods", daemon)
        await _until(lambda: ("agent-n1", "n1") in api.bindings, "the DaemonSet pod to be bound")
        assert api.evictions == ["batch-2"]
        assert any(
            e["reason"] == "Preempted" and e["involvedObject"]["name"] == "batch-2" for e in api.events
        )
    finally:
        stop.set()
        await asyncio.wait_for(shim, 10)
