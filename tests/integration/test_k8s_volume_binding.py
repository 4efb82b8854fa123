"""Volumes bound as kube-scheduler binds them, end to end: the whole shim (`run_shim`) against the API
emulation with a cluster's volume controllers running (tests/integration/kube_volumes.py: the PV
controller, an external-provisioner stand-in, the ephemeral-volume controller) and a real core.

The shim chooses where a pod with unbound WaitForFirstConsumer claims may go (the nodes of fitting
volumes, or where its class provisions), and once the core picks a node writes the volume's claimRef
(static) or the claim's selected-node annotation (dynamic), waits until the controllers bind every
claim, and only then binds the pod."""

from __future__ import annotations

from collections.abc import AsyncIterator
from typing import Any

import aiohttp
import pytest

from rmclient.core_process import CoreProcess
from tests.integration.kube_api import FakeKubeAPI, Obj, condition
from tests.integration.kube_volumes import (
    SELECTED_NODE,
    EphemeralVolumeController,
    Provisioner,
    PVController,
)
from tests.integration.rest_helpers import partition_url, rest_until
from tests.integration.test_k8s_api import _until, shim_running
from tests.integration.test_k8s_shim import node, pod

DRIVER = "ebs.csi.aws.com"
ZONE = "topology.kubernetes.io/zone"
HOSTNAME = "kubernetes.io/hostname"
GP3: Obj = {"metadata": {"name": "gp3"}, "provisioner": DRIVER, "volumeBindingMode": "WaitForFirstConsumer",
            "reclaimPolicy": "Delete"}  # fmt: skip
LOCAL: Obj = {"metadata": {"name": "local"}, "provisioner": "kubernetes.io/no-provisioner",
              "volumeBindingMode": "WaitForFirstConsumer"}  # fmt: skip


class Controllers:
    def __init__(self, api: FakeKubeAPI) -> None:
        self.pv = PVController(api)
        self.provisioner = Provisioner(api, DRIVER)
        self.ephemeral = EphemeralVolumeController(api)
        self.all = (self.pv, self.provisioner, self.ephemeral)


@pytest.fixture
async def controllers(api: FakeKubeAPI) -> AsyncIterator[Controllers]:
    running = Controllers(api)
    for controller in running.all:
        controller.start()
    yield running
    for controller in running.all:
        await controller.stop()


def _zoned_node(name: str, zone: str) -> Obj:
    made = node(name, memory="8Gi")
    made["metadata"]["labels"] = {ZONE: zone, HOSTNAME: name}
    return made


def _claim(name: str, storage_class: str, size: str = "5Gi") -> Obj:
    return {
        "apiVersion": "v1", "kind": "PersistentVolumeClaim",
        "metadata": {"name": name, "namespace": "shop", "uid": f"uid-pvc-{name}"},
        "spec": {"accessModes": ["ReadWriteOnce"], "storageClassName": storage_class,
                 "resources": {"requests": {"storage": size}}},
        "status": {"phase": "Pending"},
    }  # fmt: skip


def _local_volume(name: str, size: str, on: str, modes: tuple[str, ...] = ("ReadWriteOnce",)) -> Obj:
    on_node = {"key": HOSTNAME, "operator": "In", "values": [on]}
    return {
        "apiVersion": "v1", "kind": "PersistentVolume", "metadata": {"name": name},
        "spec": {"capacity": {"storage": size}, "accessModes": list(modes), "storageClassName": "local",
                 "local": {"path": f"/mnt/{name}"},
                 "nodeAffinity": {"required": {"nodeSelectorTerms": [{"matchExpressions": [on_node]}]}}},
    }  # fmt: skip


def _with_claim(name: str, claim: str, **spec: Any) -> Obj:
    return pod(name, volumes=[{"name": "data", "persistentVolumeClaim": {"claimName": claim}}], **spec)


def _bound_to(api: FakeKubeAPI, pod_name: str) -> str:
    return next((n for p, n in api.bindings if p == pod_name), "")


def _claim_of(api: FakeKubeAPI, name: str) -> Obj:
    found = api.get("persistentvolumeclaims", name)
    assert found is not None, name
    return found


def _is_bound(api: FakeKubeAPI, claim: str) -> bool:
    return (_claim_of(api, claim).get("status") or {}).get("phase") == "Bound"


def _volume_zone(api: FakeKubeAPI, volume_name: str) -> str:
    volume = api.get("persistentvolumes", volume_name)
    assert volume is not None
    (term,) = volume["spec"]["nodeAffinity"]["required"]["nodeSelectorTerms"]
    (expression,) = term["matchExpressions"]
    assert expression["key"] == ZONE
    return str(expression["values"][0])


