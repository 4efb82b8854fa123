"""The volume controllers of a cluster, as the API emulation (kube_api.FakeKubeAPI) runs them, so tests of a
scheduler that binds volumes exercise the real flow rather than a shortcut:

- `PVController`, kube-controller-manager's PersistentVolume controller, the part a scheduler's volume
  binding relies on: a volume whose `spec.claimRef` names a claim (written by a scheduler for a static
  match, or by a provisioner) and that claim are bound to each other (the claim's `spec.volumeName`, both
  phases `Bound`, the claim's `pv.kubernetes.io/bind-completed`); a claim pre-bound by `spec.volumeName`
  gets its volume's claimRef; a volume with no claim is `Available`, one whose claim is gone `Released`.
- `Provisioner`, an external-provisioner stand-in for one CSI driver: a claim of a StorageClass with that
  provisioner, unbound, annotated `volume.kubernetes.io/selected-node` (by a scheduler, for
  WaitForFirstConsumer) gets a new volume `pvc-<claim uid>` of the requested size, with node affinity for
  the selected node's zone (`topology.kubernetes.io/zone`, or the class's allowedTopologies key) and a
  claimRef, which the PV controller then binds.

- `EphemeralVolumeController`, kube-controller-manager's ephemeral-volume controller: for a pod's generic
  ephemeral volume (`spec.volumes[].ephemeral.volumeClaimTemplate`) it creates the claim `<pod>-<volume>`
  from the template, owned by the pod (its controller ownerReference).

Each is a separate component with its own task, woken by every change of the emulation's objects; a test
can pause one (`paused = True`: it does nothing until resumed) or make the provisioner fail (`failing =
"reason"`: a `ProvisioningFailed` warning event on the claim, no volume), as a stuck or broken controller
of a real cluster would be.
"""

from __future__ import annotations

import asyncio
import bisect
import contextlib
import time
from typing import Any

from tests.integration.kube_api import FakeKubeAPI

Obj = dict[str, Any]
SELECTED_NODE = "volume.kubernetes.io/selected-node"
BIND_COMPLETED = "pv.kubernetes.io/bind-completed"
ZONE = "topology.kubernetes.io/zone"


class _Controller:
    """A loop that reconciles under the emulation's lock after every change it sees: the objects of its
    kinds changed since its last look (all of them at its first look, and after `resume`), as a
    controller's informers hand it only what changed."""

    kinds: tuple[str, ...] = ()

    def __init__(self, api: FakeKubeAPI) -> None:
        self.api = api
        self.paused = False
        self._full = True  # the next look takes in everything
        self._task: asyncio.Task[None] | None = None

    def start(self) -> None:
        self._task = asyncio.create_task(self._run())

    async def stop(self) -> None:
        if self._task is not None:
            self._task.cancel()
            with contextlib.suppress(asyncio.CancelledError):
                await self._task

    async def resume(self) -> None:
        """Unpause, and look at everything at once (the changes made meanwhile included)."""
        self.paused = False
        self._full = True
        async with self.api.changed:
            self.api.changed.notify_all()

    async def _run(self) -> None:
        seen = 0
        while True:
            async with self.api.changed:
                while self.paused or (self.api.rv == seen and not self._full):
                    await self.api.changed.wait()
                changed = self._everything() if self._full else self._since(seen)
                self._full = False
                seen = self.api.rv  # its own writes are looked at again next time: one may lead to another
                self.reconcile(changed)

    def _since(self, seen: int) -> dict[str, set[str]]:
        """The keys of the objects of its kinds changed after resourceVersion `seen`, by kind."""
        out: dict[str, set[str]] = {}
        for kind in self.kinds:
            start = bisect.bisect_right(self.api.history_rvs[kind], seen)
            found = {
                self.api._key(obj) for _, _, obj in self.api.history[kind][start:] if isinstance(obj, dict)
            }
            if found:
                out[kind] = found
        return out

    def _everything(self) -> dict[str, set[str]]:
        return {kind: set(self.api.objects[kind]) for kind in self.kinds}

    def reconcile(self, changed: dict[str, set[str]]) -> None:
        raise NotImplementedError


