"""No object can stop the Kubernetes shim: Hypothesis mixes objects of every watched kind, malformed in
every way (tests/integration/hostile_objects.py), with well-formed pods, some there before the shim
starts and the rest arriving while it runs. The whole shim (`run_shim`) against the API emulation and a
real core: it stays up, binds every well-formed pod exactly once, and can name the field at fault in
every object it refuses (none refused for a reason it cannot say).

`make test` runs 10 examples; `make test-nightly` runs 500 (PYKORN_HOSTILE_EXAMPLES)."""

from __future__ import annotations

import asyncio
import itertools
import json
import os
from collections import Counter

import pytest
from hypothesis import HealthCheck, event, given, settings
from hypothesis import strategies as st

from rmclient.core_process import CoreProcess
from shim_k8s.main import run_shim
from tests.integration.core_helpers import free_port
from tests.integration.hostile_objects import Hostile, hostile_objects
from tests.integration.kube_api import FakeKubeAPI
from tests.integration.kube_rbac import RBAC
from tests.integration.manifests import SCHEDULER_SA, render
from tests.integration.test_k8s_api import _until
from tests.integration.test_k8s_faults import _metrics
from tests.integration.test_k8s_shim import node, pod

EXAMPLES = int(os.environ.get("PYKORN_HOSTILE_EXAMPLES", "10"))
_runs = itertools.count()


def _good(i: int) -> dict[str, object]:
    made = pod(f"good-{i}", memory="64Mi", namespace="good")
    made["metadata"]["labels"] = {"applicationId": f"good-app-{i % 3}"}
    return made


async def _scenario(core_address: str, hostile: list[Hostile], goods: int, order: list[int]) -> None:
    api = FakeKubeAPI(RBAC.from_manifests(render()))
    await api.start()
    port = free_port()
    stop = asyncio.Event()
    shim: asyncio.Task[None] | None = None
    try:
        for i in range(2):
            await api.put("nodes", node(f"good-node-{i}", memory="64Gi", cpu="64"))
        for item in hostile:
            if item.early:
                await api.put_raw(item.kind, item.text)
        rm_id = f"rm-hostile-{next(_runs)}"
        shim = asyncio.create_task(run_shim(
            core_address, kubeconfig=api.kubeconfig(SCHEDULER_SA), rm_id=rm_id, stop=stop,
            metrics_listen=f"127.0.0.1:{port}", reconcile_period=0.5,
        ))  # fmt: skip
        late = [h for h in hostile if not h.early]
        for step in order:  # the well-formed pods interleaved with the rest, in the drawn order
            if step < goods:
                await api.put("pods", _good(step))
            elif step - goods < len(late):
                await api.put_raw(late[step - goods].kind, late[step - goods].text)
        await api.put("pods", _good(goods))  # after everything: handled only if the shim got past it all
        wanted = {f"good-{i}" for i in range(goods + 1)}
        bound_names = lambda: {n for n, _ in api.bindings}  # noqa: E731
        await _until(lambda: shim.done() or wanted <= bound_names(), "every good pod bound", 30)
        assert not shim.done(), shim.exception()
        bound = Counter(name for name, _ in api.bindings)
        assert all(count == 1 for count in bound.values()), f"bound more than once: {bound}"
        found = await _metrics(f"http://127.0.0.1:{port}/metrics")
        unexplained = {k: v for k, v in found.items() if 'reason="internal"' in k and v}
        assert not unexplained, f"refused without naming the field: {unexplained}"
        for name, value in found.items():  # what was exercised (--hypothesis-show-statistics)
            if value and ("objects_refused" in name or "objects_fallback" in name):
                event(name.removeprefix("pykorn_k8s_objects_"))
    finally:
        stop.set()
        if shim is not None:
            await asyncio.wait_for(shim, 15)  # a clean stop: run_shim raises nothing
        await api.stop()


@pytest.mark.timeout(60 + 30 * EXAMPLES)
@settings(max_examples=EXAMPLES, deadline=None, suppress_health_check=list(HealthCheck))
@given(data=st.data(), count=st.integers(1, 25), goods=st.integers(1, 12))
def test_no_object_stops_the_shim_and_every_well_formed_pod_is_bound_once(
    core_process: CoreProcess, data: st.DataObject, count: int, goods: int
) -> None:
    hostile = [data.draw(hostile_objects(i), label=f"hostile {i}") for i in range(count)]
    late = sum(1 for h in hostile if not h.early)
    order = data.draw(st.permutations(range(goods + late)), label="order")
    for item in hostile:  # each is valid JSON the API would serve
        json.loads(item.text)
    seen = len(core_process.log_text())
    asyncio.run(_scenario(core_process.address, hostile, goods, order))
    # What reached the core through the shim is refused there with a reason, never a fault of its own.
    assert "Traceback" not in core_process.log_text()[seen:], core_process.log_text()[seen:][-3000:]
