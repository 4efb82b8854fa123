"""A pod's volumes and where they let it run, as Kubernetes' VolumeBinding plugin sees it.

The shim follows PersistentVolumeClaims, PersistentVolumes and StorageClasses. For a pending pod:
- a claim that is bound: its PersistentVolume's `spec.nodeAffinity.required` joins the pod's required
  node affinity (ANDed with the pod's own terms), so the core places the pod only where the volume is;
- a claim that is unbound in a StorageClass with `volumeBindingMode: WaitForFirstConsumer`: the nodes
  where it can be satisfied join the pod's node affinity the same way: the node affinity of each
  available volume that fits it (shim_k8s.volumes.matching), or, when its class provisions volumes, the
  class's `allowedTopologies` (any node when it has none), ORed. A volume whose claimRef names the claim
  already (a binding under way, perhaps before a restart) is its only choice; a claim annotated
  `volume.kubernetes.io/selected-node` is provisioned for that node only. Once the core has picked a
  node, shim_k8s.volumes.binding binds the volumes there before the pod;
- a claim that is missing, being deleted, or not bound yet in an Immediate class (the volume
  controller binds it), or an unbound WaitForFirstConsumer claim nothing can satisfy: the pod waits,
  with the reason, and is never placed blindly; it is looked at again when volumes change;
- a generic ephemeral volume is the claim `<pod>-<volume>` that Kubernetes' ephemeral-volume controller
  creates for it, owned by the pod (one the pod does not own is not its, and the pod waits);
- the other volume kinds place no constraint of their own on the node, as in kube-scheduler
  (NEUTRAL_KINDS): the in-tree disks mounted directly are checked for conflicts (`disks`, VolumeRestrictions)
  and counted against attach limits as CSI migration names them (`csi_volumes`); a kind this shim does
  not know (newer than it) makes the pod wait, naming the kind.
"""

from __future__ import annotations

import asyncio
import json
from collections.abc import Iterator, Sequence
from dataclasses import dataclass, field

from shim_k8s.api.objects import Obj, WatchEvent
from shim_k8s.readers.node_selectors import topology_as_node_terms
from shim_k8s.readers.volume_terms import compact, zone_terms
from shim_k8s.volumes import matching as match
from shim_k8s.volumes.kinds import NEUTRAL_KINDS, disks, migrated
from si.v1.tags import TAG_CSI_VOLUMES, TAG_DISKS, TAG_RWOP_CLAIMS

VOLUME_KINDS = ("persistentvolumeclaims", "persistentvolumes", "storageclasses", "csinodes", "csidrivers")
WAIT_FOR_FIRST_CONSUMER = "WaitForFirstConsumer"
READ_WRITE_ONCE_POD = "ReadWriteOncePod"
NO_VOLUME_TO_BIND = "node(s) didn't find available persistent volumes to bind"  # kube-scheduler's reason


@dataclass(frozen=True)
class DelayedClaim:
    """An unbound claim of a WaitForFirstConsumer class: bound by the scheduler, with its pod."""

    claim: Obj
    storage_class: Obj