class PVController(_Controller):
    kinds = ("persistentvolumeclaims", "persistentvolumes")

    def __init__(self, api: FakeKubeAPI) -> None:
        super().__init__(api)
        self._volume_of: dict[str, str] = {}  # claim key -> the volume whose claimRef names it

    def reconcile(self, changed: dict[str, set[str]]) -> None:
        api = self.api
        volumes = set(changed.get("persistentvolumes", ()))
        for key in changed.get("persistentvolumeclaims", ()):
            claim = api.objects["persistentvolumeclaims"].get(key)
            wanted = ((claim or {}).get("spec") or {}).get("volumeName")
            volume = api.get("persistentvolumes", wanted) if wanted else None
            if claim is not None and volume is not None and not (volume.get("spec") or {}).get("claimRef"):
                api.put_locked("persistentvolumes", _with_claim_ref(volume, claim))
                volumes.add(f"/{wanted}")
            if key in self._volume_of:
                volumes.add(f"/{self._volume_of[key]}")
        for key in volumes:
            volume = api.objects["persistentvolumes"].get(key)
            if volume is not None:
                self._volume(volume)

    def _volume(self, volume: Obj) -> None:
        api = self.api
        ref = (volume.get("spec") or {}).get("claimRef")
        if not ref:
            _set_phase(api, "persistentvolumes", volume, "Available")
            return
        claim_key = f"{ref.get('namespace', '')}/{ref.get('name', '')}"
        self._volume_of[claim_key] = volume["metadata"]["name"]
        owner = api.objects["persistentvolumeclaims"].get(claim_key)
        if owner is None or (ref.get("uid") and ref["uid"] != owner["metadata"].get("uid")):
            _set_phase(api, "persistentvolumes", volume, "Released")
            return
        bound_to = (owner.get("spec") or {}).get("volumeName")
        if bound_to and bound_to != volume["metadata"]["name"]:
            return  # the owner went to another volume: this one's claimRef is stale
        if not bound_to or (owner.get("status") or {}).get("phase") != "Bound":
            annotations = {**(owner["metadata"].get("annotations") or {}), BIND_COMPLETED: "yes"}
            api.put_locked("persistentvolumeclaims", {
                **owner,
                "metadata": {**owner["metadata"], "annotations": annotations},
                "spec": {**(owner.get("spec") or {}), "volumeName": volume["metadata"]["name"]},
                "status": {**(owner.get("status") or {}), "phase": "Bound",
                           "capacity": (volume.get("spec") or {}).get("capacity") or {}},
            })  # fmt: skip
            self.bound_at[claim_key] = time.monotonic()
        _set_phase(api, "persistentvolumes", volume, "Bound")

    @property
    def bound_at(self) -> dict[str, float]:
        """When each claim was bound (monotonic), for the benchmarks: kept on the emulation."""
        return self.api.claim_bound_at


class Provisioner(_Controller):
    kinds = ("persistentvolumeclaims",)

    def __init__(self, api: FakeKubeAPI, driver: str) -> None:
        super().__init__(api)
        self.driver = driver
        self.failing = ""  # a reason: every claim it would provision gets a ProvisioningFailed event
        self.provisioned: list[str] = []  # the volumes it made, in order
        self._failed: set[str] = set()  # claims already told, once each

    def reconcile(self, changed: dict[str, set[str]]) -> None:
        api = self.api
        for key in changed.get("persistentvolumeclaims", ()):
            claim = api.objects["persistentvolumeclaims"].get(key)
            if claim is not None:
                self._claim(claim)

    def _claim(self, claim: Obj) -> None:
        api = self.api
        meta, spec = claim["metadata"], claim.get("spec") or {}
        node_name = (meta.get("annotations") or {}).get(SELECTED_NODE)
        storage_class = api.get("storageclasses", spec.get("storageClassName") or "")
        if not node_name or spec.get("volumeName") or storage_class is None:
            return
        if storage_class.get("provisioner") != self.driver:
            return
        name = f"pvc-{meta.get('uid') or meta['name']}"
        if api.get("persistentvolumes", name) is not None:
            return
        if self.failing:
            if name not in self._failed:
                self._failed.add(name)
                api.events.append(_event(claim, "ProvisioningFailed", self.failing))
                api.changed.notify_all()  # an event is a fact a waiter may be looking for
            return
        node = api.get("nodes", node_name)
        key = _topology_key(storage_class)
        zone = ((node or {}).get("metadata", {}).get("labels") or {}).get(key)
        size = ((spec.get("resources") or {}).get("requests") or {}).get("storage", "1Gi")
        volume: Obj = {
            "apiVersion": "v1", "kind": "PersistentVolume",
            "metadata": {"name": name, "annotations": {"pv.kubernetes.io/provisioned-by": self.driver}},
            "spec": {
                "capacity": {"storage": size},
                "accessModes": spec.get("accessModes") or ["ReadWriteOnce"],
                "storageClassName": storage_class["metadata"]["name"],
                "persistentVolumeReclaimPolicy": storage_class.get("reclaimPolicy") or "Delete",
                "csi": {"driver": self.driver, "volumeHandle": f"vol-{name}"},
            },
            "status": {"phase": "Pending"},
        }  # fmt: skip
        volume = _with_claim_ref(volume, claim)
        if zone is not None:
            volume["spec"]["nodeAffinity"] = {"required": {"nodeSelectorTerms": [
                {"matchExpressions": [{"key": key, "operator": "In", "values": [zone]}]}]}}  # fmt: skip
        api.put_locked("persistentvolumes", volume)
        self.provisioned.append(name)


