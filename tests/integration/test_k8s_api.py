"""The whole Kubernetes shim (`shim_k8s.main.run_shim`: the official client, informers, the shim) against
an HTTP emulation of the API server and a real core over gRPC."""

from __future__ import annotations

import asyncio
import contextlib
from collections.abc import AsyncIterator, Callable, Iterable
from functools import partial
from typing import Any

import aiohttp
import pytest

from rmclient.core_process import CoreProcess
from shim_k8s.main import run_shim
from tests.integration.kube_api import FakeKubeAPI, Obj, condition
from tests.integration.manifests import SCHEDULER_SA
from tests.integration.rest_helpers import partition_url, rest_until
from tests.integration.test_k8s_shim import configmap, daemonset_pod, node, pod

# What a claim bound by the PV controller carries: a binding it completed.
BIND_COMPLETED = {"pv.kubernetes.io/bind-completed": "yes"}


async def _until(condition: Callable[[], object], what: str, timeout: float = 15.0) -> None:
    """Until `condition()` holds of the emulation's own state (bindings, evictions, events), looked at
    every 50 ms: the shim runs in this loop, and its requests reach the emulation in it too."""
    loop = asyncio.get_running_loop()
    deadline = loop.time() + timeout
    while not condition():
        if loop.time() > deadline:
            raise TimeoutError(f"timed out waiting for {what}")
        await asyncio.sleep(0.05)


def _unschedulable(api: FakeKubeAPI, pod_name: str) -> Obj | None:
    """The pod's PodScheduled condition while it says False (waiting, with the reason); None else."""
    found = condition(api.get("pods", pod_name), "PodScheduled")
    return found if found is not None and found["status"] == "False" else None


async def _left_pending(
    rest_url: str, rm_id: str, waiting: Iterable[str], running: Iterable[str] = (), timeout: float = 30.0
) -> None:
    """Until the core shows each pod of `waiting` as a pending ask with a reason (it looked at the ask
    and could not place it) and each of `running` allocated. A pending ask has no allocation, so the
    shim has nothing to bind for it: a check that such a pod is not bound holds from then on."""
    keys, placed = {f"uid-{name}" for name in waiting}, {f"uid-{name}" for name in running}

    def holds(apps: list[dict[str, Any]]) -> bool:
        reasons = {
            r["allocationKey"]: r.get("allocationLog", []) for app in apps for r in app.get("requests", [])
        }
        allocated = {a["allocationKey"] for app in apps for a in app.get("allocations", [])}
        return all(reasons.get(key) for key in keys) and placed <= allocated

    async with aiohttp.ClientSession() as session:
        await rest_until(
            session,
            f"{partition_url(rest_url, rm_id)}/applications/active",
            holds,
            f"{sorted(keys)} pending with a reason, {sorted(placed)} allocated",
            timeout=timeout,
        )


@contextlib.asynccontextmanager
async def shim_running(
    api: FakeKubeAPI, core_address: str, rm_id: str, **options: Any
) -> AsyncIterator[None]:
    """The whole shim against the emulation, for the block; stopped (and waited for) after it."""
    stop = asyncio.Event()
    shim = asyncio.create_task(
        run_shim(core_address, kubeconfig=api.kubeconfig(SCHEDULER_SA), rm_id=rm_id, stop=stop, **options)
    )
    try:
        yield
    finally:
        stop.set()
        await asyncio.wait_for(shim, 10)


def _more_bindings(api: FakeKubeAPI, than: int) -> bool:
    return len(api.bindings) > than