def _events(api: FakeKubeAPI, name: str, reason: str) -> list[Obj]:
    return [e for e in api.events if e["involvedObject"]["name"] == name and e["reason"] == reason]


def _waiting_reason(api: FakeKubeAPI, pod_name: str) -> str:
    found = condition(api.get("pods", pod_name), "PodScheduled")
    return str(found["message"]) if found is not None and found["status"] == "False" else ""


async def test_a_stateful_set_with_wait_for_first_consumer_claims_spreads_over_zones_with_its_volumes(
    api: FakeKubeAPI, core_address: str, rm_id: str, controllers: Controllers
) -> None:
    """Two replicas spread one per zone (maxSkew 1); each claim is provisioned for its pod's node, in
    that node's zone, and bound before its pod."""
    for name, zone in (("a1", "zone-a"), ("a2", "zone-a"), ("b1", "zone-b"), ("b2", "zone-b")):
        await api.put("nodes", _zoned_node(name, zone))
    await api.put("storageclasses", GP3)
    spread = [{"maxSkew": 1, "topologyKey": ZONE, "whenUnsatisfiable": "DoNotSchedule",
               "labelSelector": {"matchLabels": {"app": "db"}}}]  # fmt: skip
    for i in range(2):
        await api.put("persistentvolumeclaims", _claim(f"data-db-{i}", "gp3"))  # volumeClaimTemplates
        replica = _with_claim(f"db-{i}", f"data-db-{i}", topologySpreadConstraints=spread)
        replica["metadata"]["labels"] = {"app": "db"}
        await api.put("pods", replica)
    async with shim_running(api, core_address, rm_id):
        await _until(lambda: _bound_to(api, "db-0") and _bound_to(api, "db-1"), "both replicas bound")
    zones = {}
    for i in range(2):
        node_name = _bound_to(api, f"db-{i}")
        claim = _claim_of(api, f"data-db-{i}")
        # Bound before its pod: the claim is Bound and names the volume made for this node's zone.
        assert claim["metadata"]["annotations"][SELECTED_NODE] == node_name
        assert _is_bound(api, f"data-db-{i}")
        zones[f"db-{i}"] = _volume_zone(api, claim["spec"]["volumeName"])
        assert zones[f"db-{i}"] == ("zone-a" if node_name.startswith("a") else "zone-b")
    assert set(zones.values()) == {"zone-a", "zone-b"}
    assert len(controllers.provisioner.provisioned) == 2 and len(api.bindings) == 2


async def test_static_volumes_are_matched_smallest_fitting_first_and_never_given_twice(
    api: FakeKubeAPI, core_address: str, rm_id: str, controllers: Controllers
) -> None:
    """A class with no provisioner: the claim (5Gi, ReadWriteOnce) fits only `fit` (on n2; `small` is
    too small, `rwx` offers another access mode); the pod goes to n2 and the claim gets `fit`. A second
    pod wanting the same finds nothing left and waits with kube-scheduler's reason, until a volume is
    added for it."""
    for name in ("n1", "n2", "n3", "n4"):
        await api.put("nodes", _zoned_node(name, "zone-a"))
    await api.put("storageclasses", LOCAL)
    await api.put("persistentvolumes", _local_volume("small", "1Gi", "n1"))
    await api.put("persistentvolumes", _local_volume("fit", "10Gi", "n2"))
    await api.put("persistentvolumes", _local_volume("rwx", "10Gi", "n3", modes=("ReadWriteMany",)))
    for i in range(2):
        await api.put("persistentvolumeclaims", _claim(f"data-{i}", "local"))
    volumes = api.objects["persistentvolumes"].values()
    available = lambda: all(v.get("status", {}).get("phase") == "Available" for v in volumes)  # noqa: E731
    await _until(available, "the volumes Available")
    await api.put("pods", _with_claim("db-0", "data-0"))
    await api.put("pods", _with_claim("db-1", "data-1"))
    async with shim_running(api, core_address, rm_id):
        await _until(lambda: len(api.bindings) == 1, "one pod bound")
        ((first, where),) = api.bindings
        second = "db-1" if first == "db-0" else "db-0"
        assert where == "n2"
        first_claim = "data-0" if first == "db-0" else "data-1"
        assert _claim_of(api, first_claim)["spec"]["volumeName"] == "fit" and _is_bound(api, first_claim)
        fit = api.get("persistentvolumes", "fit")
        assert (
            fit is not None
            and fit["metadata"]["annotations"]["pv.kubernetes.io/bound-by-controller"] == "yes"
        )
        reason = "didn't find available persistent volumes to bind"
        await _until(lambda: reason in _waiting_reason(api, second), "the second pod waiting with the reason")
        assert [p for p, _ in api.bindings] == [first]
        await api.put("persistentvolumes", _local_volume("added", "20Gi", "n4"))
        await _until(
            lambda: _bound_to(api, second) == "n4", "the second pod bound on the added volume's node"
        )
    second_claim = "data-1" if first == "db-0" else "data-0"
    assert _claim_of(api, second_claim)["spec"]["volumeName"] == "added"
    claim_refs = [w for w in api.writes if w[:2] == ("update", "persistentvolumes")]
    assert sorted(name for _, _, name in claim_refs) == ["added", "fit"]  # one claimRef written each


