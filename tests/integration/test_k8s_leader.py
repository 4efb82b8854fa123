"""Leader election on a Lease (`pykorn k8s --leader-elect`): one replica schedules, a standby takes over
when the leader dies, and no pod is bound twice. The Lease lives in the HTTP emulation of the API."""

from __future__ import annotations

import asyncio
import signal
import subprocess
import sys
from collections import Counter

from shim_k8s.api.kube_http import KubeHTTP
from shim_k8s.api.kubeconfig import cluster_access
from shim_k8s.api.leader import LeaderElection, LeaderElector
from shim_k8s.api.own_pod import LEADER_LABEL, OwnPod
from shim_k8s.main import run_shim
from tests.integration.kube_api import FakeKubeAPI
from tests.integration.manifests import NAMESPACE, SCHEDULER_SA, find, render
from tests.integration.test_k8s_api import _until
from tests.integration.test_k8s_shim import node, pod


def _fast(identity: str) -> LeaderElection:
    """Short times, so a take-over happens within a test."""
    return LeaderElection(identity=identity, lease_duration=2.0, renew_deadline=1.5, retry_period=0.2)


class Clock:
    def __init__(self) -> None:
        self.now = 1000.0

    def __call__(self) -> float:
        return self.now


async def test_one_candidate_wins_and_a_standby_waits_out_the_lease(api: FakeKubeAPI) -> None:
    http = KubeHTTP(cluster_access(api.kubeconfig(SCHEDULER_SA)), 1000.0, 1000, 8)
    clock = Clock()
    a = LeaderElector(http, _fast("a"), clock)
    b = LeaderElector(http, _fast("b"), clock)
    try:
        results = await asyncio.gather(a.try_acquire_or_renew(), b.try_acquire_or_renew())
        assert sorted(results) == [False, True]  # both saw it free; one write won, the other conflicted
        leader, standby = (a, b) if results[0] else (b, a)
        assert api.lease_holder("pykorn") == leader.election.identity
        assert await leader.try_acquire_or_renew()  # renewing
        # The standby measures on its own clock from when it saw the record change (the renewal).
        assert not await standby.try_acquire_or_renew()
        clock.now += 1.9
        assert not await standby.try_acquire_or_renew()  # renewed less than a lease duration ago
        clock.now += 0.2  # a full lease duration with no renewal seen
        assert await standby.try_acquire_or_renew()
        assert api.lease_holder("pykorn") == standby.election.identity
        lease = api.objects["leases"]["yunikorn/pykorn"]
        assert lease["spec"]["leaseTransitions"] == 1
        assert not await leader.try_acquire_or_renew()  # the old leader sees it is held now
        # Giving the lease up on a clean stop lets the other take it at once.
        await standby.release()
        assert api.lease_holder("pykorn") == ""
        assert await leader.try_acquire_or_renew()
    finally:
        await http.close()


async def test_a_lease_with_unreadable_fields_is_waited_out_and_taken_not_fatal(api: FakeKubeAPI) -> None:
    """Fields of the wrong type (written by hand, or by a broken client): each is taken as absent, with
    a warning; a holder named oddly is still a holder, waited out for our own lease duration."""
    spec = {"holderIdentity": 5, "leaseDurationSeconds": "long", "leaseTransitions": [1]}
    lease = {"metadata": {"name": "pykorn", "namespace": "yunikorn"}, "spec": spec}
    await api.put("leases", lease)
    http = KubeHTTP(cluster_access(api.kubeconfig(SCHEDULER_SA)), 1000.0, 1000, 8)
    clock = Clock()
    candidate = LeaderElector(http, _fast("a"), clock)
    try:
        assert not await candidate.try_acquire_or_renew()  # "5" holds it, as far as anyone can tell
        clock.now += 2.1  # our lease duration, in place of the unreadable one
        assert await candidate.try_acquire_or_renew()
        spec = api.objects["leases"]["yunikorn/pykorn"]["spec"]
        assert (spec["holderIdentity"], spec["leaseDurationSeconds"], spec["leaseTransitions"]) == ("a", 2, 1)
    finally:
        await http.close()


