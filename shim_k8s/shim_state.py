"""What the Kubernetes shim remembers between informer events (rebuilt on every re-sync with the
core): its pods' records (shim_k8s.pod_ledger) and what is not a pod's; what every part of the shim
reads of the whole (`ShimBase`), and small reads of a pod object:
where it runs, whether it is done, and what of it is compared from one event to the next."""

from __future__ import annotations

from collections.abc import Coroutine, Iterable, Mapping
from dataclasses import dataclass, field
from typing import Any, Protocol

from shim_k8s.api.kube import KubeActions
from shim_k8s.api.objects import Obj
from shim_k8s.pod_ledger import PodLedger
from shim_k8s.readers import task_groups


@dataclass
class AppGang:
    """A gang-scheduled application's task groups, from its originator's annotations."""

    groups: dict[str, task_groups.TaskGroup]
    policy: task_groups.GangPolicy
    placeholders_exist: bool = False  # made already (by us before a restart, or just now)
    originator: Obj | None = None  # the pod that declared the gang: its progress events go there
    complete: bool = False  # its reservation completed (said once)


@dataclass
class ShimState:
    """What the shim remembers besides its pods' records (the ledger): the nodes, the applications, the
    gangs, and the pods waiting for something outside them."""

    ledger: PodLedger = field(default_factory=PodLedger)  # one record per pod (shim_k8s.pod_ledger)
    nodes: dict[str, Obj] = field(default_factory=dict)
    apps: set[str] = field(default_factory=set)  # applications the core accepted or was told about
    waiting_for_class: dict[str, Obj] = field(default_factory=dict)  # pods with an unknown class
    waiting_for_volumes: dict[str, Obj] = field(default_factory=dict)  # gated, or volumes not ready
    # The pods waiting for volumes, by what would let them go (shim_k8s.volumes.cache.Volumes.wait_keys):
    # a claim, a volume or a class -> pod UIDs. Only they are looked at again when it changes.
    waiting_on: dict[str, set[str]] = field(default_factory=dict)
    # The node selector terms a pod's volumes gave when it was asked for (JSON): a binding that fails
    # with the same terms still in force waits for a change instead of asking again.
    volume_terms: dict[str, str] = field(default_factory=dict)
    gangs: dict[str, AppGang] = field(default_factory=dict)  # gang-scheduled applications, by app ID
    # Running pods the core refused because it did not know their node: node -> pod UIDs, sent again
    # when the node is added.
    orphans: dict[str, set[str]] = field(default_factory=dict)
    # Pods whose ask the core refused because it did not hold their application yet (it read the ask
    # first and could not hold it, or knew only an older rejection of the ID): application -> pod UIDs,
    # asked again once the core accepts it.
    reask: dict[str, set[str]] = field(default_factory=dict)

    def wait(self, uid: str, pod: Obj, keys: Iterable[str]) -> None:
        """The pod waits (gated, or for its volumes), to be looked at again when one of `keys` changes
        (Volumes.wait_keys)."""
        self.waiting_for_volumes[uid] = pod
        for key in keys:
            self.waiting_on.setdefault(key, set()).add(uid)

    def stop_waiting(self, uid: str, keys: Iterable[str]) -> None:
        if self.waiting_for_volumes.pop(uid, None) is not None:
            for key in keys:
                self.waiting_on.get(key, set()).discard(uid)

    def woken_by(self, keys: Iterable[str]) -> list[Obj]:
        """The waiting pods that any of `keys` concerns, no longer waiting (to be looked at again)."""
        woken: set[str] = set()
        for key in keys:
            woken |= self.waiting_on.pop(key, set())
        return [pod for uid in sorted(woken) if (pod := self.waiting_for_volumes.pop(uid, None)) is not None]


class ShimBase(Protocol):
    """What every part of the shim (pods, decisions, gangs, reconciliation) reads of it."""

    @property
    def state(self) -> ShimState: ...
    @property
    def kube(self) -> KubeActions: ...
    def in_background(self, work: Coroutine[Any, Any, None]) -> None: ...


def node_of(pod: Obj) -> str:
    return (pod.get("spec") or {}).get("nodeName") or ""


def finished(pod: Obj) -> bool:
    return (pod.get("status") or {}).get("phase") in ("Succeeded", "Failed")


def terminating(pod: Obj) -> bool:
    return bool((pod.get("metadata") or {}).get("deletionTimestamp"))


def began_terminating(pod: Obj, known: Obj) -> bool:
    """Its deletion began with this event (it was bound before it or in it) while it still runs on a node:
    the core is to hear it, as topology spread stops counting a terminating pod."""
    return bool(node_of(pod)) and terminating(pod) and not terminating(known) and not finished(pod)


def readings(pod: Obj) -> tuple[object, object]:
    """What the shim reads of a pod, its metadata and spec (not its status, which the kubelet and the
    shim's own condition patches change): a refused pod is looked at again when this changes."""
    meta = pod.get("metadata") if isinstance(pod, Mapping) else None
    if isinstance(meta, Mapping):
        meta = {k: v for k, v in meta.items() if k not in ("resourceVersion", "managedFields")}
    return meta, pod.get("spec") if isinstance(pod, Mapping) else None


def sizing(pod: Obj) -> tuple[object, ...]:
    """What a running pod's size is computed from, cheap to gather: compared before computing it (the
    kubelet changes its status often, its containers' sizes rarely)."""
    spec, status = pod.get("spec") or {}, pod.get("status") or {}
    statuses = [*(status.get("containerStatuses") or ()), *(status.get("initContainerStatuses") or ())]
    conditions = status.get("conditions") or ()
    sizes = [(s.get("name"), s.get("allocatedResources"), s.get("resources")) for s in statuses if _is_obj(s)]
    return (
        spec.get("containers"), spec.get("initContainers"), spec.get("resources"), spec.get("overhead"),
        sizes, [c for c in conditions if _is_obj(c) and c.get("type") == "PodResizePending"],
        status.get("resize"),
    )  # fmt: skip


def _is_obj(value: object) -> bool:
    return isinstance(value, Mapping)


def is_bound(pod: Obj) -> bool:
    """On a node already; a pod too malformed to say is taken as pending (add_pod refuses it)."""
    spec = pod.get("spec") if isinstance(pod, Mapping) else None
    return isinstance(spec, Mapping) and bool(spec.get("nodeName"))
