"""The API emulation's volume controllers (tests/integration/kube_volumes.py) behave as a cluster's do for a
scheduler that binds volumes: what the scheduler writes over HTTP (a volume's claimRef, a claim's
selected-node annotation) ends in a bound claim, and a paused or failing controller holds it back."""

from __future__ import annotations

import asyncio
from collections.abc import AsyncIterator, Callable
from typing import Any

import aiohttp
import pytest

from tests.integration.kube_api import FakeKubeAPI
from tests.integration.kube_volumes import SELECTED_NODE, Provisioner, PVController

DRIVER = "ebs.csi.aws.com"
Obj = dict[str, Any]


@pytest.fixture
async def cluster() -> AsyncIterator[tuple[FakeKubeAPI, PVController, Provisioner]]:
    api = FakeKubeAPI()
    await api.start()
    controller, provisioner = PVController(api), Provisioner(api, DRIVER)
    controller.start()
    provisioner.start()
    yield api, controller, provisioner
    await provisioner.stop()
    await controller.stop()
    await api.stop()


async def _until(api: FakeKubeAPI, check: Callable[[], bool]) -> None:
    """Until `check` holds: looked at after every change of the emulation (for up to 10 s)."""
    async with asyncio.timeout(10), api.changed:
        while not check():
            await api.changed.wait()


def _claim(name: str, storage_class: str, volume: str = "") -> Obj:
    spec: Obj = {"accessModes": ["ReadWriteOnce"], "storageClassName": storage_class,
                 "resources": {"requests": {"storage": "5Gi"}}}  # fmt: skip
    if volume:
        spec["volumeName"] = volume
    return {"apiVersion": "v1", "kind": "PersistentVolumeClaim",
            "metadata": {"name": name, "namespace": "apps", "uid": f"uid-{name}"}, "spec": spec}  # fmt: skip


def _volume(name: str, zone: str) -> Obj:
    in_zone = {"key": "topology.kubernetes.io/zone", "operator": "In", "values": [zone]}
    return {
        "apiVersion": "v1", "kind": "PersistentVolume", "metadata": {"name": name},
        "spec": {"capacity": {"storage": "10Gi"}, "accessModes": ["ReadWriteOnce"],
                 "storageClassName": "local",
                 "nodeAffinity": {"required": {"nodeSelectorTerms": [{"matchExpressions": [in_zone]}]}}},
    }  # fmt: skip


def _phase(api: FakeKubeAPI, kind: str, name: str) -> str:
    return str(((api.get(kind, name) or {}).get("status") or {}).get("phase", ""))


async def _write(api: FakeKubeAPI, path: str, obj: Obj) -> None:
    """A PUT as a scheduler's client sends it: the object as read, changed, with its resourceVersion."""
    async with (
        aiohttp.ClientSession() as session,
        session.put(f"http://127.0.0.1:{api.port}{path}", json=obj) as r,
    ):
        assert r.status == 200, await r.text()


async def test_a_claim_ref_written_on_an_available_volume_binds_it_to_its_claim(
    cluster: tuple[FakeKubeAPI, PVController, Provisioner],
) -> None:
    api, _, _ = cluster
    await api.put("persistentvolumes", _volume("pv-a", "zone-a"))
    await api.put("persistentvolumeclaims", _claim("data-0", "local"))
    await _until(api, lambda: _phase(api, "persistentvolumes", "pv-a") == "Available")
    volume = api.get("persistentvolumes", "pv-a")
    assert volume is not None
    ref = {"kind": "PersistentVolumeClaim", "namespace": "apps", "name": "data-0", "uid": "uid-data-0"}
    await _write(
        api, "/api/v1/persistentvolumes/pv-a", {**volume, "spec": {**volume["spec"], "claimRef": ref}}
    )
    await _until(api, lambda: _phase(api, "persistentvolumeclaims", "data-0") == "Bound")
    claim = api.get("persistentvolumeclaims", "data-0")
    assert claim is not None and claim["spec"]["volumeName"] == "pv-a"
    assert claim["metadata"]["annotations"]["pv.kubernetes.io/bind-completed"] == "yes"
    assert _phase(api, "persistentvolumes", "pv-a") == "Bound"


async def test_a_claim_pre_bound_by_volume_name_gets_its_volume(
    cluster: tuple[FakeKubeAPI, PVController, Provisioner],
) -> None:
    api, _, _ = cluster
    await api.put("persistentvolumes", _volume("pv-b", "zone-b"))
    await api.put("persistentvolumeclaims", _claim("data-1", "local", volume="pv-b"))
    await _until(api, lambda: _phase(api, "persistentvolumeclaims", "data-1") == "Bound")
    volume = api.get("persistentvolumes", "pv-b")
    assert volume is not None and volume["spec"]["claimRef"]["name"] == "data-1"
    assert _phase(api, "persistentvolumes", "pv-b") == "Bound"