def _bound_once(api: FakeKubeAPI) -> Counter[str]:
    counts = Counter(name for name, _ in api.bindings)
    assert all(n == 1 for n in counts.values()), f"bound more than once: {counts}"
    return counts


async def test_the_standby_takes_over_when_the_leader_is_killed(
    api: FakeKubeAPI, core_address: str, rm_id: str
) -> None:
    await api.put("nodes", node("n1", memory="64Gi"))
    kubeconfig = api.kubeconfig(SCHEDULER_SA)
    leader = subprocess.Popen(  # noqa: ASYNC220 - a real replica: killed below, not waited on in the loop
        [sys.executable, "-m", "pykorn_cli", "k8s", "--core", core_address, "--kubeconfig", kubeconfig,
         "--rm-id", rm_id, "--leader-elect", "--leader-elect-identity", "replica-1",
         "--leader-elect-lease-duration", "2s", "--leader-elect-renew-deadline", "1500ms",
         "--leader-elect-retry-period", "200ms", "--log-level", "warning"],
        stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL,
    )  # fmt: skip
    stop = asyncio.Event()
    standby: asyncio.Task[None] | None = None
    try:
        await _until(lambda: api.lease_holder("pykorn") == "replica-1", "replica-1 leading", timeout=60)
        election = _fast("replica-2")
        standby = asyncio.create_task(
            run_shim(
                core_address,
                kubeconfig=api.kubeconfig(SCHEDULER_SA),
                rm_id=rm_id,
                stop=stop,
                election=election,
            )
        )
        for i in range(5):
            await api.put("pods", pod(f"before-{i}"))
        await _until(lambda: len(api.bindings) == 5, "the leader binding the first pods", timeout=60)
        assert api.lease_holder("pykorn") == "replica-1"  # the standby did not take over meanwhile
        leader.send_signal(signal.SIGKILL)  # no clean stop: the lease stays held until it runs out
        leader.wait(10)
        for i in range(5):
            await api.put("pods", pod(f"after-{i}"))
        await _until(lambda: api.lease_holder("pykorn") == "replica-2", "replica-2 leading", timeout=30)
        await _until(lambda: len(api.bindings) == 10, "the new leader binding the next pods", timeout=60)
        assert set(_bound_once(api)) == {f"before-{i}" for i in range(5)} | {f"after-{i}" for i in range(5)}
    finally:
        if leader.poll() is None:
            leader.kill()
            leader.wait(10)
        stop.set()
        if standby is not None:
            await asyncio.wait_for(standby, 15)
    assert api.lease_holder("pykorn") == ""  # given up on its clean stop


async def test_sigterm_stops_a_leading_replica_cleanly_and_gives_the_lease_up(
    api: FakeKubeAPI, core_address: str, rm_id: str
) -> None:
    """What a pod's stop sends: the process (PID 1 in its container, where a signal without a handler is
    not delivered) stops at once, gives the Lease up and exits 0, so a standby takes over without
    waiting out the lease duration (an hour here)."""
    await api.put("nodes", node("n1", memory="64Gi"))
    leader = subprocess.Popen(  # noqa: ASYNC220 - a real replica, stopped by a signal below
        [sys.executable, "-m", "pykorn_cli", "k8s", "--core", core_address, "--kubeconfig",
         api.kubeconfig(SCHEDULER_SA), "--rm-id", rm_id, "--leader-elect", "--leader-elect-identity",
         "replica-1", "--leader-elect-lease-duration", "1h", "--log-level", "warning"],
        stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL,
    )  # fmt: skip
    try:
        await _until(lambda: api.lease_holder("pykorn") == "replica-1", "replica-1 leading", timeout=60)
        await api.put("pods", pod("web"))
        await _until(lambda: len(api.bindings) == 1, "the leader binding web", timeout=60)
        leader.send_signal(signal.SIGTERM)
        await _until(lambda: api.lease_holder("pykorn") == "", "the lease given up", timeout=30)
        await _until(lambda: leader.poll() is not None, "the process exiting", timeout=30)
        assert leader.returncode == 0
    finally:
        if leader.poll() is None:
            leader.kill()
            leader.wait(10)


