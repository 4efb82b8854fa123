"""Binding a pod's WaitForFirstConsumer claims on the chosen node (shim_k8s.volumes.binding), against
an in-memory API: what is written, what is chosen after a conflict, and when the binding gives up.
The whole flow against the API emulation and its controllers: test_k8s_volume_binding.py (integration)."""

from __future__ import annotations

import asyncio
import copy
from typing import Any

import pytest

from shim_k8s.api.kube import Conflict
from shim_k8s.volumes.binding import NothingToBindHere, PodGone, VolumeBinder, VolumeBindError
from shim_k8s.volumes.cache import Volumes
from shim_k8s.volumes.matching import BIND_COMPLETED, SELECTED_NODE

Obj = dict[str, Any]
POD: Obj = {
    "metadata": {"name": "db-0", "namespace": "shop", "uid": "uid-db-0"},
    "spec": {"volumes": [{"name": "data", "persistentVolumeClaim": {"claimName": "data"}}]},
}


def _node(name: str, zone: str = "a") -> Obj:
    return {"metadata": {"name": name, "labels": {"kubernetes.io/hostname": name, "zone": zone}}}


def _volume(name: str, size: str, on: str) -> Obj:
    term = {"matchExpressions": [{"key": "kubernetes.io/hostname", "operator": "In", "values": [on]}]}
    return {
        "metadata": {"name": name, "resourceVersion": "1"},
        "spec": {"capacity": {"storage": size}, "accessModes": ["ReadWriteOnce"], "storageClassName": "local",
                 "nodeAffinity": {"required": {"nodeSelectorTerms": [term]}}},
        "status": {"phase": "Available"},
    }  # fmt: skip


def _claim(storage_class: str = "local") -> Obj:
    return {
        "metadata": {"name": "data", "namespace": "shop", "uid": "uid-data", "resourceVersion": "1"},
        "spec": {"storageClassName": storage_class, "accessModes": ["ReadWriteOnce"],
                 "resources": {"requests": {"storage": "5Gi"}}},
    }  # fmt: skip


class MemoryAPI:
    """replace_object and read_object over a dict; a conflict can be queued for a name, answered with
    the object `read_object` then returns."""

    def __init__(self) -> None:
        self.written: list[tuple[str, Obj]] = []
        self.conflicts: dict[str, Obj | None] = {}  # name -> what a read shows after the conflict

    async def replace_object(self, kind: str, obj: Obj) -> Obj:
        name = obj["metadata"]["name"]
        if name in self.conflicts:
            raise Conflict("the object has been modified")
        stored = copy.deepcopy(obj)
        stored["metadata"]["resourceVersion"] = str(int(obj["metadata"].get("resourceVersion") or 0) + 1)
        self.written.append((kind, stored))
        return stored

    async def read_object(self, kind: str, namespace: str, name: str) -> Obj | None:
        return self.conflicts.pop(name)


def _volumes(*volumes: Obj, storage_class: Obj | None = None) -> Volumes:
    v = Volumes()
    local = {"metadata": {"name": "local"}, "provisioner": "kubernetes.io/no-provisioner",
             "volumeBindingMode": "WaitForFirstConsumer"}  # fmt: skip
    v.update("storageclasses", "ADDED", storage_class or local)
    for volume in volumes:
        v.update("persistentvolumes", "ADDED", volume)
    v.update(
        "persistentvolumeclaims",
        "ADDED",
        _claim(storage_class["metadata"]["name"] if storage_class else "local"),
    )
    return v


def _bound(v: Volumes, volume: str) -> None:
    """The PV controller's work, as the informers would bring it: the claim bound to the volume."""
    claim = copy.deepcopy(v.claims[("shop", "data")])
    claim["spec"]["volumeName"] = volume
    claim["metadata"]["annotations"] = {**(claim["metadata"].get("annotations") or {}), BIND_COMPLETED: "yes"}
    v.update("persistentvolumeclaims", "MODIFIED", claim)


async def _bind_then(v: Volumes, binder: VolumeBinder, node: Obj, then: Any, timeout: float = 30) -> None:
    """Bind the pod's volumes on `node`; once the first write is made, `then()` (the controllers' part)."""
    task = asyncio.create_task(binder.bind(POD, node, timeout, lambda: True))
    api = binder.kube
    assert isinstance(api, MemoryAPI)
    while not api.written and not task.done():  # noqa: ASYNC110 - the task's first step, in this loop
        await asyncio.sleep(0)
    then()
    await task