async def test_a_provisioner_that_never_answers_times_the_binding_out_and_the_pod_is_tried_again(
    api: FakeKubeAPI, core_address: str, rm_id: str, controllers: Controllers
) -> None:
    """service.volumeBindTimeout 1s: the claim is annotated for the chosen node, nothing provisions it,
    so the allocation is given back with the reason and an event; the pod is asked again, kept to the
    node its claim was selected for (as kube-scheduler keeps it), and bound once the provisioner works."""
    controllers.provisioner.paused = True
    await api.put("nodes", _zoned_node("a1", "zone-a"))
    await api.put("nodes", _zoned_node("b1", "zone-b"))
    await api.put("storageclasses", GP3)
    await api.put("configmaps", {"metadata": {"name": "yunikorn-configs", "namespace": "yunikorn"},
                                 "data": {"service.volumeBindTimeout": "1s"}})  # fmt: skip
    await api.put("persistentvolumeclaims", _claim("data-0", "gp3"))
    await api.put("pods", _with_claim("db-0", "data-0"))
    async with shim_running(api, core_address, rm_id):
        await _until(lambda: _events(api, "db-0", "BindingFailed"), "the binding timed out", timeout=30)
        (failed, *_) = _events(api, "db-0", "BindingFailed")
        assert "timed out after 1s (service.volumeBindTimeout)" in failed["message"]
        assert "persistentvolumeclaim data-0" in failed["message"]
        selected = _claim_of(api, "data-0")["metadata"]["annotations"][SELECTED_NODE]
        assert not api.bindings
        await controllers.provisioner.resume()
        await _until(
            lambda: _bound_to(api, "db-0"), "the pod bound once the claim is provisioned", timeout=30
        )
        assert api.bindings == [("db-0", selected)] and _is_bound(api, "data-0")
    assert len(controllers.provisioner.provisioned) == 1


async def test_a_generic_ephemeral_volume_waits_for_its_claim_then_binds_like_any_other(
    api: FakeKubeAPI, core_address: str, rm_id: str, controllers: Controllers
) -> None:
    """The ephemeral-volume controller is paused: the pod waits for the claim <pod>-<volume>, saying
    so; once the controller makes it, it is provisioned for the pod's node and the pod bound (with a
    warning that its driver's storage capacity is not checked)."""
    controllers.ephemeral.paused = True
    await api.put("nodes", _zoned_node("b1", "zone-b"))
    await api.put("storageclasses", GP3)
    # Its driver tracks storage capacity, which pykorn does not check: said on the pod.
    await api.put("csidrivers", {"metadata": {"name": DRIVER}, "spec": {"storageCapacity": True}})
    template = {"spec": {"accessModes": ["ReadWriteOnce"], "storageClassName": "gp3",
                         "resources": {"requests": {"storage": "1Gi"}}}}  # fmt: skip
    await api.put(
        "pods", pod("worker", volumes=[{"name": "scratch", "ephemeral": {"volumeClaimTemplate": template}}])
    )
    async with shim_running(api, core_address, rm_id):
        missing = 'persistentvolumeclaim "worker-scratch" not found'
        await _until(lambda: missing in _waiting_reason(api, "worker"), "the pod waiting for its claim")
        assert not api.bindings
        await controllers.ephemeral.resume()
        await _until(lambda: _bound_to(api, "worker") == "b1", "the pod bound")
    claim = _claim_of(api, "worker-scratch")
    assert claim["metadata"]["ownerReferences"][0]["uid"] == "uid-worker"
    (ignored,) = _events(api, "worker", "PlacementConstraintsIgnored")
    assert f"storage capacity of CSI driver {DRIVER} (CSIStorageCapacity)" in ignored["message"]
    assert _is_bound(api, "worker-scratch") and _volume_zone(api, claim["spec"]["volumeName"]) == "zone-b"


