"""The Kubernetes shim loses nothing when things go wrong: bindings that fail, pods deleted while
being scheduled, watches that expire and a core that restarts, all in one burst; and the periodic
reconciliation repairs a mismatch injected behind the shim's back, with an event and a metric."""

from __future__ import annotations

from collections import Counter
from typing import Any

import aiohttp
import pytest

from rmclient.core_process import CoreProcess
from shim_k8s.api import kube as kube_module
from shim_k8s.api.kube import BindError, Kube
from shim_k8s.api.kube_http import KubeHTTP
from shim_k8s.api.kubeconfig import cluster_access
from tests.integration.core_helpers import free_port
from tests.integration.kube_api import FakeKubeAPI
from tests.integration.manifests import SCHEDULER_SA
from tests.integration.rest_helpers import partition_url, rest_until
from tests.integration.test_k8s_api import _until, shim_running
from tests.integration.test_k8s_shim import daemonset_pod, node, pod


def _bound_once(api: FakeKubeAPI) -> Counter[str]:
    counts = Counter(name for name, _ in api.bindings)
    twice = {name: n for name, n in counts.items() if n > 1}
    assert not twice, f"bound more than once: {twice}"
    return counts


async def _metrics(url: str) -> dict[str, float]:
    async with aiohttp.ClientSession() as session, session.get(url) as answer:
        text = await answer.text()
    return {line.rsplit(" ", 1)[0]: float(line.rsplit(" ", 1)[1])
            for line in text.splitlines() if line and not line.startswith("#")}  # fmt: skip


async def test_the_reconciliation_repairs_what_went_wrong_behind_the_shims_back(
    api: FakeKubeAPI, core_address: str, rest_url: str, rm_id: str
) -> None:
    await api.put("nodes", node("n1", memory="8Gi"))
    port = free_port()
    api.swallow_bindings.add("lost")  # the API answers 201 but the pod stays pending
    await api.put("pods", pod("lost"))
    await api.put("pods", pod("ghost"))
    async with shim_running(
        api, core_address, rm_id, reconcile_period=0.2, metrics_listen=f"127.0.0.1:{port}"
    ):
        await _until(lambda: ("ghost", "n1") in api.bindings, "ghost bound")
        # A pod removed without a watch event: only a fresh list shows it is gone.
        api.forget("pods", "ghost")
        await _until(lambda: ("lost", "n1") in api.bindings, "the lost binding made again", timeout=30)
        reconciled = {
            e["involvedObject"]["name"]: e["message"] for e in api.events if e["reason"] == "Reconciled"
        }
        assert "not bound" in reconciled["lost"]

        def core_holds(apps: list[dict[str, Any]]) -> bool:
            keys = {a["allocationKey"] for app in apps for a in app.get("allocations", [])}
            return "uid-ghost" not in keys and "uid-lost" in keys

        async with aiohttp.ClientSession() as session:
            url = f"{partition_url(rest_url, rm_id)}/applications/active"
            await rest_until(
                session, url, core_holds, "the core holding lost and no longer ghost", timeout=30
            )
        found = await _metrics(f"http://127.0.0.1:{port}/metrics")
        assert found['pykorn_k8s_reconcile_repairs_total{kind="allocated-not-bound"}'] == 1
        assert found['pykorn_k8s_reconcile_repairs_total{kind="allocated-gone"}'] == 1
        assert found['pykorn_k8s_reconcile_repairs_total{kind="bound-unknown"}'] == 0
        _bound_once(api)


async def test_a_burst_with_failures_deletions_an_expired_watch_and_a_core_restart_loses_nothing(
    api: FakeKubeAPI, rm_id: str
) -> None:
    first = CoreProcess()
    await first.start()
    second = CoreProcess(listen=first.address)
    for i in range(20):
        await api.put("nodes", node(f"n{i}", memory="64Gi", cpu="64"))
    names = [f"p{i:04d}" for i in range(1_000)]
    for name in names[:40]:
        api.fail_bindings[name] = 1  # a 500 on the first try: the pod is asked again
    deleted = set(names[500:530])
    try:
        async with shim_running(api, first.address, rm_id, reconcile_period=1.0):
            for name in names:
                await api.put("pods", pod(name, memory="512Mi"))
            await _until(lambda: len(api.bindings) >= 200, "the burst under way", timeout=60)
            api.expire_watches()  # the informers' next watches get 410 Gone and list again
            for name in sorted(deleted):  # deleted while the burst is scheduled (some may be bound)
                found = api.get("pods", name)
                if found is not None:
                    await api.delete("pods", found)
            await _until(lambda: len(api.bindings) >= 400, "the burst going on", timeout=60)
            await first.stop()  # the core goes away mid-burst...
            await second.start()  # ...and a new one takes its place
            wanted = set(names) - deleted

            def all_bound() -> bool:
                return wanted <= {name for name, _ in api.bindings}

            await _until(all_bound, "every pod not deleted bound", timeout=120)
        counts = _bound_once(api)
        assert wanted <= set(counts)
        assert all(api.fail_bindings[name] == 0 for name in names[:40])  # each failed once, then bound
    finally:
        await second.stop()
        await first.stop()