async def test_the_smallest_fitting_volume_on_the_node_gets_the_claim_and_is_reserved_meanwhile() -> None:
    v = _volumes(_volume("big", "100Gi", "n1"), _volume("fit", "10Gi", "n1"), _volume("other", "5Gi", "n2"))
    api = MemoryAPI()
    binder = VolumeBinder(v, api)  # type: ignore[arg-type]
    reserved: list[dict[str, str]] = []

    def controllers() -> None:
        reserved.append(dict(v.reserved))
        _bound(v, "fit")

    await _bind_then(v, binder, _node("n1"), controllers)
    ((kind, written),) = api.written
    assert kind == "persistentvolumes" and written["metadata"]["name"] == "fit"
    assert written["spec"]["claimRef"]["uid"] == "uid-data"
    assert written["metadata"]["annotations"]["pv.kubernetes.io/bound-by-controller"] == "yes"
    assert reserved == [{"fit": "shop/data"}] and v.reserved == {}  # held while under way, then let go


async def test_a_volume_taken_meanwhile_is_replaced_by_the_next() -> None:
    v = _volumes(_volume("fit", "10Gi", "n1"), _volume("next", "20Gi", "n1"))
    api = MemoryAPI()
    taken = copy.deepcopy(_volume("fit", "10Gi", "n1"))
    taken["spec"]["claimRef"] = {"namespace": "shop", "name": "someone-else", "uid": "x"}
    api.conflicts["fit"] = taken
    binder = VolumeBinder(v, api)  # type: ignore[arg-type]
    await _bind_then(v, binder, _node("n1"), lambda: _bound(v, "next"))
    assert [w["metadata"]["name"] for _, w in api.written] == ["next"]


async def test_a_provisioning_class_annotates_the_claim_and_a_provisioner_giving_the_node_up_fails_it() -> (
    None
):
    zone_a = [{"matchLabelExpressions": [{"key": "zone", "values": ["a"]}]}]
    gp3 = {"metadata": {"name": "gp3"}, "provisioner": "ebs.csi.aws.com",
           "volumeBindingMode": "WaitForFirstConsumer", "allowedTopologies": zone_a}  # fmt: skip
    v = _volumes(storage_class=gp3)
    api = MemoryAPI()
    binder = VolumeBinder(v, api)  # type: ignore[arg-type]
    with pytest.raises(
        NothingToBindHere, match="didn't find available persistent volumes to bind on node n9"
    ):
        await binder.bind(POD, _node("n9", zone="b"), 30, lambda: True)  # outside allowedTopologies
    task = asyncio.create_task(binder.bind(POD, _node("n1"), 30, lambda: True))
    while not api.written and not task.done():  # noqa: ASYNC110 - the task's first step, in this loop
        await asyncio.sleep(0)
    ((kind, annotated),) = api.written
    assert kind == "persistentvolumeclaims" and annotated["metadata"]["annotations"][SELECTED_NODE] == "n1"
    # The informers show our write, then the provisioner removing it again (at once: the binding sees only
    # the last, and still tells it from the version it wrote against).
    v.update(
        "persistentvolumeclaims",
        "MODIFIED",
        {**annotated, "metadata": {**annotated["metadata"], "resourceVersion": "2"}},
    )
    v.update(
        "persistentvolumeclaims",
        "MODIFIED",
        {**_claim("gp3"), "metadata": {**_claim("gp3")["metadata"], "resourceVersion": "3"}},
    )
    with pytest.raises(VolumeBindError, match="its provisioner gave up provisioning it for n1"):
        await task


async def test_a_claim_selected_for_another_node_cannot_go_here_and_time_and_deletion_end_a_binding() -> None:
    gp3 = {
        "metadata": {"name": "gp3"},
        "provisioner": "ebs.csi.aws.com",
        "volumeBindingMode": "WaitForFirstConsumer",
    }
    v = _volumes(storage_class=gp3)
    claim = _claim("gp3")
    claim["metadata"]["annotations"] = {SELECTED_NODE: "n2"}
    v.update("persistentvolumeclaims", "MODIFIED", claim)
    api = MemoryAPI()
    binder = VolumeBinder(v, api)  # type: ignore[arg-type]
    with pytest.raises(NothingToBindHere, match="is being provisioned for node n2"):
        await binder.bind(POD, _node("n1"), 30, lambda: True)
    with pytest.raises(VolumeBindError, match=r"timed out after 0s \(service.volumeBindTimeout\)"):
        await binder.bind(POD, _node("n2"), 0, lambda: True)
    with pytest.raises(PodGone):
        await binder.bind(POD, _node("n2"), 30, lambda: False)
    assert api.written == []  # selected already: nothing to write


