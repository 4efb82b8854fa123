"""What the Kubernetes shim remembers between informer events (rebuilt on every re-sync with the
core): its pods' records (shim_k8s.pod_ledger) and what is not a pod's; what every part of the shim
reads of the whole (`ShimBase`), and small reads of a pod object:
where it runs, whether it is done, and what of it is compared from one event to the next."""

from __future__ import annotations

from collections.abc import Coroutine, Mapping
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
    """What the shim remembers besides its pods' records (the ledger): the nodes, the applications and
    the gangs."""

    ledger: PodLedger = field(default_factory=PodLedger)  # one record per pod (shim_k8s.pod_ledger)
    nodes: dict[str, Obj] = field(default_factory=dict)
    apps: set[str] = field(default_factory=set)  # applications the core accepted or was told about
    gangs: dict[str, AppGang] = field(default_factory=dict)  # gang-scheduled applications, by app ID


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