async def test_pods_in_the_api_are_bound_where_the_core_says_even_after_a_410(
    api: FakeKubeAPI, core_address: str, rm_id: str
) -> None:
    await api.put("nodes", node("n1", memory="4Gi"))
    await api.put("pods", pod("early"))  # exists before the shim starts: found by the initial list
    stop = asyncio.Event()
    shim = asyncio.create_task(
        run_shim(core_address, kubeconfig=api.kubeconfig(SCHEDULER_SA), rm_id=rm_id, stop=stop)
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
        run_shim(core_address, kubeconfig=api.kubeconfig(SCHEDULER_SA), rm_id=rm_id, stop=stop)
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


async def test_after_a_core_restart_the_shim_rebuilds_its_state_without_binding_twice(
    api: FakeKubeAPI, rm_id: str
) -> None:
    first = CoreProcess()
    await first.start()
    address = first.address
    await api.put("nodes", node("n1", memory="2Gi"))
    for name in ("a", "b", "c"):
        await api.put("pods", pod(name))
    stop = asyncio.Event()
    shim = asyncio.create_task(
        run_shim(address, kubeconfig=api.kubeconfig(SCHEDULER_SA), rm_id=rm_id, stop=stop)
    )
    second = CoreProcess(listen=address)
    try:
        await _until(lambda: len(api.bindings) == 2, "two pods on the 2Gi node")
        await first.stop()  # the core goes away with all it knew...
        await second.start()  # ...and a new one comes up at the same address
        # The shim reconnects and sends what exists: the new core holds the two bound pods and has
        # looked at c and left it pending.
        bound = [name for name, _ in api.bindings]
        waiting = {"a", "b", "c"} - set(bound)
        # (Generous: the shim's reconnect backs off up to 5 s between attempts on a loaded machine.)
        await _left_pending(second.rest_url, rm_id, waiting, running=bound, timeout=60)
        assert len(api.bindings) == 2  # nothing bound twice, and c still does not fit
        finished = api.get("pods", bound[0])
        assert finished is not None
        await api.delete("pods", finished)  # room frees: the rebuilt core places c
        await _until(lambda: ("c", "n1") in api.bindings, "c to be bound by the new core")
        assert len(api.bindings) == 3
    finally:
        stop.set()
        await asyncio.wait_for(shim, 10)
        await second.stop()
        await first.stop()


async def test_foreign_pods_classes_and_the_configmap_through_the_api(
    api: FakeKubeAPI, core_address: str, rest_url: str, rm_id: str
) -> None:
    await api.put("nodes", node("n1", memory="5Gi"))
    await api.put("configmaps", configmap("1Gi"))
    await api.put("pods", pod("dns", memory="2Gi", namespace="kube-system", scheduler="default-scheduler",
                              node_name="n1"))  # fmt: skip
    stop = asyncio.Event()
    shim = asyncio.create_task(
        run_shim(
            core_address,
            kubeconfig=api.kubeconfig(SCHEDULER_SA),
            rm_id=rm_id,
            namespace="yunikorn",
            stop=stop,
        )
    )
    try:
        capped = [pod("q1", labels={"queue": "root.capped"}), pod("q2", labels={"queue": "root.capped"})]
        for p in capped:
            p["metadata"]["labels"] = {"queue": "root.capped"}
            await api.put("pods", p)
        await _until(lambda: ("q1", "n1") in api.bindings, "q1 under the 1Gi max")
        await _left_pending(rest_url, rm_id, ["q2"])
        assert [n for n, _ in api.bindings] == ["q1"]
        bad = configmap("1Gi")
        bad["data"]["queues.yaml"] = "partitions: [oops"
        await api.put("configmaps", bad)
        await _until(lambda: any(e["reason"] == "ConfigRejected" for e in api.events), "the refusal event")
        await api.put("configmaps", configmap("4Gi"))  # raised: q2 fits the queue now
        # The node: 5Gi - 2Gi for the foreign dns pod - 1Gi q1 leaves 2Gi, room for q2 and then odd.
        await _until(lambda: ("q2", "n1") in api.bindings, "q2 after the raise")
        await api.put("pods", pod("odd", memory="100Mi", priorityClassName="missing"))
        await _until(
            lambda: any(e["reason"] == "PriorityClassNotFound" for e in api.events), "the class event"
        )
        await api.put("priorityclasses", {"metadata": {"name": "missing"}, "value": 10})
        await _until(lambda: any(n == "odd" for n, _ in api.bindings), "odd once its class exists")
    finally:
        stop.set()
        await asyncio.wait_for(shim, 10)


async def test_priorities_and_foreign_room_through_the_api(
    api: FakeKubeAPI, core_address: str, rest_url: str, rm_id: str
) -> None:
    await api.put("nodes", node("n1", memory="4Gi"))
    await api.put("priorityclasses", {"metadata": {"name": "high"}, "value": 1000})
    await api.put("priorityclasses", {"metadata": {"name": "dflt"}, "value": 7, "globalDefault": True})
    # A pod of another scheduler holds 3Gi of n1: one 1Gi pod of ours fits beside it.
    await api.put("pods", pod("other", memory="3Gi", scheduler="default-scheduler", node_name="n1"))
    stop = asyncio.Event()
    shim = asyncio.create_task(
        run_shim(core_address, kubeconfig=api.kubeconfig(SCHEDULER_SA), rm_id=rm_id, stop=stop)
    )
    try:
        await api.put("pods", pod("filler"))  # takes the one free slot
        await _until(lambda: ("filler", "n1") in api.bindings, "the filler to be bound")
        # Four wait; admitted 5 < default 7 < class 1000 < system-node-critical.
        await api.put("pods", pod("admitted", priority=5, priorityClassName="high"))
        await api.put("pods", pod("by-class", priorityClassName="high"))
        await api.put("pods", pod("system", priorityClassName="system-node-critical"))
        await api.put("pods", pod("default"))
        await _left_pending(rest_url, rm_id, ["admitted", "by-class", "system", "default"])
        assert [n for n, _ in api.bindings] == ["filler"]  # the foreign pod's 3Gi count
        order = []
        for _ in range(4):  # each finished pod frees the slot for the next in priority order
            done = api.get("pods", api.bindings[-1][0])
            assert done is not None
            await api.delete("pods", done)
            count = len(api.bindings)
            await _until(partial(_more_bindings, api, count), "the next pod")
            order.append(api.bindings[-1][0])
        assert order == ["system", "by-class", "default", "admitted"]
    finally:
        stop.set()
        await asyncio.wait_for(shim, 10)


async def test_the_shim_schedules_through_a_mutual_tls_core(
    api: FakeKubeAPI, tmp_path_factory: pytest.TempPathFactory
) -> None:
    """`pykorn k8s` with --core-ca/--core-cert/--core-key: the core knows it by its certificate."""
    from rmclient.tls import ClientTLS
    from tests.integration.core_helpers import running
    from tests.tls_certs import make_pki

    pki = make_pki(tmp_path_factory.mktemp("pki"), client_names=("k8s-mtls",))
    tls = ClientTLS(pki.ca, pki.clients["k8s-mtls"].cert, pki.clients["k8s-mtls"].key)
    args = [
        "--tls-cert",
        str(pki.server.cert),
        "--tls-key",
        str(pki.server.key),
        "--tls-client-ca",
        str(pki.ca),
    ]
    core_run = running(CoreProcess(extra_args=args, client_tls=tls))
    core = next(core_run)
    await api.put("nodes", node("n1", memory="4Gi"))
    await api.put("pods", pod("secured"))
    stop = asyncio.Event()
    shim = asyncio.create_task(
        run_shim(core.address, kubeconfig=api.kubeconfig(SCHEDULER_SA), rm_id="k8s-mtls", stop=stop, tls=tls)
    )
    try:
        await _until(lambda: ("secured", "n1") in api.bindings, "the pod to be bound over mutual TLS")
    finally:
        stop.set()
        await asyncio.wait_for(shim, 10)
        next(core_run, None)  # stops the core and checks its exit and log


async def test_a_burst_of_thousands_of_pods_is_bound_every_one_exactly_once(
    api: FakeKubeAPI, core_address: str, rm_id: str
) -> None:
    """A scheduler starting on a backlog of ten jobs: the core allocates far faster than the API binds,
    so most allocations arrive while earlier pods are being bound. Every pod ends up bound, none twice."""
    nodes, backlog, later = 500, 8_000, 2_000  # issue 20: 10,000 pods on 500 nodes

    def job_pod(name: str, job: int) -> dict[str, Any]:
        member = pod(name, memory="100Mi")
        member["metadata"]["labels"] = {"applicationId": f"job-{job}"}
        return member

    for i in range(nodes):
        await api.put("nodes", node(f"n{i:03d}", memory="64Gi", cpu="64"))
    for i in range(backlog):
        await api.put("pods", job_pod(f"backlog-{i:04d}", i % 10))
    stop = asyncio.Event()
    shim = asyncio.create_task(
        run_shim(core_address, kubeconfig=api.kubeconfig(SCHEDULER_SA), rm_id=rm_id, stop=stop)
    )
    try:
        for i in range(later):  # and more arrive through the watch meanwhile
            await api.put("pods", job_pod(f"later-{i:04d}", i % 10))
        total = backlog + later
        await _until(lambda: len(api.bindings) >= total, f"all {total} pods to be bound", timeout=300)
        names = [name for name, _ in api.bindings]
        assert len(names) == len(set(names)) == total  # each once
        assert all(p["spec"]["nodeName"] for p in api.objects["pods"].values())
    finally:
        stop.set()
        await asyncio.wait_for(shim, 10)


async def test_node_affinity_host_ports_and_pod_anti_affinity_are_honoured_and_the_rest_reported(
    api: FakeKubeAPI, core_address: str, rest_url: str, rm_id: str
) -> None:
    for name, zone in (("n1", "a"), ("n2", "b"), ("n3", "b")):
        labelled = node(name, memory="8Gi")
        labelled["metadata"]["labels"] = {"zone": zone, "kubernetes.io/hostname": name}
        await api.put("nodes", labelled)
    in_b = {"nodeAffinity": {"requiredDuringSchedulingIgnoredDuringExecution": {"nodeSelectorTerms": [
        {"matchExpressions": [{"key": "zone", "operator": "In", "values": ["b"]}]}]}}}  # fmt: skip
    exporter = {"name": "c", "resources": {"requests": {"cpu": "100m", "memory": "1Gi"}},
                "ports": [{"containerPort": 9100, "hostPort": 9100}]}  # fmt: skip
    for i in range(3):  # zone b has two nodes, and each node one port 9100: the third waits
        await api.put("pods", pod(f"exporter-{i}", affinity=in_b, containers=[exporter]))
    term = {"labelSelector": {"matchLabels": {"app": "web"}}, "topologyKey": "kubernetes.io/hostname"}
    one_per_node = {"podAntiAffinity": {
        "requiredDuringSchedulingIgnoredDuringExecution": [term],
        "preferredDuringSchedulingIgnoredDuringExecution": [{"weight": 10, "podAffinityTerm": term}],
    }}  # fmt: skip
    for i in range(4):  # three nodes: the fourth replica waits
        web = pod(f"web-{i}", affinity=one_per_node)
        web["metadata"]["labels"] = {"app": "web"}
        await api.put("pods", web)
    await api.put("pods", pod("kata", runtimeClassName="kata"))
    async with shim_running(api, core_address, rm_id):
        await _until(lambda: len(api.bindings) == 6, "two exporters, three web pods and kata bound")
        await _left_pending(rest_url, rm_id, ["exporter-2", "web-3"])  # looked at, and left pending
        bound = dict(api.bindings)
        assert "exporter-2" not in bound and "web-3" not in bound
        assert sorted(n for p, n in bound.items() if p.startswith("exporter")) == ["n2", "n3"]
        assert sorted(n for p, n in bound.items() if p.startswith("web")) == ["n1", "n2", "n3"]
        await _until(
            lambda: any(
                e["reason"] == "PlacementConstraintsIgnored" and e["involvedObject"]["name"] == "kata"
                and "spec.runtimeClassName kata" in e["message"] for e in api.events
            ),
            "the event naming what is not honoured",
        )  # fmt: skip
        assert not any(e["involvedObject"]["name"].startswith("web") for e in api.events
                       if e["reason"] == "PlacementConstraintsIgnored")  # fmt: skip


async def test_a_namespace_selector_matches_the_labels_of_the_pods_namespaces(
    api: FakeKubeAPI, core_address: str, rest_url: str, rm_id: str
) -> None:
    for name in ("n1", "n2", "n3"):
        labelled = node(name, memory="8Gi")
        labelled["metadata"]["labels"] = {"kubernetes.io/hostname": name}
        await api.put("nodes", labelled)
    for name, team in (("cart", "payments"), ("blog", "content")):
        await api.put("namespaces", {"metadata": {"name": name, "labels": {"team": team}}})
    # A web pod of another scheduler in each namespace, on n1 (cart) and n2 (blog).
    for name, namespace, where in (("cart-web", "cart", "n1"), ("blog-web", "blog", "n2")):
        web = pod(name, namespace=namespace, scheduler="default-scheduler", node_name=where)
        web["metadata"]["labels"] = {"app": "web"}
        await api.put("pods", web)
    away = {"podAntiAffinity": {"requiredDuringSchedulingIgnoredDuringExecution": [{
        "labelSelector": {"matchLabels": {"app": "web"}}, "topologyKey": "kubernetes.io/hostname",
        "namespaceSelector": {"matchLabels": {"team": "payments"}}}]}}  # fmt: skip
    for i in range(6):
        await api.put("pods", pod(f"audit-{i}", namespace="ops", affinity=away))
    async with shim_running(api, core_address, rm_id):
        # Kept off n1 only: blog's web pod is in a namespace of another team.
        await _until(lambda: len(api.bindings) == 6, "every audit pod bound")
        assert {n for _, n in api.bindings} == {"n2", "n3"}


async def test_an_unschedulable_pod_says_why_in_its_condition_until_it_is_bound(
    api: FakeKubeAPI, core_address: str, rm_id: str
) -> None:
    for name in ("small-1", "small-2"):  # 4Gi in all, 2Gi a node: the cluster has room, no node has
        await api.put("nodes", node(name, memory="2Gi"))
    await api.put("pods", pod("big", memory="3Gi"))
    async with shim_running(api, core_address, rm_id):

        def unschedulable() -> Obj | None:
            found = condition(api.get("pods", "big"), "PodScheduled")
            return found if found is not None and found["status"] == "False" else None

        await _until(unschedulable, "PodScheduled=False on the pod")
        found = unschedulable()
        assert found is not None and found["reason"] == "Unschedulable"
        assert found["message"] == "no node has room for it (0/2 nodes are available: 2 insufficient memory)"
        patches = len(api.status_patches)
        await api.put("nodes", node("large", memory="8Gi"))
        await _until(lambda: ("big", "large") in api.bindings, "the pod bound once a node has room")
        scheduled = condition(api.get("pods", "big"), "PodScheduled")
        assert scheduled is not None and scheduled["status"] == "True"  # set by the binding, as the API does
        assert len(api.status_patches) == patches  # nothing patched after the binding


async def test_a_pod_goes_where_its_volume_is_and_waits_while_its_claim_is_unbound(
    api: FakeKubeAPI, core_address: str, rm_id: str
) -> None:
    for name, zone in (("n1", "a"), ("n2", "b")):
        labelled = node(name, memory="8Gi")
        labelled["metadata"]["labels"] = {"zone": zone}
        await api.put("nodes", labelled)
    in_b = {"required": {"nodeSelectorTerms": [{"matchExpressions": [
        {"key": "zone", "operator": "In", "values": ["b"]}]}]}}  # fmt: skip
    await api.put(
        "persistentvolumes", {"metadata": {"name": "pv-b", "uid": "pv-b"}, "spec": {"nodeAffinity": in_b}}
    )
    await api.put(
        "storageclasses",
        {"metadata": {"name": "local", "uid": "sc"}, "volumeBindingMode": "WaitForFirstConsumer"},
    )
    await api.put("persistentvolumeclaims", {"metadata": {"name": "bound", "namespace": "shop", "uid": "c1",
                                                          "annotations": BIND_COMPLETED},
                                             "spec": {"volumeName": "pv-b"}})  # fmt: skip
    await api.put("persistentvolumeclaims", {"metadata": {"name": "later", "namespace": "shop", "uid": "c2"},
                                             "spec": {"storageClassName": "local"}})  # fmt: skip
    for name, claim in (("db-0", "bound"), ("db-1", "later")):
        await api.put(
            "pods", pod(name, volumes=[{"name": "data", "persistentVolumeClaim": {"claimName": claim}}])
        )
    async with shim_running(api, core_address, rm_id):
        await _until(lambda: ("db-0", "n2") in api.bindings, "the pod bound on its volume's node")

        waiting = partial(_unschedulable, api, "db-1")

        await _until(waiting, "the pod with the unbound claim marked unschedulable")
        found = waiting()
        assert found is not None and "didn't find available persistent volumes to bind" in found["message"]
        assert any(
            e["reason"] == "VolumesNotReady" and e["involvedObject"]["name"] == "db-1" for e in api.events
        )
        assert all(p != "db-1" for p, _ in api.bindings)
        # An operator binds the claim to the volume: the pod is asked for, and goes to zone b.
        meta = {"name": "later", "namespace": "shop", "uid": "c2", "annotations": BIND_COMPLETED}
        bound = {"metadata": meta,
                 "spec": {"storageClassName": "local", "volumeName": "pv-b"}}  # fmt: skip
        await api.put("persistentvolumeclaims", bound)
        await _until(lambda: ("db-1", "n2") in api.bindings, "the pod bound once its claim is")


async def test_a_nodes_csi_attach_limit_keeps_the_next_volume_pod_off_it(
    api: FakeKubeAPI, core_address: str, rm_id: str
) -> None:
    """NodeVolumeLimits: each node's CSINode lets it attach one EBS volume; a foreign pod holds n2's.
    Two pods with a volume each: one goes to n1, the other waits (not to n2), with Kubernetes' reason;
    when the foreign pod goes, it takes n2."""
    driver = "ebs.csi.aws.com"
    for name in ("n1", "n2"):
        await api.put("nodes", node(name, memory="8Gi"))
        drivers = [{"name": driver, "allocatable": {"count": 1}}]
        await api.put("csinodes", {"metadata": {"name": name}, "spec": {"drivers": drivers}})
    for i, claim in enumerate(("theirs", "data-0", "data-1")):
        csi = {"driver": driver, "volumeHandle": f"vol-{i}"}
        await api.put("persistentvolumes", {"metadata": {"name": f"pv-{i}"}, "spec": {"csi": csi}})
        meta = {
            "name": claim,
            "namespace": "shop",
            "uid": claim,
            "annotations": BIND_COMPLETED,
        }
        await api.put("persistentvolumeclaims", {"metadata": meta, "spec": {"volumeName": f"pv-{i}"}})
    volume = [{"name": "data", "persistentVolumeClaim": {"claimName": "theirs"}}]
    other = pod("other", volumes=volume)
    other["spec"].update(schedulerName="default-scheduler", nodeName="n2")
    await api.put("pods", other)
    for i in range(2):
        await api.put("pods", pod(f"db-{i}", volumes=[
            {"name": "data", "persistentVolumeClaim": {"claimName": f"data-{i}"}}]))  # fmt: skip
    async with shim_running(api, core_address, rm_id):
        await _until(lambda: len(api.bindings) == 1, "one pod bound")
        assert api.bindings[0][1] == "n1"
        waiting_pod = "db-1" if api.bindings[0][0] == "db-0" else "db-0"

        waiting = partial(_unschedulable, api, waiting_pod)

        await _until(waiting, "the second pod marked unschedulable")
        found = waiting()
        assert found is not None and "2 exceed max volume count" in found["message"]
        await api.delete("pods", other)
        await _until(lambda: (waiting_pod, "n2") in api.bindings, "the pod bound once n2's volume is gone")


async def test_a_read_write_once_pod_claim_in_use_keeps_a_second_pod_pending_with_the_reason(
    api: FakeKubeAPI, core_address: str, rm_id: str
) -> None:
    for name in ("n1", "n2"):
        await api.put("nodes", node(name, memory="8Gi"))
    await api.put("persistentvolumes", {"metadata": {"name": "pv-0"}, "spec": {}})
    meta = {
        "name": "exclusive",
        "namespace": "shop",
        "uid": "exclusive",
        "annotations": BIND_COMPLETED,
    }
    spec = {"volumeName": "pv-0", "accessModes": ["ReadWriteOncePod"]}
    await api.put("persistentvolumeclaims", {"metadata": meta, "spec": spec})
    volume = [{"name": "data", "persistentVolumeClaim": {"claimName": "exclusive"}}]
    holder = pod("holder", volumes=volume)
    holder["spec"].update(nodeName="n1")  # running already: the shim recovers it
    await api.put("pods", holder)
    await api.put("pods", pod("second", volumes=volume))
    async with shim_running(api, core_address, rm_id):
        waiting = partial(_unschedulable, api, "second")

        await _until(waiting, "the second pod marked unschedulable")
        found = waiting()
        assert found is not None
        assert (
            "2 has pod using PersistentVolumeClaim with the same name and ReadWriteOncePod"
            in found["message"]
        )
        assert not api.bindings
        await api.delete("pods", holder)
        await _until(
            lambda: [p for p, _ in api.bindings] == ["second"], "the pod bound once the holder is gone"
        )


async def test_an_in_tree_disk_mounted_read_write_is_shared_by_no_two_pods_of_a_node(
    api: FakeKubeAPI, core_address: str, rm_id: str
) -> None:
    """VolumeRestrictions' disk conflicts: another scheduler's pod on n2 mounts the GCE disk read-write,
    so ours goes to n1; a third mounting it waits with Kubernetes' reason; a read-only mount of another
    disk shares freely."""
    for name in ("n1", "n2"):
        await api.put("nodes", node(name, memory="8Gi"))
    disk = [{"name": "data", "gcePersistentDisk": {"pdName": "orders"}}]
    other = pod("other", volumes=disk)
    other["spec"].update(schedulerName="default-scheduler", nodeName="n2")
    await api.put("pods", other)
    await api.put("pods", pod("db-0", volumes=disk))
    async with shim_running(api, core_address, rm_id):
        await _until(lambda: ("db-0", "n1") in api.bindings, "the pod bound where its disk is free")
        await api.put("pods", pod("db-1", volumes=disk))
        for i in range(2):
            reader = [{"name": "ref", "gcePersistentDisk": {"pdName": "reference", "readOnly": True}}]
            await api.put("pods", pod(f"reader-{i}", volumes=reader, nodeSelector={"zone": "a"}))

        waiting = partial(_unschedulable, api, "db-1")

        await _until(waiting, "the third pod marked unschedulable")
        found = waiting()
        assert found is not None and "2 had no available disk" in found["message"]
        await _until(lambda: {p for p, _ in api.bindings} >= {"reader-0", "reader-1"}, "the readers bound")
        assert "db-1" not in {p for p, _ in api.bindings}


async def test_a_gated_pod_waits_until_its_scheduling_gates_are_removed(
    api: FakeKubeAPI, core_address: str, rm_id: str
) -> None:
    await api.put("nodes", node("n1", memory="8Gi"))
    await api.put("pods", pod("gated", schedulingGates=[{"name": "example.com/quota"}]))
    async with shim_running(api, core_address, rm_id):
        await _until(
            lambda: any(e["reason"] == "SchedulingGated" for e in api.events), "the event naming the gate"
        )
        assert not api.bindings
        ungated = pod("gated")  # the gate's owner removes it: the pod is asked for and bound
        await api.put("pods", ungated)
        await _until(lambda: ("gated", "n1") in api.bindings, "the pod bound once ungated")


async def test_a_namespaces_quota_and_max_apps_annotations_limit_its_dynamic_queue(
    api: FakeKubeAPI, core_address: str, rest_url: str, rm_id: str
) -> None:
    await api.put("nodes", node("n1", memory="16Gi"))
    notes = {"yunikorn.apache.org/namespace.quota": '{"cpu": "4", "memory": "2Gi"}',
             "yunikorn.apache.org/namespace.guaranteed": '{"memory": "1Gi"}',
             "yunikorn.apache.org/namespace.maxApps": "7",
             "yunikorn.apache.org/namespace.max.cpu": "9"}  # fmt: skip
    await api.put("namespaces", {"metadata": {"name": "capped", "annotations": notes}})
    for i in range(3):  # no application ID: one application for the namespace, as YuniKorn
        await api.put("pods", pod(f"job-{i}", namespace="capped"))
    async with shim_running(api, core_address, rm_id):
        await _left_pending(rest_url, rm_id, waiting=["job-2"], running=["job-0", "job-1"])
        assert len(api.bindings) == 2
        async with aiohttp.ClientSession() as session:
            queue = await rest_until(
                session, f"{partition_url(rest_url, rm_id)}/queue/root.capped", lambda q: q, "the queue"
            )
        assert queue.get("maxResource", {}) == {"memory": 2 * 2**30, "vcore": 4000}
        assert queue.get("guaranteedResource", {}) == {"memory": 2**30}
        assert queue["maxRunningApps"] == 7
        # The deprecated namespace.max.cpu is not used beside namespace.quota, and the namespace says so.
        await _until(
            lambda: any(e["reason"] == "NamespaceAnnotationIgnored"
                        and e["involvedObject"]["kind"] == "Namespace" for e in api.events),
            "the warning on the namespace",
        )  # fmt: skip