def _service_endpoints(api: FakeKubeAPI) -> set[str]:
    """The scheduler pods yunikorn-service sends REST requests to: those its rendered selector matches,
    as the endpoints controller picks them (readiness aside: both replicas are ready)."""
    selector = find(render(), "Service", "yunikorn-service")["spec"]["selector"]
    return {
        p["metadata"]["name"]
        for p in api.objects["pods"].values()
        if p["metadata"].get("namespace") == NAMESPACE
        and all((p["metadata"].get("labels") or {}).get(k) == v for k, v in selector.items())
    }


def _scheduler_pod(name: str) -> dict[str, object]:
    """A replica of the scheduler Deployment as the API holds it (labels from the rendered template)."""
    template = find(render(), "Deployment", "pykorn-scheduler")["spec"]["template"]
    meta = {
        "name": name,
        "namespace": NAMESPACE,
        "uid": f"uid-{name}",
        "labels": template["metadata"]["labels"],
    }
    return {"metadata": meta, "spec": {"schedulerName": "default-scheduler", "nodeName": "n1"}}


async def test_the_rest_service_follows_the_leader(api: FakeKubeAPI, core_address: str, rm_id: str) -> None:
    """yunikorn-service reaches the core of the replica that schedules, never a standby's idle one: the
    leader labels its pod once synced, clears the label when it stops, and the standby that takes over
    labels its own (issue 53, HA)."""
    await api.put("nodes", node("n1", memory="64Gi"))
    for name in ("scheduler-a", "scheduler-b"):
        await api.put("pods", _scheduler_pod(name))
    # A label an earlier run of b's container left behind: cleared when b starts.
    stale = _scheduler_pod("scheduler-b")
    stale["metadata"]["labels"] = {**stale["metadata"]["labels"], LEADER_LABEL: "true"}  # type: ignore[index]
    await api.put("pods", stale)
    assert _service_endpoints(api) == {"scheduler-b"}
    stops = {name: asyncio.Event() for name in ("a", "b")}

    def replica(name: str) -> asyncio.Task[None]:
        return asyncio.create_task(
            run_shim(
                core_address, kubeconfig=api.kubeconfig(SCHEDULER_SA), rm_id=rm_id, stop=stops[name],
                election=_fast(name), own_pod=OwnPod(NAMESPACE, f"scheduler-{name}"),
            )
        )  # fmt: skip

    first = replica("a")
    second: asyncio.Task[None] | None = None
    try:
        await _until(lambda: api.lease_holder("pykorn") == "a", "a leading")
        await _until(lambda: "scheduler-a" in _service_endpoints(api), "a's pod labelled")
        second = replica("b")
        await _until(lambda: _service_endpoints(api) == {"scheduler-a"}, "b's stale label cleared")
        await api.put("pods", pod("web"))
        await _until(lambda: len(api.bindings) == 1, "a binding web")
        assert _service_endpoints(api) == {"scheduler-a"}  # b stands by
        assert ("scheduler-b", {"metadata": {"labels": {LEADER_LABEL: None}}}) in api.pod_patches
        stops["a"].set()  # a clean stop: the label goes, then the Lease
        await asyncio.wait_for(first, 15)
        await _until(lambda: api.lease_holder("pykorn") == "b", "b taking over")
        await _until(lambda: _service_endpoints(api) == {"scheduler-b"}, "the Service on b's core")
    finally:
        for stop in stops.values():
            stop.set()
        for task in (first, second):
            if task is not None:
                await asyncio.wait_for(task, 15)
    assert _service_endpoints(api) == set()  # nobody schedules: no core to send REST requests to