class EphemeralVolumeController(_Controller):
    kinds = ("pods",)

    def reconcile(self, changed: dict[str, set[str]]) -> None:
        api = self.api
        for key in changed.get("pods", ()):
            pod = api.objects["pods"].get(key)
            if pod is not None:
                self._pod(pod)

    def _pod(self, pod: Obj) -> None:
        api = self.api
        meta = pod["metadata"]
        namespace = meta.get("namespace", "default")
        for volume in (pod.get("spec") or {}).get("volumes") or []:
            template = (volume.get("ephemeral") or {}).get("volumeClaimTemplate")
            if template is None:
                continue
            name = f"{meta['name']}-{volume['name']}"
            if f"{namespace}/{name}" in api.objects["persistentvolumeclaims"]:
                continue
            owner = {"apiVersion": "v1", "kind": "Pod", "name": meta["name"], "uid": meta.get("uid", ""),
                     "controller": True, "blockOwnerDeletion": True}  # fmt: skip
            claim_meta = {**(template.get("metadata") or {}), "name": name, "namespace": namespace,
                          "uid": f"uid-pvc-{name}", "ownerReferences": [owner]}  # fmt: skip
            api.put_locked("persistentvolumeclaims", {
                "apiVersion": "v1", "kind": "PersistentVolumeClaim", "metadata": claim_meta,
                "spec": template.get("spec") or {}, "status": {"phase": "Pending"},
            })  # fmt: skip


def _with_claim_ref(volume: Obj, claim: Obj) -> Obj:
    meta = claim["metadata"]
    ref = {"kind": "PersistentVolumeClaim", "namespace": meta.get("namespace", ""), "name": meta["name"],
           "uid": meta.get("uid", "")}  # fmt: skip
    return {**volume, "spec": {**(volume.get("spec") or {}), "claimRef": ref}}


def _set_phase(api: FakeKubeAPI, kind: str, obj: Obj, phase: str) -> None:
    if (obj.get("status") or {}).get("phase") != phase:
        api.put_locked(kind, {**obj, "status": {**(obj.get("status") or {}), "phase": phase}})


def _topology_key(storage_class: Obj) -> str:
    for term in storage_class.get("allowedTopologies") or []:
        for expression in term.get("matchLabelExpressions") or []:
            if expression.get("key"):
                return str(expression["key"])
    return ZONE


def _event(claim: Obj, reason: str, message: str) -> Obj:
    meta = claim["metadata"]
    return {
        "metadata": {"namespace": meta.get("namespace", ""), "generateName": f"{meta['name']}."},
        "involvedObject": {"kind": "PersistentVolumeClaim", "namespace": meta.get("namespace", ""),
                           "name": meta["name"], "uid": meta.get("uid", "")},
        "reason": reason, "message": message, "type": "Warning",
    }  # fmt: skip
