"""A pod read once into what the shim decides on and sends: its application, node, priority, request,
the message for the core (its ask, or the allocation of a pod already running), why it may not be
asked for yet, its volumes' node terms, and what it carries that pykorn does not honour.

Everything is read before anything is sent or remembered: a pod that cannot be read raises (Refused
for a field at fault, UnknownPriorityClass for a class not known yet), and is refused whole by the
caller (shim_k8s.pods decides on the reading; K8sShim.guarded refuses). The reader holds what a
reading looks up beside the pod: the PriorityClasses, the volumes, the namespaces.
"""

from __future__ import annotations

import json
from collections.abc import Callable, Mapping
from dataclasses import dataclass
from typing import Any, Protocol

from shim_k8s.api.objects import Obj, key_of
from shim_k8s.pod_groups import Admission
from shim_k8s.readers import pod_identity, translate
from shim_k8s.readers.priority import PodPriority, PriorityResolver
from shim_k8s.shim_state import node_of
from shim_k8s.volumes.cache import Volumes
from si.v1 import si_pb2

_NOTHING_SENT: dict[str, int] = {}  # the request of a reading that sends nothing (never changed)
FOREIGN_PRIORITY = PodPriority(0, allow_preempt_other=False, allow_preempt_self=False)  # never ours to move


class GroupGate(Protocol):
    """Whether a pod of a Workload API group may be asked for (shim_k8s.pod_groups.PodGroups)."""

    def admit(self, pod: Obj, app_id: str) -> Admission: ...
    def running_tags(self, pod: Obj) -> dict[str, str]: ...


class _NoGroups:
    """No pod names a group (a reader on its own, in tests)."""

    def admit(self, pod: Obj, app_id: str) -> Admission:
        return _ADMITTED

    def running_tags(self, pod: Obj) -> dict[str, str]:
        return {}


_ADMITTED = Admission()


@dataclass(slots=True)
class PodReading:
    uid: str
    app_id: str
    node: str  # where it runs; "" while pending
    priority: PodPriority
    request: dict[str, int]  # in the core's units; empty when nothing is sent
    message: si_pb2.Allocation | None = None  # what the core is sent: its ask, or its running allocation
    wait: tuple[str, str] | None = None  # (event reason, why) it may not be asked for yet
    volume_terms: str = ""  # its volumes' node terms when asked (JSON), for a binding that fails
    notes: tuple[tuple[str, str], ...] = ()  # (reason, message) said once when it is first asked for
    wait_keys: tuple[str, ...] | None = None  # what its wait is on, when not its gates or volumes


class PodReader:
    def __init__(
        self,
        priorities: PriorityResolver,
        volumes: Volumes,
        namespaces: Mapping[str, Obj],
        app_id: Callable[[Obj], str],
        groups: GroupGate | None = None,
    ) -> None:
        self.priorities = priorities
        self.volumes = volumes
        self.namespaces = namespaces
        self.app_id = app_id
        # Kubernetes Workload API groups (shim_k8s.pod_groups): when a member may be asked for.
        self.groups: GroupGate = groups or _NoGroups()

    def read(self, pod: Obj, asked: bool) -> PodReading:
        """A pod of ours. `asked`: its ask was sent already, so no new one is read for it (a pending
        pod's reading then carries its application only)."""
        priority = self.priorities.resolve(pod)
        reading = PodReading(key_of(pod), self.app_id(pod), node_of(pod), priority, _NOTHING_SENT)
        labels = self.namespace_labels(pod)
        if reading.node:  # recovered: it already runs where it was bound
            reading.request = translate.pod_request(pod)
            reading.message = self.with_volumes(pod, translate.bound_pod_allocation(
                pod, priority, ours=True, task_group="", namespace_labels=labels, app_id=reading.app_id,
                request=reading.request,
            ))  # fmt: skip
            if tags := self.groups.running_tags(pod):  # counted in its group, at a restart
                reading.message.allocationTags.update(tags)
        elif not asked:
            reading.wait, volume_terms = self.why_wait(pod)
            admission = self.groups.admit(pod, reading.app_id)
            if reading.wait is None and admission.wait is not None:
                reading.wait, reading.wait_keys = admission.wait, admission.wait_keys
            elif reading.wait is None:
                if volume_terms or self.volumes.delayed_claims(pod):  # remembered for a failed binding
                    reading.volume_terms = terms_key(volume_terms)
                reading.request = translate.pod_request(pod)
                ignored = translate.ignored_placement(pod) + self.volumes.not_honoured(pod)
                reading.message = self.with_volumes(pod, translate.pod_ask(
                    pod, priority, reading.app_id, task_group="", volume_terms=volume_terms,
                    namespace_labels=labels, request=reading.request,
                ))  # fmt: skip
                if admission.tags:
                    reading.message.allocationTags.update(admission.tags)
                notes = pod_identity.identity_conflicts(pod) + list(admission.notes)
                if ignored:
                    notes.append(("PlacementConstraintsIgnored", "not honoured by pykorn yet, the pod is "
                                  f"placed without them: {'; '.join(ignored)}"))  # fmt: skip
                reading.notes = tuple(notes)
        return reading

    def foreign(self, pod: Obj) -> tuple[si_pb2.Allocation, dict[str, int]]:
        """Another scheduler's pod on its node: the allocation that counts it there (no queue's), and
        its size (remembered, so that an in-place resize is seen)."""
        request = translate.pod_request(pod)
        alloc = translate.bound_pod_allocation(
            pod, FOREIGN_PRIORITY, ours=False, namespace_labels=self.namespace_labels(pod), request=request
        )
        return self.with_volumes(pod, alloc), request

    def resized(self, pod: Obj, app_id: str, request: dict[str, int]) -> si_pb2.Allocation:
        """A running pod of ours at its new size."""
        return self.with_volumes(pod, translate.bound_pod_allocation(
            pod, self.priorities.resolve(pod), ours=True, app_id=app_id, request=request,
            namespace_labels=self.namespace_labels(pod),
        ))  # fmt: skip

    def why_wait(self, pod: Obj) -> tuple[tuple[str, str] | None, list[list[Any]]]:
        """Whether the pod may be asked for yet: ((event reason, why) it waits, or None) and, when it
        may, the node selector terms of its bound volumes."""
        gates = [g.get("name", "") for g in (pod.get("spec") or {}).get("schedulingGates") or []]
        if gates:  # Kubernetes: a gated pod is not scheduled until every gate is removed
            return (
                "SchedulingGated",
                f"waiting for its scheduling gates to be removed: {', '.join(gates)}",
            ), []
        why, volume_terms = self.volumes.placement(pod)
        return (("VolumesNotReady", why) if why else None), volume_terms

    def with_volumes(self, pod: Obj, alloc: si_pb2.Allocation) -> si_pb2.Allocation:
        """The allocation with its pod's volume tags (Volumes.tags)."""
        tags = self.volumes.tags(pod)
        if tags:  # (a protobuf map's update is Python's MutableMapping.update: slow even when empty)
            alloc.allocationTags.update(tags)
        return alloc

    def namespace_of(self, pod: Obj) -> Obj | None:
        return self.namespaces.get((pod.get("metadata") or {}).get("namespace", "default"))

    def namespace_labels(self, pod: Obj) -> Mapping[str, str]:
        return ((self.namespace_of(pod) or {}).get("metadata") or {}).get("labels") or {}


def terms_key(terms: list[list[Any]]) -> str:
    """Node selector terms as one comparable text."""
    return json.dumps(terms, sort_keys=True)
