"""What a user sees when the core will not schedule a pod, through the whole shim (`run_shim`) against
the HTTP emulation of the API and a real core: a rejected application and a Hard gang that timed out
fail their pods as YuniKorn's do (and the next submission works), and a pending pod says which way it
waits: Unschedulable (more nodes would help: the cluster autoscaler's signal) or SchedulingSkipped."""

from __future__ import annotations

import asyncio
import json
from typing import Any
from urllib.parse import quote

import aiohttp
import pytest

from rmclient.core_process import CoreProcess
from shim_k8s.main import run_shim
from shim_k8s.readers.task_groups import SCHEDULING_POLICY, TASK_GROUPS
from si.v1 import si_pb2
from tests.integration.kube_api import FakeKubeAPI, condition
from tests.integration.manifests import SCHEDULER_SA
from tests.integration.rest_helpers import partition_url, rest_until
from tests.integration.test_k8s_api import _left_pending, _until, shim_running
from tests.integration.test_k8s_gang import _placeholders, member
from tests.integration.test_k8s_shim import K8sShim, MemoryKube, node, pod, settle
from tests.integration.test_k8s_shim import kube_and_shim as kube_and_shim  # a fixture, used by name
from tests.recording_client import RecordingClient

PROVIDED_ONLY = """
partitions:
  - name: default
    placementrules:
      - name: provided
    queues:
      - name: root
        submitacl: "*"
        queues:
          - name: existing
          - name: capped
            resources: {max: {memory: 1Gi}}
%(more)s
"""


def _configmap(more: str = "") -> dict[str, Any]:
    return {"metadata": {"name": "yunikorn-configs", "namespace": "yunikorn"},
            "data": {"queues.yaml": PROVIDED_ONLY % {"more": more}}}  # fmt: skip


def _in(name: str, queue: str, app: str, memory: str = "256Mi") -> dict[str, Any]:
    made = pod(name, memory=memory)
    made["metadata"]["labels"] = {"queue": queue, "applicationId": app}
    return made


def _status(api: FakeKubeAPI, name: str) -> dict[str, Any]:
    return (api.get("pods", name) or {}).get("status") or {}


def _warned(api: FakeKubeAPI, name: str, reason: str) -> list[str]:
    return [e["message"] for e in api.events if e["involvedObject"]["name"] == name and e["reason"] == reason]


async def test_a_rejected_application_fails_its_pods_and_the_next_submission_works(
    api: FakeKubeAPI, core_address: str, rest_url: str, rm_id: str
) -> None:
    """Before, the shim kept the rejected application as known: its pods stayed Pending for good, and
    so did every later pod of its ID (with a generated ID, a whole namespace's)."""
    await api.put("configmaps", _configmap())
    await api.put("nodes", node("n1", memory="8Gi"))
    async with shim_running(api, core_address, rm_id):
        await api.put("pods", _in("lost-1", "root.missing", "lost"))
        await api.put("pods", _in("lost-2", "root.missing", "lost"))
        await _until(lambda: _status(api, "lost-1").get("phase") == "Failed", "lost-1 failed")
        first = _status(api, "lost-1")
        assert first["reason"] == "ApplicationRejected" and "root.missing" in first["message"]
        assert (condition(api.get("pods", "lost-1"), "PodScheduled") or {}).get(
            "reason"
        ) == "ApplicationRejected"
        assert any(
            "Application lost scheduling failed" in m for m in _warned(api, "lost-1", "ApplicationFailed")
        )
        await _until(lambda: _status(api, "lost-2").get("phase") == "Failed", "lost-2 failed too")
        # The queue appears: the same application ID is a new submission, and it runs.
        await api.put("configmaps", _configmap("          - name: missing"))
        async with aiohttp.ClientSession() as session:
            queue = f"{partition_url(rest_url, rm_id)}/queue/root.missing"
            await rest_until(session, queue, lambda q: q.get("queuename") == "root.missing", "the new queue")
        await api.put("pods", _in("lost-3", "root.missing", "lost"))
        await _until(lambda: ("lost-3", "n1") in api.bindings, "the resubmission bound")
        assert [n for n, _ in api.bindings] == ["lost-3"]


async def test_a_hard_gang_that_times_out_fails_its_pods_and_says_so_on_the_originator(
    api: FakeKubeAPI, core_address: str, rm_id: str
) -> None:
    await api.put("nodes", node("n1", memory="2Gi"))
    groups = [{"name": "workers", "minMember": 3, "minResource": {"cpu": "100m", "memory": "1Gi"}}]
    policy = "placeholderTimeoutInSeconds=1 gangSchedulingStyle=Hard"
    await api.put("pods", member("w-1", "workers", app="hard-1", **{TASK_GROUPS: json.dumps(groups),
                                                                   SCHEDULING_POLICY: policy}))  # fmt: skip
    await api.put("pods", member("w-2", "workers", app="hard-1"))
    async with shim_running(api, core_address, rm_id):
        await _until(lambda: len(_placeholders(api)) == 3, "three placeholder pods")
        await _until(lambda: _status(api, "w-1").get("phase") == "Failed", "w-1 failed at the timeout", 30)
        await _until(lambda: _status(api, "w-2").get("phase") == "Failed", "w-2 failed too")
        for name in ("w-1", "w-2"):
            status = _status(api, name)
            assert status["reason"] == "ResourceReservationTimeout"
            assert status["message"].startswith("Scheduling has timed out due to insufficient resources")
            reason = (condition(api.get("pods", name), "PodScheduled") or {}).get("reason")
            assert reason == "ResourceReservationTimeout"  # not the stale "waiting for placeholders"
        names = {p["metadata"]["name"] for p in _placeholders(api)}
        await _until(lambda: names <= set(api.deleted), "the placeholders deleted")
        said = _warned(api, "w-1", "GangScheduling")
        assert "Application hard-1 creating placeholders" in said
        assert "Application hard-1 placeholder has been timed out" in said
        assert not [n for n, _ in api.bindings if n in ("w-1", "w-2")]


