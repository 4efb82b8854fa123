"""A pod's volumes and where they let it run, as Kubernetes' VolumeBinding plugin sees it.

The shim follows PersistentVolumeClaims, PersistentVolumes and StorageClasses. For a pending pod:
- a claim that is bound: its PersistentVolume's `spec.nodeAffinity.required` joins the pod's required
  node affinity (ANDed with the pod's own terms), so the core places the pod only where the volume is;
- a claim that is missing, not bound yet (Immediate binding: the volume controller binds it), or
  unbound in a StorageClass with `volumeBindingMode: WaitForFirstConsumer` (which needs the scheduler
  to pick the volume and node together, and pykorn does not bind volumes): the pod waits, with the
  reason, and is never placed blindly;
- a generic ephemeral volume is the claim `<pod>-<volume>` that Kubernetes creates for it;
- volume kinds that place no constraint on the node (emptyDir, configMap, secret, downwardAPI,
  projected, hostPath, nfs, image, and inline CSI ephemeral volumes) need nothing; any other kind (the
  in-tree cloud disks, whose zone and attach limits pykorn does not check) makes the pod wait, naming
  the kind.
"""

from __future__ import annotations

import itertools
from collections.abc import Sequence
from dataclasses import dataclass, field
from typing import Any

from shim_k8s.api.objects import Obj, WatchEvent

VOLUME_KINDS = ("persistentvolumeclaims", "persistentvolumes", "storageclasses", "csinodes")
WAIT_FOR_FIRST_CONSUMER = "WaitForFirstConsumer"
READ_WRITE_ONCE_POD = "ReadWriteOncePod"
DEFAULT_CLASS = "storageclass.kubernetes.io/is-default-class"
NEUTRAL_KINDS = frozenset(
    {"name", "emptyDir", "configMap", "secret", "downwardAPI", "projected", "hostPath", "nfs", "image", "csi"}
)


@dataclass
class Volumes:
    claims: dict[tuple[str, str], Obj] = field(default_factory=dict)  # (namespace, name) -> claim
    volumes: dict[str, Obj] = field(default_factory=dict)  # name -> PersistentVolume
    classes: dict[str, Obj] = field(default_factory=dict)  # name -> StorageClass
    csinodes: dict[str, Obj] = field(default_factory=dict)  # node name -> CSINode

    def update(self, kind: str, event: str, obj: Obj) -> None:
        meta = obj.get("metadata") or {}
        name = meta.get("name", "")
        store: dict[Any, Obj]  # one of the three, by key
        key: Any
        if kind == "persistentvolumeclaims":
            store, key = self.claims, (meta.get("namespace", "default"), name)
        elif kind == "persistentvolumes":
            store, key = self.volumes, name
        elif kind == "csinodes":
            store, key = self.csinodes, name
        else:
            store, key = self.classes, name
        if event == WatchEvent.DELETED:
            store.pop(key, None)
        else:
            store[key] = obj

    def placement(self, pod: Obj) -> tuple[str, list[list[Obj]]]:
        """("", its bound volumes' constraints: lists of node selector terms, each list ORed and the lists
        ANDed (a volume's node affinity, its zone labels)) when the pod may be asked for; (why it
        waits, []) when it may not be placed yet."""
        meta, spec = pod.get("metadata") or {}, pod.get("spec") or {}
        namespace = meta.get("namespace", "default")
        terms: list[list[Obj]] = []
        for volume in spec.get("volumes") or []:
            name = volume.get("name", "")
            if "persistentVolumeClaim" in volume:
                claim_name = (volume["persistentVolumeClaim"] or {}).get("claimName", "")
            elif "ephemeral" in volume:
                claim_name = f"{meta.get('name', '')}-{name}"  # the claim Kubernetes makes for it
            else:
                other = sorted(set(volume) - NEUTRAL_KINDS)
                if other:
                    return f"volume {name} is of a kind pykorn does not place by ({', '.join(other)})", []
                continue
            why, volume_terms = self._claim(namespace, claim_name)
            if why:
                return why, []
            terms.extend(t for t in volume_terms if t)
        return "", terms

    def _claim(self, namespace: str, name: str) -> tuple[str, list[list[Obj]]]:
        """("", the volume's constraints: lists of node selector terms, each list ORed, the lists
        ANDed) when the claim is bound; (why the pod waits, []) when it is not."""
        claim = self.claims.get((namespace, name))
        if claim is None:
            return f"persistentvolumeclaim {name} not found", []
        bound_to = (claim.get("spec") or {}).get("volumeName", "")
        if not bound_to:
            sc_name = (claim.get("spec") or {}).get("storageClassName") or self._default_class()
            storage_class = self.classes.get(sc_name or "")
            if (
                storage_class is not None
                and storage_class.get("volumeBindingMode") == WAIT_FOR_FIRST_CONSUMER
            ):
                return (
                    f"persistentvolumeclaim {name} is unbound and its StorageClass {sc_name} binds "
                    f"{WAIT_FOR_FIRST_CONSUMER}: pykorn does not choose volumes for pods; bind it first"
                ), []
            return f"persistentvolumeclaim {name} is not bound yet", []
        volume = self.volumes.get(bound_to)
        if volume is None:
            return f"persistentvolume {bound_to} of claim {name} not found", []
        required = ((volume.get("spec") or {}).get("nodeAffinity") or {}).get("required") or {}
        return "", [list(required.get("nodeSelectorTerms") or []), *zone_terms(volume)]

    def csi_volumes(self, pod: Obj) -> dict[str, list[str]]:
        """The CSI volumes the pod attaches, driver -> volume handles, as NodeVolumeLimits counts them:
        its bound claims' CSI volumes (generic ephemeral ones included) and its inline CSI volumes (one
        of each per pod: `<namespace>-<pod>-<volume>`)."""
        meta, spec = pod.get("metadata") or {}, pod.get("spec") or {}
        namespace, pod_name = meta.get("namespace", "default"), meta.get("name", "")
        found: dict[str, list[str]] = {}
        for volume in spec.get("volumes") or []:
            name = volume.get("name", "")
            driver, handle = "", ""
            if "persistentVolumeClaim" in volume or "ephemeral" in volume:
                claim_name = (
                    (volume["persistentVolumeClaim"] or {}).get("claimName", "")
                    if "persistentVolumeClaim" in volume
                    else f"{pod_name}-{name}"
                )
                claim = self.claims.get((namespace, claim_name)) or {}
                bound = self.volumes.get((claim.get("spec") or {}).get("volumeName") or "") or {}
                csi = (bound.get("spec") or {}).get("csi") or {}
                driver, handle = csi.get("driver", ""), csi.get("volumeHandle", "")
            elif "csi" in volume:
                driver, handle = (volume["csi"] or {}).get("driver", ""), f"{namespace}-{pod_name}-{name}"
            if driver and handle:
                found.setdefault(str(driver), []).append(str(handle))
        return found

    def rwop_claims(self, pod: Obj) -> list[str]:
        """The claims with access mode ReadWriteOncePod the pod uses, "<namespace>/<name>": no other pod
        of the cluster may use one at the same time (VolumeRestrictions)."""
        meta, spec = pod.get("metadata") or {}, pod.get("spec") or {}
        namespace, pod_name = meta.get("namespace", "default"), meta.get("name", "")
        found = []
        for volume in spec.get("volumes") or []:
            if "persistentVolumeClaim" in volume:
                claim_name = (volume["persistentVolumeClaim"] or {}).get("claimName", "")
            elif "ephemeral" in volume:
                claim_name = f"{pod_name}-{volume.get('name', '')}"
            else:
                continue
            claim = self.claims.get((namespace, claim_name)) or {}
            if READ_WRITE_ONCE_POD in ((claim.get("spec") or {}).get("accessModes") or []):
                found.append(f"{namespace}/{claim_name}")
        return sorted(set(found))

    def csi_limits(self, node_name: str) -> dict[str, int]:
        """How many volumes of each CSI driver the node can attach (its CSINode's allocatable counts)."""
        drivers = ((self.csinodes.get(node_name) or {}).get("spec") or {}).get("drivers") or []
        return {
            str(d["name"]): int(d["allocatable"]["count"])
            for d in drivers
            if d.get("name") and isinstance((d.get("allocatable") or {}).get("count"), int)
        }

    def _default_class(self) -> str:
        for name, storage_class in self.classes.items():
            if ((storage_class.get("metadata") or {}).get("annotations") or {}).get(DEFAULT_CLASS) == "true":
                return name
        return ""