def _two_claims() -> tuple[Volumes, Obj]:
    """Claims data and logs of one pod, each fitting one volume on n1."""
    v = _volumes(_volume("pa", "10Gi", "n1"), _volume("pb", "10Gi", "n1"))
    logs = copy.deepcopy(_claim())
    logs["metadata"].update(name="logs", uid="uid-logs")
    v.update("persistentvolumeclaims", "ADDED", logs)
    pod = copy.deepcopy(POD)
    pod["spec"]["volumes"].append({"name": "logs", "persistentVolumeClaim": {"claimName": "logs"}})
    return v, pod


class GatedAPI(MemoryAPI):
    """Each write waits for the test to let it through: something can happen while one is in flight."""

    def __init__(self) -> None:
        super().__init__()
        self.gate = asyncio.Event()
        self.in_flight: list[str] = []  # the names of the writes begun, in order

    async def replace_object(self, kind: str, obj: Obj) -> Obj:
        self.in_flight.append(obj["metadata"]["name"])
        await self.gate.wait()
        return await super().replace_object(kind, obj)


async def test_a_volume_taken_while_another_claims_write_is_in_flight_is_not_written_over() -> None:
    """The informers show the second claim's volume bound to another claim while the first claim's write
    is in flight: it is not given to this claim too (nothing else fits on the node: the binding gives
    up there)."""
    v, pod = _two_claims()
    api = GatedAPI()
    binder = VolumeBinder(v, api)  # type: ignore[arg-type]
    task = asyncio.create_task(binder.bind(pod, _node("n1"), 30, lambda: True))
    while not api.in_flight:  # noqa: ASYNC110 - the task's first step, in this loop
        await asyncio.sleep(0)
    assert api.in_flight == ["pa"]  # data's, the first claim: pb is chosen for logs
    taken: Obj = copy.deepcopy(dict(v.volumes["pb"]))
    taken["metadata"]["resourceVersion"] = "7"
    taken["spec"]["claimRef"] = {"namespace": "other", "name": "theirs", "uid": "x"}
    taken["status"] = {"phase": "Bound"}
    v.update("persistentvolumes", "MODIFIED", taken)
    api.gate.set()
    with pytest.raises(VolumeBindError, match="didn't find available persistent volumes to bind on node n1"):
        await task
    assert api.in_flight == ["pa"] and [w["metadata"]["name"] for _, w in api.written] == ["pa"]
    assert v.volumes["pb"]["spec"]["claimRef"]["name"] == "theirs"


async def test_a_lost_answer_counts_as_written_and_older_versions_do_not_look_like_an_undone_binding() -> (
    None
):
    """The write's answer was lost (a conflict on the retry); the API shows ours at version 5 while the
    informers still bring version 2 (the volume's earlier change, without our claimRef): nothing is
    written again, the binding goes on, and completes when the claim is bound."""
    v = _volumes(_volume("fit", "10Gi", "n1"))
    api = MemoryAPI()
    ours = copy.deepcopy(_volume("fit", "10Gi", "n1"))
    ours["metadata"]["resourceVersion"] = "5"
    ours["spec"]["claimRef"] = {"namespace": "shop", "name": "data", "uid": "uid-data"}
    api.conflicts["fit"] = ours
    binder = VolumeBinder(v, api)  # type: ignore[arg-type]
    task = asyncio.create_task(binder.bind(POD, _node("n1"), 30, lambda: True))
    while "fit" in api.conflicts and not task.done():  # noqa: ASYNC110 - the task's first step, in this loop
        await asyncio.sleep(0)
    older = copy.deepcopy(_volume("fit", "10Gi", "n1"))
    older["metadata"]["resourceVersion"] = "2"
    v.update("persistentvolumes", "MODIFIED", older)  # passed over: the cache holds version 5
    assert v.volumes["fit"]["spec"]["claimRef"]["name"] == "data"
    await asyncio.sleep(0)
    assert not task.done()
    _bound(v, "fit")
    await task
    assert api.written == []