async def test_a_selected_node_makes_the_provisioner_create_a_volume_in_that_nodes_zone(
    cluster: tuple[FakeKubeAPI, PVController, Provisioner],
) -> None:
    api, _, provisioner = cluster
    await api.put(
        "nodes", {"metadata": {"name": "node-b", "labels": {"topology.kubernetes.io/zone": "zone-b"}}}
    )
    await api.put("storageclasses", {"metadata": {"name": "gp3"}, "provisioner": DRIVER,
                                     "volumeBindingMode": "WaitForFirstConsumer"})  # fmt: skip
    await api.put("persistentvolumeclaims", _claim("data-2", "gp3"))
    claim = api.get("persistentvolumeclaims", "data-2")
    assert claim is not None
    annotated = {**claim, "metadata": {**claim["metadata"], "annotations": {SELECTED_NODE: "node-b"}}}
    await _write(api, "/api/v1/namespaces/apps/persistentvolumeclaims/data-2", annotated)
    await _until(api, lambda: _phase(api, "persistentvolumeclaims", "data-2") == "Bound")
    bound = api.get("persistentvolumeclaims", "data-2")
    assert bound is not None and bound["spec"]["volumeName"] == "pvc-uid-data-2" == provisioner.provisioned[0]
    volume = api.get("persistentvolumes", "pvc-uid-data-2")
    assert volume is not None
    assert volume["spec"]["capacity"] == {"storage": "5Gi"} and volume["spec"]["csi"]["driver"] == DRIVER
    term = volume["spec"]["nodeAffinity"]["required"]["nodeSelectorTerms"][0]["matchExpressions"][0]
    assert term == {"key": "topology.kubernetes.io/zone", "operator": "In", "values": ["zone-b"]}


async def test_a_paused_provisioner_makes_nothing_until_resumed_and_a_failing_one_says_why(
    cluster: tuple[FakeKubeAPI, PVController, Provisioner],
) -> None:
    api, controller, provisioner = cluster
    await api.put("storageclasses", {"metadata": {"name": "gp3"}, "provisioner": DRIVER,
                                     "volumeBindingMode": "WaitForFirstConsumer"})  # fmt: skip
    provisioner.paused = True
    claim = _claim("data-3", "gp3")
    claim["metadata"]["annotations"] = {SELECTED_NODE: "node-a"}
    await api.put("persistentvolumeclaims", claim)
    # The PV controller marks a volume made after the claim: by then the provisioner had its turn too.
    await api.put("persistentvolumes", _volume("pv-marker", "zone-a"))
    await _until(api, lambda: _phase(api, "persistentvolumes", "pv-marker") == "Available")
    assert provisioner.provisioned == [] and _phase(api, "persistentvolumeclaims", "data-3") == ""
    provisioner.failing = "the cloud refused the volume: quota exceeded"
    await provisioner.resume()
    await _until(api, lambda: any(e["reason"] == "ProvisioningFailed" for e in api.events))
    event = next(e for e in api.events if e["reason"] == "ProvisioningFailed")
    assert event["involvedObject"]["name"] == "data-3" and "quota exceeded" in event["message"]
    assert provisioner.provisioned == []
    provisioner.failing = ""
    await provisioner.resume()
    await _until(api, lambda: _phase(api, "persistentvolumeclaims", "data-3") == "Bound")
    assert not controller.paused


async def test_csinodes_are_listed_as_the_api_server_serves_them(
    cluster: tuple[FakeKubeAPI, PVController, Provisioner],
) -> None:
    api, _, _ = cluster
    driver = {"name": DRIVER, "nodeID": "i-0a", "allocatable": {"count": 25}}
    csinode = {"apiVersion": "storage.k8s.io/v1", "kind": "CSINode", "metadata": {"name": "node-a"},
               "spec": {"drivers": [driver]}}  # fmt: skip
    await api.put("csinodes", csinode)
    url = f"http://127.0.0.1:{api.port}/apis/storage.k8s.io/v1/csinodes"
    async with aiohttp.ClientSession() as session, session.get(url) as response:
        body = await response.json()
    assert body["kind"] == "CSINodeList"
    assert [item["spec"]["drivers"][0]["allocatable"]["count"] for item in body["items"]] == [25]