@pytest.mark.parametrize("paused", ["pv", "provisioner"])
async def test_a_shim_restart_mid_binding_loses_nothing_and_binds_nothing_twice(
    api: FakeKubeAPI, core_address: str, rm_id: str, controllers: Controllers, paused: str
) -> None:
    """The controller that completes the binding is paused, so the shim is stopped with the binding
    written and not done: a static volume's claimRef (pv), or a claim's selected-node (provisioner).
    The next shim keeps the pod to what was written, writes nothing again, and binds the pod once."""
    controller = controllers.pv if paused == "pv" else controllers.provisioner
    controller.paused = True
    for name in ("n1", "n2"):
        await api.put("nodes", _zoned_node(name, "zone-a"))
    if paused == "pv":
        await api.put("storageclasses", LOCAL)
        for name, on in (("pv-1", "n1"), ("pv-2", "n2")):
            local = _local_volume(name, "10Gi", on)
            local["status"] = {"phase": "Available"}  # as the PV controller had made it before its pause
            await api.put("persistentvolumes", local)
        await api.put("persistentvolumeclaims", _claim("data-0", "local"))
    else:
        await api.put("storageclasses", GP3)
        await api.put("persistentvolumeclaims", _claim("data-0", "gp3"))
    await api.put("pods", _with_claim("db-0", "data-0"))

    def written() -> list[tuple[str, str, str]]:
        return [w for w in api.writes if w[0] == "update"]

    async with shim_running(api, core_address, rm_id):
        await _until(lambda: written(), "the binding written")
    ((_, kind, name),) = written()
    if paused == "pv":
        assert kind == "persistentvolumes"
        chosen = {"pv-1": "n1", "pv-2": "n2"}[name]
    else:
        assert (kind, name) == ("persistentvolumeclaims", "data-0")
        chosen = _claim_of(api, "data-0")["metadata"]["annotations"][SELECTED_NODE]
    assert not api.bindings and not _is_bound(api, "data-0")
    async with shim_running(api, core_address, rm_id):
        await controller.resume()
        await _until(lambda: _bound_to(api, "db-0"), "the pod bound by the next shim")
    assert api.bindings == [("db-0", chosen)]
    assert len(written()) == 1  # nothing written again
    assert _is_bound(api, "data-0")


async def test_a_core_restart_mid_binding_stops_the_binding_and_the_new_core_places_the_pod_there_again(
    api: FakeKubeAPI, rm_id: str, controllers: Controllers
) -> None:
    """The provisioner is paused: the claim is annotated for a node and the binding waits (up to the
    default 10 minutes). The core goes away: the binding stops at once, the shim re-syncs with the new
    core, which places the pod on the node its claim was selected for; once provisioned it is bound."""
    controllers.provisioner.paused = True
    for name, zone in (("a1", "zone-a"), ("b1", "zone-b")):
        await api.put("nodes", _zoned_node(name, zone))
    await api.put("storageclasses", GP3)
    await api.put("persistentvolumeclaims", _claim("data-0", "gp3"))
    await api.put("pods", _with_claim("db-0", "data-0"))
    first = CoreProcess()
    await first.start()
    second = CoreProcess(listen=first.address)
    try:
        async with shim_running(api, first.address, rm_id):
            annotations = lambda: _claim_of(api, "data-0")["metadata"].get("annotations") or {}  # noqa: E731
            await _until(lambda: SELECTED_NODE in annotations(), "the claim annotated for a node")
            selected = annotations()[SELECTED_NODE]
            await first.stop()
            await second.start()
            # The new core holds the pod's ask again (the shim re-synced), kept to the selected node.
            async with aiohttp.ClientSession() as session:
                await rest_until(
                    session, f"{partition_url(second.rest_url, rm_id)}/applications/active",
                    lambda apps: any(a.get("allocations") for a in apps), "the pod placed by the new core",
                    timeout=60,
                )  # fmt: skip
            await controllers.provisioner.resume()
            await _until(lambda: _bound_to(api, "db-0"), "the pod bound after the provisioner resumes")
        assert api.bindings == [("db-0", selected)]
        assert [w for w in api.writes if w[0] == "update"] == [("update", "persistentvolumeclaims", "data-0")]
    finally:
        await second.stop()
        await first.stop()