async def test_a_pod_says_whether_more_nodes_would_help(
    api: FakeKubeAPI, core_address: str, rest_url: str, rm_id: str
) -> None:
    """Unschedulable only when the pod fits its queue and no node has room (the cluster autoscaler adds
    nodes for those); a pod held by its queue's max is SchedulingSkipped, with the core's reason."""
    await api.put("configmaps", _configmap())
    await api.put("nodes", node("n1", memory="2Gi"))
    async with shim_running(api, core_address, rm_id), aiohttp.ClientSession() as session:
        await api.put("pods", _in("fits", "root.capped", "capped-app", memory="768Mi"))
        await _until(lambda: ("fits", "n1") in api.bindings, "the first bound")
        await api.put("pods", _in("over-max", "root.capped", "capped-app", memory="512Mi"))
        await api.put("pods", _in("too-big", "root.existing", "big-app", memory="4Gi"))

        def reason_of(name: str) -> str:
            return str((condition(api.get("pods", name), "PodScheduled") or {}).get("reason", ""))

        await _until(lambda: reason_of("over-max") == "SchedulingSkipped", "the quota-held pod skipped")
        await _until(lambda: reason_of("too-big") == "Unschedulable", "the pod no node fits: Unschedulable")
        held = condition(api.get("pods", "over-max"), "PodScheduled") or {}
        assert "over queue root.capped's max" in held["message"]
        assert any("skipped from scheduling" in m for m in _warned(api, "over-max", "PodUnschedulable"))

        def kinds(apps: list[dict[str, Any]]) -> dict[str, tuple[bool, str]]:
            return {
                r["allocationKey"]: (r.get("triggeredScaleUp", False), r["pykorn"].get("waiting", ""))
                for app in apps for r in app.get("requests", [])
            }  # fmt: skip

        url = f"{partition_url(rest_url, rm_id)}/applications/active"
        body = await rest_until(session, url, lambda apps: len(kinds(apps)) == 2, "both pending in REST")
        assert kinds(body) == {"uid-over-max": (False, "SKIPPED"), "uid-too-big": (True, "FAILED")}


async def test_after_a_restart_with_a_queue_gone_running_pods_stay_counted_in_the_recovery_queue(
    api: FakeKubeAPI, rm_id: str
) -> None:
    """The core restarts with a configuration that no longer has a running application's queue: the
    shim's re-sync sends the application forced (application.create.force), the core keeps it in
    root.@recovery@, and every running pod still counts on its node, so a new pod cannot overcommit it.
    Before, the application was refused and its node's room counted as free."""
    first = CoreProcess()
    await first.start()
    second = CoreProcess(listen=first.address)
    await api.put("configmaps", _configmap("          - name: team"))
    await api.put("nodes", node("n1", memory="4Gi"))
    await api.put("pods", _in("runner", "root.team", "team-app", memory="3Gi"))
    stop = asyncio.Event()
    kubeconfig = api.kubeconfig(SCHEDULER_SA)
    shim = asyncio.create_task(run_shim(first.address, kubeconfig=kubeconfig, rm_id=rm_id, stop=stop))
    try:
        await _until(lambda: ("runner", "n1") in api.bindings, "runner bound")
        await first.stop()
        await api.put("configmaps", _configmap())  # root.team is gone from the configuration
        await second.start()
        async with aiohttp.ClientSession() as session:
            base = partition_url(second.rest_url, rm_id)
            recovered = await rest_until(
                session, f"{base}/queue/{quote('root.@recovery@', safe='')}",
                lambda q: q.get("allocatedResource", {}).get("memory") == 3 * 2**30,
                "the running pod counted in the recovery queue", timeout=60,
            )  # fmt: skip
            assert recovered.get("isManaged") is False
        await api.put("pods", _in("newcomer", "root.existing", "new-app", memory="2Gi"))
        await _left_pending(second.rest_url, rm_id, ["newcomer"], running=["runner"], timeout=30)
        assert [n for n, _ in api.bindings] == ["runner"]  # 3Gi of 4Gi run: 2Gi does not fit
    finally:
        stop.set()
        await asyncio.wait_for(shim, 10)
        await second.stop()
        await first.stop()