@dataclass
class Volumes:
    claims: dict[tuple[str, str], Obj] = field(default_factory=dict)  # (namespace, name) -> claim
    volumes: dict[str, Obj] = field(default_factory=dict)  # name -> PersistentVolume
    classes: dict[str, Obj] = field(default_factory=dict)  # name -> StorageClass
    csinodes: dict[str, Obj] = field(default_factory=dict)  # node name -> CSINode
    csidrivers: dict[str, Obj] = field(default_factory=dict)  # name -> CSIDriver
    # Volumes free to bind, by class name -> name -> volume; and the volumes whose claimRef names a
    # claim ("<namespace>/<name>" -> volume names).
    available: dict[str, dict[str, Obj]] = field(default_factory=dict)
    claimed: dict[str, set[str]] = field(default_factory=dict)
    # Volumes chosen by a binding under way, before the API shows it: volume name -> claim key. No
    # other claim gets one meanwhile.
    reserved: dict[str, str] = field(default_factory=dict)
    # What bindings under way wait on: a claim's key (or "pod/<uid>") -> events set when it changes.
    _waiters: dict[str, set[asyncio.Event]] = field(default_factory=dict)

    def update(self, kind: str, event: str, obj: Obj) -> None:
        meta = obj.get("metadata") or {}
        name = meta.get("name", "")
        if kind == "persistentvolumeclaims":
            key = (meta.get("namespace", "default"), name)
            if event == WatchEvent.DELETED:
                self.claims.pop(key, None)
            elif not _older(obj, self.claims.get(key)):
                self.claims[key] = obj
            self.notify(f"{key[0]}/{key[1]}")
        elif kind == "persistentvolumes":
            if event != WatchEvent.DELETED and _older(obj, self.volumes.get(name)):
                return
            self._unindex(self.volumes.pop(name, None))
            if event != WatchEvent.DELETED:
                self.volumes[name] = obj
                self._index(obj)
        else:
            store = {"csinodes": self.csinodes, "csidrivers": self.csidrivers}.get(kind, self.classes)
            if event == WatchEvent.DELETED:
                store.pop(name, None)
            else:
                store[name] = obj

    def _index(self, volume: Obj) -> None:
        name = volume["metadata"]["name"]
        if match.is_available(volume):
            self.available.setdefault(match.volume_class(volume), {})[name] = volume
        owner = match.claim_ref_key(volume)
        if owner:
            self.claimed.setdefault(owner, set()).add(name)
            self.notify(owner)

    def _unindex(self, volume: Obj | None) -> None:
        if volume is None:
            return
        name = volume["metadata"]["name"]
        self.available.get(match.volume_class(volume), {}).pop(name, None)
        owner = match.claim_ref_key(volume)
        holders = self.claimed.get(owner)
        if holders is not None:
            holders.discard(name)
            if not holders:
                del self.claimed[owner]
            self.notify(owner)

    def assume(self, kind: str, obj: Obj) -> None:
        """A volume or claim as the API stored our write of it: taken at once, before the informers
        bring it (as kube-scheduler's assume cache), so that nothing chosen next overlooks it; their
        older versions in flight are then passed over (`update`)."""
        self.update(kind, WatchEvent.MODIFIED, obj)

    def volume_of(self, claim: Obj) -> Obj | None:
        """The volume whose claimRef names the claim (pre-bound, or a binding under way) and that may
        be its volume (match.pre_bound_fits); None for none."""
        for name in sorted(self.claimed.get(match.claim_key(claim), ())):
            volume = self.volumes.get(name)
            if (
                volume is not None
                and match.pre_bound_to(volume, claim)
                and match.pre_bound_fits(claim, volume)
            ):
                return volume
        return None

    # Bindings under way wait for what they bind to change ------------------------------------------
    def watch(self, keys: Sequence[str]) -> asyncio.Event:
        """An event set when any of these claims ("<namespace>/<name>") or pods ("pod/<uid>") change;
        `unwatch` it when done."""
        changed = asyncio.Event()
        for key in keys:
            self._waiters.setdefault(key, set()).add(changed)
        return changed

    def unwatch(self, keys: Sequence[str], changed: asyncio.Event) -> None:
        for key in keys:
            waiting = self._waiters.get(key)
            if waiting is not None:
                waiting.discard(changed)
                if not waiting:
                    del self._waiters[key]

    def notify(self, key: str) -> None:
        for changed in self._waiters.get(key, ()):
            changed.set()

    def wake_all(self) -> None:
        """Every binding under way looks at once (the core went away: they stop)."""
        for waiting in self._waiters.values():
            for changed in waiting:
                changed.set()

    # What a waiting pod waits on -------------------------------------------------------------------
    def wait_keys(self, pod: Obj) -> set[str]:
        """What a change of would let the pod's volumes be placed: each claim ("<namespace>/<name>"),
        its class ("class/<name>"; "class/" for none named, the default's) and its volume ("pv/<name>")."""
        namespace = (pod.get("metadata") or {}).get("namespace", "default")
        keys = set()
        for _, claim_name, _ in self.pod_claims(pod):
            keys.add(f"{namespace}/{claim_name}")
            claim = self.claims.get((namespace, claim_name))
            if claim is not None:
                keys.add(f"class/{match.claim_class(claim) or ''}")
                volume_name = (claim.get("spec") or {}).get("volumeName")
                if volume_name:
                    keys.add(f"pv/{volume_name}")
        return keys

    @staticmethod
    def changed_keys(kind: str, obj: Obj) -> set[str]:
        """The wait keys (`wait_keys`) a change of this claim, volume or class concerns."""
        meta = obj.get("metadata") or {}
        if kind == "persistentvolumeclaims":
            return {f"{meta.get('namespace', 'default')}/{meta.get('name', '')}"}
        if kind == "persistentvolumes":
            keys = {f"pv/{meta.get('name', '')}", f"class/{match.volume_class(obj)}"}
            owner = match.claim_ref_key(obj)
            return keys | {owner} if owner else keys
        if kind == "storageclasses":
            return {f"class/{meta.get('name', '')}", "class/"}  # it may be the default now, or no more
        return set()

    # Where a pod may run ------------------------------------------------------------------------
    def pod_claims(self, pod: Obj) -> Iterator[tuple[str, str, bool]]:
        """(volume name, claim name, whether the claim is a generic ephemeral volume's) for each of the
        pod's volumes backed by a claim."""
        meta, spec = pod.get("metadata") or {}, pod.get("spec") or {}
        for volume in spec.get("volumes") or []:
            name = volume.get("name", "")
            if "persistentVolumeClaim" in volume:
                yield name, (volume["persistentVolumeClaim"] or {}).get("claimName", ""), False
            elif "ephemeral" in volume:
                yield name, f"{meta.get('name', '')}-{name}", True  # the claim Kubernetes makes for it

    def placement(self, pod: Obj) -> tuple[str, list[list[Obj]]]:
        """("", its volumes' constraints: lists of node selector terms, each list ORed and the lists
        ANDed (a bound volume's node affinity and zone labels, where an unbound claim can be
        satisfied)) when the pod may be asked for; (why it waits, []) when it may not be placed yet."""
        meta, spec = pod.get("metadata") or {}, pod.get("spec") or {}
        namespace = meta.get("namespace", "default")
        for volume in spec.get("volumes") or []:
            if "persistentVolumeClaim" not in volume and "ephemeral" not in volume:
                other = sorted(set(volume) - NEUTRAL_KINDS)
                if other:
                    name = volume.get("name", "")
                    return f"volume {name} is of a kind pykorn does not place by ({', '.join(other)})", []
        terms: list[list[Obj]] = []
        for _, claim_name, ephemeral in self.pod_claims(pod):
            claim = self.claims.get((namespace, claim_name))
            why = self._unusable(pod, claim_name, claim, ephemeral)
            if why or claim is None:
                return why, []
            why, volume_terms = self._claim_terms(claim)
            if why:
                return why, []
            terms.extend(t for t in volume_terms if t)
        return "", terms

    def _unusable(self, pod: Obj, name: str, claim: Obj | None, ephemeral: bool) -> str:
        """Why the claim cannot be used by the pod as it is now, as kube-scheduler says it; "" if it can."""
        if claim is None:
            return f'persistentvolumeclaim "{name}" not found'
        meta = claim.get("metadata") or {}
        if meta.get("deletionTimestamp"):
            return f'persistentvolumeclaim "{name}" is being deleted'
        if ephemeral:
            pod_uid = (pod.get("metadata") or {}).get("uid")
            owners = meta.get("ownerReferences") or []
            if not any(o.get("uid") == pod_uid and o.get("controller") for o in owners):
                pod_name = (pod.get("metadata") or {}).get("name", "")
                return f"persistentvolumeclaim {name} was not created for pod {pod_name} (pod is not owner)"
        return ""

    def _claim_terms(self, claim: Obj) -> tuple[str, list[list[Obj]]]:
        """("", the claim's constraints: lists of node selector terms, each list ORed, the lists
        ANDed) when it can be used; (why the pod waits, []) when it cannot yet."""
        name = claim["metadata"]["name"]
        bound_to = (claim.get("spec") or {}).get("volumeName", "")
        if not bound_to:
            delayed = self._delayed(claim)
            if delayed is None:
                return f'pod has unbound immediate PersistentVolumeClaims: "{name}" is not bound yet', []
            return self._delayed_terms(delayed)
        if not match.is_fully_bound(claim):  # named, the PV controller has not finished binding it
            return f"persistentvolumeclaim {name} is being bound to persistentvolume {bound_to}", []
        volume = self.volumes.get(bound_to)
        if volume is None:
            return f"persistentvolume {bound_to} of claim {name} not found", []
        return "", [match.node_terms(volume), *zone_terms(volume)]

    def _delayed(self, claim: Obj) -> DelayedClaim | None:
        """The claim as one the scheduler binds (unbound, of a WaitForFirstConsumer class); None when
        it is not. A claim naming no class is Immediate, as kube-scheduler takes it: the PV controller
        gives it the default class (and the DefaultStorageClass admission does at its creation)."""
        if (claim.get("spec") or {}).get("volumeName"):
            return None
        storage_class = self.classes.get(match.claim_class(claim) or "")
        if storage_class is None or storage_class.get("volumeBindingMode") != WAIT_FOR_FIRST_CONSUMER:
            return None
        return DelayedClaim(claim, storage_class)

    def delayed_claims(self, pod: Obj) -> list[DelayedClaim]:
        """The pod's claims the scheduler binds before the pod (see `_delayed`)."""
        if not (pod.get("spec") or {}).get("volumes"):
            return []
        namespace = (pod.get("metadata") or {}).get("namespace", "default")
        out = []
        for _, claim_name, _ in self.pod_claims(pod):
            claim = self.claims.get((namespace, claim_name))
            delayed = self._delayed(claim) if claim is not None else None
            if delayed is not None:
                out.append(delayed)
        return out

    def _delayed_terms(self, delayed: DelayedClaim) -> tuple[str, list[list[Obj]]]:
        """Where an unbound WaitForFirstConsumer claim can be satisfied, as one list of ORed node
        selector terms ([] when anywhere), or why nowhere."""
        claim, storage_class = delayed.claim, delayed.storage_class
        name = claim["metadata"]["name"]
        selected = match.annotations_of(claim).get(match.SELECTED_NODE)
        if selected:  # provisioning was asked for that node: only there
            return "", [[{"matchFields": [{"key": "metadata.name", "operator": "In", "values": [selected]}]}]]
        mine = self.volume_of(claim)
        if mine is not None:
            terms = match.node_terms(mine)
            return "", [terms] if terms else []
        ored: list[Obj] = []
        for volume in self.candidates(claim, storage_class):
            terms = match.node_terms(volume)
            if not terms:
                return "", []  # a fitting volume usable anywhere
            ored.extend(terms)
        if match.can_provision(storage_class):
            allowed = topology_as_node_terms(storage_class.get("allowedTopologies") or [])
            if not allowed:
                return "", []
            ored.extend(allowed)
        if not ored:
            class_name = storage_class["metadata"]["name"]
            return (
                f"persistentvolumeclaim {name}: {NO_VOLUME_TO_BIND} (no available volume of StorageClass "
                f"{class_name} fits it, and the class does not provision)"
            ), []
        return "", [compact(ored)]

    def not_honoured(self, pod: Obj) -> list[str]:
        """What of the pod's volumes would constrain its placement in kube-scheduler and is not honoured
        here: a claim to be provisioned by a CSI driver that tracks storage capacity (its CSIDriver's
        `storageCapacity`): kube-scheduler keeps it to the nodes whose CSIStorageCapacity has room."""
        out = []
        for delayed in self.delayed_claims(pod):
            provisioner = delayed.storage_class.get("provisioner") or ""
            driver = self.csidrivers.get(provisioner) or {}
            if (driver.get("spec") or {}).get("storageCapacity") is True:
                name = delayed.claim["metadata"]["name"]
                out.append(
                    f"the storage capacity of CSI driver {provisioner} (CSIStorageCapacity) for claim "
                    f"{name}: its volume is provisioned on the chosen node whatever room the driver reports"
                )
        return out

    def candidates(self, claim: Obj, storage_class: Obj) -> list[Obj]:
        """The available volumes of the claim's class that fit it and no binding under way has chosen,
        smallest first."""
        found = [
            volume
            for name, volume in self.available.get(storage_class["metadata"]["name"], {}).items()
            if name not in self.reserved and match.fits(claim, volume)
        ]
        found.sort(
            key=lambda v: (match.storage((v.get("spec") or {}).get("capacity")), v["metadata"]["name"])
        )
        return found

    def csi_volumes(self, pod: Obj) -> dict[str, list[str]]:
        """The CSI volumes the pod attaches, driver -> volume handles, as NodeVolumeLimits counts them:
        its bound claims' CSI volumes (generic ephemeral ones included), its unbound WaitForFirstConsumer
        claims as volumes of their class's provisioner (one each: `<namespace>/<claim>`), its inline
        CSI volumes (one of each per pod: `<namespace>-<pod>-<volume>`), and its in-tree volumes, inline
        or bound, as CSI migration hands them to a CSI driver (`migrated`)."""
        meta, spec = pod.get("metadata") or {}, pod.get("spec") or {}
        namespace, pod_name = meta.get("namespace", "default"), meta.get("name", "")
        found: dict[str, list[str]] = {}
        for volume in spec.get("volumes") or []:
            if "csi" in volume:
                driver = str((volume["csi"] or {}).get("driver", ""))
                handle = f"{namespace}-{pod_name}-{volume.get('name', '')}"
            else:
                driver, handle = migrated(volume)
            if driver:
                found.setdefault(driver, []).append(handle)
        for _, claim_name, _ in self.pod_claims(pod):
            claim = self.claims.get((namespace, claim_name)) or {}
            bound = self.volumes.get((claim.get("spec") or {}).get("volumeName") or "") or {}
            csi = (bound.get("spec") or {}).get("csi") or {}
            driver, handle = csi.get("driver", ""), csi.get("volumeHandle", "")
            if bound and not driver:
                driver, handle = migrated(bound.get("spec") or {})
            delayed = self._delayed(claim) if claim and not bound else None
            if delayed is not None and match.can_provision(delayed.storage_class):
                driver, handle = delayed.storage_class.get("provisioner", ""), f"{namespace}/{claim_name}"
            if driver and handle:
                found.setdefault(str(driver), []).append(str(handle))
        return found

    def rwop_claims(self, pod: Obj) -> list[str]:
        """The claims with access mode ReadWriteOncePod the pod uses, "<namespace>/<name>": no other pod
        of the cluster may use one at the same time (VolumeRestrictions)."""
        namespace = (pod.get("metadata") or {}).get("namespace", "default")
        found = []
        for _, claim_name, _ in self.pod_claims(pod):
            claim = self.claims.get((namespace, claim_name)) or {}
            if READ_WRITE_ONCE_POD in ((claim.get("spec") or {}).get("accessModes") or []):
                found.append(f"{namespace}/{claim_name}")
        return sorted(set(found))

    def tags(self, pod: Obj) -> dict[str, str]:
        """What the core is told of the pod's volumes, beside its node affinity: the CSI volumes it
        attaches (the nodes' attach limits count them), its ReadWriteOncePod claims (no other pod may
        use one meanwhile) and the in-tree disks it mounts (shared on a node only read-only)."""
        out: dict[str, str] = {}
        if not (pod.get("spec") or {}).get("volumes"):
            return out  # all three come from its volumes
        volumes = self.csi_volumes(pod)
        if volumes:
            out[TAG_CSI_VOLUMES] = json.dumps(volumes, sort_keys=True)
        claims = self.rwop_claims(pod)
        if claims:
            out[TAG_RWOP_CLAIMS] = json.dumps(claims)
        mounted = disks(pod)
        if mounted:
            out[TAG_DISKS] = json.dumps(mounted)
        return out

    def csi_limits(self, node_name: str) -> dict[str, int]:
        """How many volumes of each CSI driver the node can attach (its CSINode's allocatable counts)."""
        drivers = ((self.csinodes.get(node_name) or {}).get("spec") or {}).get("drivers") or []
        return {
            str(d["name"]): int(d["allocatable"]["count"])
            for d in drivers
            if d.get("name") and isinstance((d.get("allocatable") or {}).get("count"), int)
        }


def _older(obj: Obj, cached: Obj | None) -> bool:
    """Whether `obj` is an older version than the one kept (our own write, assumed before the informers
    bring it); versions that are not numbers are never older."""
    if cached is None:
        return False
    new, kept = match.version(obj), match.version(cached)
    return new is not None and kept is not None and new < kept
