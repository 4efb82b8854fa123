"""What the Kubernetes shim remembers between informer events (rebuilt on every re-sync with the
core), and small reads of a pod object it and the reconciliation share."""

from __future__ import annotations

from dataclasses import dataclass, field

from shim_k8s import task_groups
from shim_k8s.api.objects import Obj


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
    nodes: dict[str, Obj] = field(default_factory=dict)
    pods: dict[str, Obj] = field(default_factory=dict)  # by UID
    apps: set[str] = field(default_factory=set)  # applications the core accepted or was told about
    asked: dict[str, str] = field(default_factory=dict)  # pod UID sent as an ask -> its application
    bound_by_us: set[str] = field(default_factory=set)
    foreign: set[str] = field(default_factory=set)
    waiting_for_class: dict[str, Obj] = field(default_factory=dict)  # pods with an unknown class
    waiting_for_volumes: dict[str, Obj] = field(default_factory=dict)  # gated, or volumes not ready
    gangs: dict[str, AppGang] = field(default_factory=dict)  # gang-scheduled applications, by app ID
    # pod UID -> the PodScheduled=False condition last patched, as "<reason>:<message>"
    unschedulable: dict[str, str] = field(default_factory=dict)
    # What the core holds for us, as it told us (its allocations less its and our releases), or as we
    # told it (bound pods sent on a re-sync): pod UID -> (application ID, node). Reconciliation
    # compares it with the API's pods.
    placed: dict[str, tuple[str, str]] = field(default_factory=dict)
    # Pods failed because the core will not schedule them (their application rejected or failed):
    # their phase is being set to Failed; nothing is asked for them again.
    given_up: set[str] = field(default_factory=set)
    # Placeholders the core released and we delete: their late watch events (the echo of their own
    # binding) are still ours, and their deletion tells the core nothing more.
    deleting: set[str] = field(default_factory=set)
    # What the core was told each of our pods and each foreign pod holds (their requests, in the
    # core's units): an in-place resize is a change of it.
    sizes: dict[str, dict[str, int]] = field(default_factory=dict)
    # Pods that could not be read (bad_objects), with what was read of them: looked at again when it changes.
    refused: dict[str, tuple[object, object]] = field(default_factory=dict)
    # Running pods the core refused because it did not know their node: node -> pod UIDs, sent again
    # when the node is added.
    orphans: dict[str, set[str]] = field(default_factory=dict)


def node_of(pod: Obj) -> str:
    return (pod.get("spec") or {}).get("nodeName") or ""


def finished(pod: Obj) -> bool:
    return (pod.get("status") or {}).get("phase") in ("Succeeded", "Failed")


def terminating(pod: Obj) -> bool:
    return bool((pod.get("metadata") or {}).get("deletionTimestamp"))