async def test_an_eviction_the_api_fails_is_tried_again(
    api: FakeKubeAPI, core_address: str, rm_id: str
) -> None:
    await api.put("nodes", node("n1", memory="2Gi"))
    await api.put("pods", pod("batch-1"))
    await api.put("pods", pod("batch-2", created="2026-11-22T10:05:00Z"))
    api.fail_evictions["batch-2"] = 2  # two 500s, then the eviction goes through
    async with shim_running(api, core_address, rm_id):
        await _until(lambda: len(api.bindings) == 2, "the node to fill")
        await api.put("pods", daemonset_pod("agent-n1", "n1"))
        await _until(lambda: ("agent-n1", "n1") in api.bindings, "the DaemonSet pod bound", timeout=30)
        assert api.evictions == ["batch-2"] and api.fail_evictions["batch-2"] == 0


async def test_a_throttled_or_failed_binding_is_tried_again_and_one_that_went_through_is_kept(
    api: FakeKubeAPI, core_address: str, rest_url: str, rm_id: str
) -> None:
    """Bindings answered 429 (API Priority and Fairness), 500 before the write, and 500 after it (the
    answer lost): each pod bound once, where the core placed it, without a release or an ask again
    (the reconciliation runs only once a minute here, so it is not what binds them)."""
    await api.put("nodes", node("n1", memory="8Gi"))
    api.throttle_bindings["throttled"] = 1
    api.fail_bindings["failed"] = 2
    api.fail_after_binding.add("committed")
    for name in ("throttled", "failed", "committed"):
        await api.put("pods", pod(name))
    async with shim_running(api, core_address, rm_id), aiohttp.ClientSession() as session:
        await _until(lambda: len(api.bindings) == 3, "the three pods bound", timeout=30)
        assert sorted(api.bindings) == [("committed", "n1"), ("failed", "n1"), ("throttled", "n1")]
        assert api.throttle_bindings["throttled"] == 0 and api.fail_bindings["failed"] == 0
        assert not api.fail_after_binding  # the write went through, its answer was a 500

        def held(apps: list[dict[str, Any]]) -> bool:
            return {a["allocationKey"] for app in apps for a in app.get("allocations", [])} == {
                "uid-throttled",
                "uid-failed",
                "uid-committed",
            }

        url = f"{partition_url(rest_url, rm_id)}/applications/active"
        await rest_until(session, url, held, "the core holding the three as allocated")
    assert not [e for e in api.events if e["reason"] in ("BindingFailed", "Reconciled")]
    _bound_once(api)


async def test_a_conflict_is_success_only_for_the_same_pod_on_the_same_node(api: FakeKubeAPI) -> None:
    """A 409 on a binding is checked against the pod the API has: ours (same UID) on the node we
    wanted is done; a pod made since under the same name, even on that node, is not ours."""
    await api.put("nodes", node("n1"))
    ours = pod("web")
    await api.put("pods", {**ours, "spec": {**ours["spec"], "nodeName": "n1"}})
    kube = Kube(KubeHTTP(cluster_access(api.kubeconfig(SCHEDULER_SA))))
    try:
        await kube.bind(ours, "n1")  # already there: an earlier attempt's answer was lost
        with pytest.raises(BindError, match="409"):
            await kube.bind(ours, "n2")
        stranger = {**ours, "metadata": {**ours["metadata"], "uid": "uid-web-old"}}
        with pytest.raises(BindError, match="409"):
            await kube.bind(stranger, "n1")
    finally:
        await kube.http.close()
    assert api.bindings == []  # the API took none of these


async def test_an_eviction_a_disruption_budget_refuses_waits_for_it_and_says_so(
    api: FakeKubeAPI, core_address: str, rm_id: str, monkeypatch: pytest.MonkeyPatch
) -> None:
    """A budget's 429 is not a failure to give up on: the eviction is tried until the budget allows
    it (more times than other failures are), and the pod has one event saying why it still runs."""
    monkeypatch.setattr(kube_module, "WRITE_PAUSE", 0.01)  # the pauses, not what they wait for
    await api.put("nodes", node("n1", memory="2Gi"))
    await api.put("pods", pod("batch-1"))
    await api.put("pods", pod("batch-2", created="2026-11-22T10:05:00Z"))
    api.budget_refusals["batch-2"] = kube_module.WRITE_ATTEMPTS + 2
    async with shim_running(api, core_address, rm_id):
        await _until(lambda: len(api.bindings) == 2, "the node to fill")
        await api.put("pods", daemonset_pod("agent-n1", "n1"))
        await _until(lambda: ("agent-n1", "n1") in api.bindings, "the DaemonSet pod bound", timeout=30)
    assert api.evictions == ["batch-2"] and api.budget_refusals["batch-2"] == 0
    blocked = [e["message"] for e in api.events if e["reason"] == "EvictionBlocked"]
    assert blocked == [
        "preempted, not evicted yet: Cannot evict pod as it would violate the pod's disruption budget."
    ]