# The topology labels kube-scheduler's VolumeZone reads, and each one's GA or beta twin.
TOPOLOGY_LABELS = {
    "topology.kubernetes.io/zone": "failure-domain.beta.kubernetes.io/zone",
    "topology.kubernetes.io/region": "failure-domain.beta.kubernetes.io/region",
    "failure-domain.beta.kubernetes.io/zone": "topology.kubernetes.io/zone",
    "failure-domain.beta.kubernetes.io/region": "topology.kubernetes.io/region",
}


def zone_terms(volume: Obj) -> list[list[Obj]]:
    """VolumeZone: a bound volume labelled with a zone or region (several joined by "__") takes a node
    whose label of that key, or of its GA/beta twin, is one of them; a node with no topology label at
    all passes, as kube-scheduler lets it. One list of ORed node selector terms per label."""
    labels = (volume.get("metadata") or {}).get("labels") or {}
    unlabelled: Obj = {"matchExpressions": [{"key": k, "operator": "DoesNotExist"} for k in TOPOLOGY_LABELS]}
    out: list[list[Obj]] = []
    for key, twin in TOPOLOGY_LABELS.items():
        value = labels.get(key)
        if not isinstance(value, str) or not value:
            continue
        values = sorted(set(value.split("__")))
        within: list[Obj] = [
            {"matchExpressions": [{"key": key, "operator": "In", "values": values}]},
            {"matchExpressions": [{"key": twin, "operator": "In", "values": values}]},
            unlabelled,
        ]
        out.append(within)
    return out


def with_volume_terms(node_affinity: Obj | None, volume_terms: Sequence[Sequence[Obj]]) -> Obj | None:
    """The pod's nodeAffinity with each volume's required terms ANDed in: every combination of one of
    the pod's terms and one term per volume, their requirements joined (terms are ORed, requirements
    inside a term ANDed, so this is the same rule)."""
    if not volume_terms:
        return node_affinity
    affinity = dict(node_affinity or {})
    required = affinity.get("requiredDuringSchedulingIgnoredDuringExecution") or {}
    pod_terms = required.get("nodeSelectorTerms") or [{}]  # no term of its own: no requirement to add
    merged: list[dict[str, Any]] = []
    for combination in itertools.product(pod_terms, *volume_terms):
        term: dict[str, Any] = {}
        for part in combination:
            for key in ("matchExpressions", "matchFields"):
                if part.get(key):
                    term.setdefault(key, []).extend(part[key])
        merged.append(term)
    affinity["requiredDuringSchedulingIgnoredDuringExecution"] = {"nodeSelectorTerms": merged}
    return affinity