async def test_a_batchs_new_applications_go_in_one_request_before_their_asks(
    kube_and_shim: tuple[MemoryKube, K8sShim], monkeypatch: pytest.MonkeyPatch
) -> None:
    """Twenty pods of twenty new applications and one of an application the core rejects, as the
    informers deliver a burst: one request adds the applications, one more their asks, right after it
    (no round trip at all); the rejected one's pod fails, and its ask comes back refused with the
    application's reason."""
    kube, shim = kube_and_shim
    await shim.sync([node("n1", memory="64Gi")], [], configmap=_configmap())
    requests: list[list[str]] = []
    send = shim.client.add_applications

    async def counted(*apps: si_pb2.AddApplicationRequest) -> None:
        requests.append([a.applicationID for a in apps])
        await send(*apps)

    monkeypatch.setattr(shim.client, "add_applications", counted)

    async with shim.batch():
        for i in range(20):
            await shim.on_pod("ADDED", _in(f"p{i}", "root.existing", f"app-{i}"))
        await shim.on_pod("ADDED", _in("lost", "root.missing", "lost"))
    await settle(
        shim, lambda: len(kube.bindings) == 20 and kube.failed, "the pods bound, the lost one failed"
    )
    assert requests == [[*(f"app-{i}" for i in range(20)), "lost"]]
    assert sorted(name for name, _ in kube.bindings) == sorted(f"p{i}" for i in range(20))
    assert [(name, reason) for name, reason, _ in kube.failed] == [("lost", "ApplicationRejected")]
    client = shim.client
    assert isinstance(client, RecordingClient)
    await client.wait_rejected_allocations(1)  # its application was rejected before it came
    [rejected] = client.seen.rejected_allocations
    assert rejected.applicationID == "lost" and "application lost was rejected: " in rejected.reason
    assert "root.missing" in rejected.reason
    assert [(name, reason) for name, reason, _ in kube.failed] == [("lost", "ApplicationRejected")]  # once


async def test_asks_the_core_refused_before_it_knew_their_application_are_asked_again_once_it_accepts(
    rm_id: str, monkeypatch: pytest.MonkeyPatch
) -> None:
    """The streams skewed: the asks reach the core before their application, on a core that holds none
    (max_early_asks=0), so it refuses them as of an unknown application. The shim asks again once the
    core accepts the application, and every pod is bound once."""
    core = CoreProcess(extra_args=["--limit", "max_early_asks=0"])
    await core.start()
    try:
        async with RecordingClient(core.address, rm_id) as client:
            kube = MemoryKube()
            shim = K8sShim(client, kube)
            kube.shim = shim
            await shim.sync([node("n1", memory="64Gi")], [], configmap=_configmap())
            send = client.add_applications
            late: list[asyncio.Task[None]] = []

            async def after_the_asks(*apps: si_pb2.AddApplicationRequest) -> None:
                async def later() -> None:
                    await client.barrier()  # the asks sent meanwhile are read (and refused) first
                    await send(*apps)

                late.append(asyncio.create_task(later()))

            monkeypatch.setattr(client, "add_applications", after_the_asks)
            async with shim.batch():
                for i in range(3):
                    await shim.on_pod("ADDED", _in(f"p{i}", "root.existing", "skewed"))
            await settle(shim, lambda: len(kube.bindings) == 3, "the three pods bound")
            assert sorted(name for name, _ in kube.bindings) == ["p0", "p1", "p2"]
            refused = client.seen.rejected_allocations
            assert len(refused) == 3 and all("is not known in partition" in r.reason for r in refused)
            assert not kube.failed and not shim.state.ledger.awaiting_reasks()
            await asyncio.gather(*late)
    finally:
        await core.stop()


async def test_the_configmaps_core_keys_reach_the_core_and_a_change_of_them_alone_keeps_its_queues(
    rm_id: str,
) -> None:
    """event.* and health.* of yunikorn-configs go to the core in extraConfig at registration; a change of
    only them sends them with the queues the core has (not the core's default ones)."""
    core = CoreProcess()
    await core.start()
    try:
        async with RecordingClient(core.address, rm_id) as client, aiohttp.ClientSession() as session:
            kube = MemoryKube()
            shim = K8sShim(client, kube)
            kube.shim = shim
            configmap = _configmap()
            configmap["data"]["event.trackingEnabled"] = "false"
            await shim.sync([node("n1", memory="64Gi")], [], configmap=configmap)
            events = f"{core.rest_url}/ws/v1/events/batch"
            async with session.get(events) as response:
                assert (
                    response.status == 500
                    and (await response.json())["message"] == "Event tracking is disabled"
                )
            changed = {**configmap, "data": {**configmap["data"], "event.trackingEnabled": "true"}}
            await shim.registration.on_configmap("MODIFIED", changed)
            async with session.get(events) as response:
                assert response.status == 200
            queue = f"{partition_url(core.rest_url, rm_id)}/queue/root.existing"
            async with session.get(queue) as response:
                assert response.status == 200  # the ConfigMap's queues, still in force
            assert [e for e in kube.events if e[1] == "ConfigKeyIgnored"] == []  # nothing warned either side
    finally:
        await core.stop()
