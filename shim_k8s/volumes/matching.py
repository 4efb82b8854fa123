"""Which PersistentVolume may bind which claim, as Kubernetes' volume binding matches them (the PV
controller's and kube-scheduler's shared rules), and the annotations both sides of a binding write.

A volume fits an unbound claim when it is `Available` (no claimRef, not being deleted), of the claim's
StorageClass, of the same volume mode, offers every access mode the claim asks for, holds at least
the storage it requests, and its labels match the claim's selector. Of those, the smallest is chosen.
A volume whose claimRef already names the claim (pre-bound, or written by a binding under way) is the
claim's, whatever else is available.
"""

from __future__ import annotations

from typing import Any

from shim_k8s.api.objects import Obj
from shim_k8s.readers import quantity
from shim_k8s.readers.node_selectors import matches_label_selector

SELECTED_NODE = "volume.kubernetes.io/selected-node"  # the node a claim is provisioned for
BIND_COMPLETED = "pv.kubernetes.io/bind-completed"  # the PV controller finished binding the claim
BOUND_BY_CONTROLLER = "pv.kubernetes.io/bound-by-controller"  # the claimRef was not the user's
BETA_CLASS = "volume.beta.kubernetes.io/storage-class"  # the class before storageClassName existed
NO_PROVISIONER = "kubernetes.io/no-provisioner"  # a class of static volumes only


def _meta(obj: Obj) -> Obj:
    return obj.get("metadata") or {}


def _spec(obj: Obj) -> Obj:
    return obj.get("spec") or {}


def annotations_of(obj: Obj) -> Obj:
    return _meta(obj).get("annotations") or {}


def claim_key(claim: Obj) -> str:
    meta = _meta(claim)
    return f"{meta.get('namespace', 'default')}/{meta.get('name', '')}"


def claim_ref_key(volume: Obj) -> str:
    """The claim a volume's claimRef names, "<namespace>/<name>"; "" for none."""
    ref = _spec(volume).get("claimRef") or {}
    return f"{ref.get('namespace', '')}/{ref.get('name', '')}" if ref.get("name") else ""


def claim_class(claim: Obj) -> str | None:
    """The claim's StorageClass name; None when it names none (the default class is then its)."""
    name = _spec(claim).get("storageClassName")
    if name is None:
        name = annotations_of(claim).get(BETA_CLASS)
    return None if name is None else str(name)


def volume_class(volume: Obj) -> str:
    return str(_spec(volume).get("storageClassName") or annotations_of(volume).get(BETA_CLASS) or "")


def is_available(volume: Obj) -> bool:
    """Free to bind: phase Available, no claimRef, not being deleted."""
    return (
        (volume.get("status") or {}).get("phase") == "Available"
        and not _spec(volume).get("claimRef")
        and not _meta(volume).get("deletionTimestamp")
    )


def version(obj: Obj) -> int | None:
    """An object's resourceVersion as a number, to tell which of two versions is the later (as
    kube-scheduler's assume cache does: the API server's versions are etcd revisions); None when it is
    not one."""
    text = _meta(obj).get("resourceVersion")
    try:
        return int(text) if text is not None else None
    except (TypeError, ValueError):
        return None


def pre_bound_to(volume: Obj, claim: Obj) -> bool:
    """Whether the volume's claimRef names this claim (by name and namespace, and by UID when it has
    one): it is the claim's, and only its."""
    ref = _spec(volume).get("claimRef") or {}
    meta = _meta(claim)
    if ref.get("name") != meta.get("name") or ref.get("namespace", "") != meta.get("namespace", "default"):
        return False
    return not ref.get("uid") or ref.get("uid") == meta.get("uid")


def pre_bound_fits(claim: Obj, volume: Obj) -> bool:
    """A volume whose claimRef names the claim is its volume only if it is of the claim's class, holds
    the storage it requests, has its volume mode and is not being deleted (as FindMatchingVolume checks
    before it takes a pre-bound volume)."""
    spec, volume_spec = _spec(claim), _spec(volume)
    return (
        volume_class(volume) == (claim_class(claim) or "")
        and capacity(volume) >= storage((spec.get("resources") or {}).get("requests"))
        and (spec.get("volumeMode") or "Filesystem") == (volume_spec.get("volumeMode") or "Filesystem")
        and not _meta(volume).get("deletionTimestamp")
    )


def node_terms(volume: Obj) -> list[Obj]:
    """The volume's required node affinity, node selector terms ORed; [] for none (any node)."""
    required = (_spec(volume).get("nodeAffinity") or {}).get("required") or {}
    return list(required.get("nodeSelectorTerms") or [])


def storage(values: Obj | None) -> int:
    """The `storage` of a capacity or requests map, in nano-units; -1 when absent or unreadable."""
    text = (values or {}).get("storage")
    if not isinstance(text, str):
        return -1
    try:
        return quantity.nanos_of(text)
    except quantity.QuantityError:
        return -1


def capacity(volume: Obj) -> int:
    return storage(_spec(volume).get("capacity"))


def fits(claim: Obj, volume: Obj) -> bool:
    """Whether an available volume of the claim's class satisfies the claim (see the module's rules)."""
    spec, volume_spec = _spec(claim), _spec(volume)
    if (spec.get("volumeMode") or "Filesystem") != (volume_spec.get("volumeMode") or "Filesystem"):
        return False
    offered = volume_spec.get("accessModes") or []
    if not all(mode in offered for mode in spec.get("accessModes") or []):
        return False
    wanted = storage((spec.get("resources") or {}).get("requests"))
    have = capacity(volume)
    if wanted < 0 or have < wanted:
        return False
    labels = _meta(volume).get("labels") or {}
    return matches_label_selector(spec.get("selector"), labels)


def can_provision(storage_class: Obj) -> bool:
    """Whether the class provisions volumes (it names a provisioner other than no-provisioner)."""
    provisioner = storage_class.get("provisioner") or ""
    return bool(provisioner) and provisioner != NO_PROVISIONER


def is_fully_bound(claim: Obj) -> bool:
    """Bound, as the PV controller completes it: a volume named and bind-completed."""
    return bool(_spec(claim).get("volumeName")) and BIND_COMPLETED in annotations_of(claim)


def with_claim_ref(volume: Obj, claim: Obj) -> dict[str, Any]:
    """The volume as a scheduler binds it to the claim for the PV controller to finish: its claimRef
    names the claim (its UID and version), annotated bound-by-controller."""
    meta = _meta(claim)
    ref = {
        "kind": "PersistentVolumeClaim", "apiVersion": "v1", "namespace": meta.get("namespace", "default"),
        "name": meta.get("name", ""), "uid": meta.get("uid", ""),
        "resourceVersion": meta.get("resourceVersion", ""),
    }  # fmt: skip
    volume_meta = dict(_meta(volume))
    volume_meta["annotations"] = {**annotations_of(volume), BOUND_BY_CONTROLLER: "yes"}
    return {**volume, "metadata": volume_meta, "spec": {**_spec(volume), "claimRef": ref}}


def with_selected_node(claim: Obj, node: str) -> dict[str, Any]:
    """The claim as a scheduler asks for its volume to be provisioned for the node."""
    meta = dict(_meta(claim))
    meta["annotations"] = {**annotations_of(claim), SELECTED_NODE: node}
    return {**claim, "metadata": meta}
