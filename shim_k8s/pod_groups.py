"""Kubernetes' Workload API gangs on the shim's side (shim_k8s.readers.workload_ref reads the objects).

As kube-scheduler's GangScheduling PreEnqueue, a pod of a group is not asked for until it may be: its
Workload (v1alpha1) or PodGroup (v1alpha2) exists and names its group, and, for a gang, at least
`minCount` pods of the group are known. Meanwhile it waits with a PodScheduled condition and an event
that say why, and is looked at again when what it waits on arrives (the object, or one more member).
Once asked for, its ask names its group and minimum (si.v1.tags TAG_POD_GROUP*), and the core places
the group's minimum together or not at all (core.objects.pod_group): no placeholders.

A group's pods must be in one application (the core starts a group within one): a member whose
application differs from the group's first waits, and says so. A v1alpha2 PodGroup's status gets the
`PodGroupScheduled` condition as kube-scheduler writes it: True (`Scheduled`) once its minimum is
bound, False (`Unschedulable`) with the core's reason while its members wait for room.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, field
from datetime import UTC, datetime
from typing import Any, Protocol

import structlog

from shim_k8s.api.objects import Obj, WatchEvent, key_of
from shim_k8s.readers import service_config, task_groups
from shim_k8s.readers.bad_objects import Refused
from shim_k8s.readers.workload_ref import (
    PODGROUPS,
    WORKLOADS,
    GroupRef,
    Policy,
    diagnose,
    group_ref,
    podgroup_policy,
    workload_policy,
)
from shim_k8s.shim_state import ShimBase, node_of
from si.v1.tags import TAG_POD_GROUP, TAG_POD_GROUP_MIN_COUNT

log = structlog.get_logger("pykorn.k8s")

SCHEDULED_CONDITION = "PodGroupScheduled"  # scheduling.k8s.io/v1alpha2 PodGroupScheduled
MEMBERS = "members/"  # wait key prefix: one more member of this group may let its pods go


class ShimForPodGroups(ShimBase, Protocol):
    @property
    def service(self) -> service_config.ServiceConfig: ...


@dataclass
class Admission:
    """Whether a pending pod of a group may be asked for now."""

    wait: tuple[str, str] | None = None  # (event reason, why) it waits
    wait_keys: tuple[str, ...] = ()  # what it waits on (ledger.waits keys)
    tags: dict[str, str] = field(default_factory=dict)  # its ask's pod group tags
    notes: tuple[tuple[str, str], ...] = ()  # (reason, message) said once when it is asked for


_NOTHING = Admission()


class PodGroups:
    def __init__(self, shim: ShimForPodGroups) -> None:
        self.shim = shim
        self.objects: dict[str, Obj] = {}  # Workloads and PodGroups by GroupRef.object_key
        self._members: dict[str, set[str]] = {}  # group key -> our pods of it (not finished)
        self._group_of: dict[str, GroupRef] = {}  # pod UID -> its group
        self._app_of: dict[str, str] = {}  # group key -> its application (its first member's)
        self._bound: dict[str, set[str]] = {}  # group key -> members bound
        self._scheduled: dict[str, str] = {}  # PodGroup object key -> the condition last written

    @property
    def enabled(self) -> bool:
        service = self.shim.service
        return not (service.disable_workload_api or service.disable_gang_scheduling)

    # Objects ----------------------------------------------------------------------------------
    def on_object(self, kind: str, event: str, obj: Obj) -> list[str]:
        """A Workload or PodGroup changed; the wait keys it concerns (its pods look again). One that
        cannot be used is Refused (its last good state stays)."""
        meta = obj.get("metadata") or {}
        key = f"{kind}/{meta.get('namespace') or 'default'}/{meta.get('name', '')}"
        if event == WatchEvent.DELETED:
            self.objects.pop(key, None)
            self._scheduled.pop(key, None)
            return []
        found = diagnose(kind, obj)
        if found:
            raise Refused(found)
        self.objects[key] = obj
        return [key]

    # Members ----------------------------------------------------------------------------------
    def seen(self, pod: Obj) -> list[str]:
        """A pod of ours (pending or running) with its group counted; the wait keys to wake when it
        completes a group's minimum. Refused for a reference that cannot be read."""
        ref = group_ref(pod)
        if ref is None:
            return []
        uid = key_of(pod)
        self._group_of[uid] = ref
        members = self._members.setdefault(ref.key, set())
        if uid in members:
            return []
        members.add(uid)
        if node_of(pod):
            self._bound.setdefault(ref.key, set()).add(uid)
        # Its fellow members waiting for the group's minimum look again when this one completes it
        # (once, not at every member after: they were asked for then).
        policy = self._known_policy(ref)
        if policy is not None and policy.gang and len(members) == policy.min_count:
            return [MEMBERS + ref.key]
        return []

    def _known_policy(self, ref: GroupRef) -> Policy | None:
        try:
            policy = self._policy(ref)
        except Refused:
            return None
        return None if isinstance(policy, str) else policy

    def gone(self, uid: str) -> None:
        ref = self._group_of.pop(uid, None)
        if ref is None:
            return
        for table in (self._members, self._bound):
            members = table.get(ref.key)
            if members is not None:
                members.discard(uid)
                if not members:
                    del table[ref.key]
        if ref.key not in self._members:
            self._app_of.pop(ref.key, None)

    def admit(self, pod: Obj, app_id: str) -> Admission:
        """Whether the pending pod may be asked for now, and its ask's tags. A pod that carries
        YuniKorn's task-group annotations too is scheduled by its task group (one rule, said on it)."""
        ref = self._group_of.get(key_of(pod))
        if ref is None:
            return _NOTHING
        if task_groups.in_yunikorn_gang(pod):
            return Admission(notes=(("WorkloadGangIgnored", (
                f"the pod carries YuniKorn task-group annotations: its task group decides its gang, "
                f"and its {ref.describe()} is not used for scheduling")),))  # fmt: skip
        if not self.enabled:
            return Admission(notes=(("WorkloadGangIgnored", (
                f"{ref.describe()}: Workload API gangs are off (service.disableWorkloadAPI or "
                "service.disableGangScheduling): the pod is scheduled on its own")),))  # fmt: skip
        policy = self._policy(ref)
        if isinstance(policy, str):
            return Admission(wait=("WaitingForPodGroup", policy), wait_keys=(ref.object_key,))
        owner = self._app_of.setdefault(ref.key, app_id)
        if owner != app_id:
            why = (f"{ref.describe()} is scheduled in application {owner}, this pod is in {app_id}: a "
                   "group's pods must be in one application (same applicationId label, or none)")  # fmt: skip
            return Admission(wait=("PodGroupSpansApplications", why), wait_keys=(MEMBERS + ref.key,))
        known = len(self._members.get(ref.key, ()))
        if policy.gang and known < policy.min_count:
            why = (f"waiting for minCount pods from a gang to appear in scheduling queue: {known} of "
                   f"{policy.min_count} pods of {ref.describe()} exist")  # fmt: skip
            return Admission(wait=("WaitingForGang", why), wait_keys=(MEMBERS + ref.key,))
        return Admission(tags=_tags(ref, policy))

    def running_tags(self, pod: Obj) -> dict[str, str]:
        """The pod group tags of a running member, sent with it at a (re)start so that the core counts
        it in its group; none while the group's policy is not known or gangs are off."""
        ref = self._group_of.get(key_of(pod))
        if ref is None or not self.enabled or task_groups.in_yunikorn_gang(pod):
            return {}
        policy = self._known_policy(ref)
        return {} if policy is None else _tags(ref, policy)

    def _policy(self, ref: GroupRef) -> Policy | str:
        """The group's policy, or why it cannot be known yet (kube-scheduler's PreEnqueue words)."""
        obj = self.objects.get(ref.object_key)
        if ref.kind == PODGROUPS:
            if obj is None:
                return f"waiting for pod's pod group {ref.name!r} to appear in scheduling queue"
            return podgroup_policy(obj)
        if obj is None:
            return f"waiting for pod's workload {ref.name!r} to appear in scheduling queue"
        policy = workload_policy(obj, ref.pod_group)
        if policy is None:
            return f"pod group {ref.pod_group!r} doesn't exist for a workload {ref.name!r}"
        return policy

    # A PodGroup's status (v1alpha2) -----------------------------------------------------------
    def bound(self, pod: Obj) -> None:
        """A member was bound: the PodGroup scheduled once its minimum is."""
        ref = self._group_of.get(key_of(pod))
        if ref is None:
            return
        bound = self._bound.setdefault(ref.key, set())
        bound.add(key_of(pod))
        if ref.kind != PODGROUPS:
            return
        obj = self.objects.get(ref.object_key)
        if obj is None:
            return
        policy = podgroup_policy(obj)
        if len(bound) >= max(policy.min_count, 1):
            self._write(ref, obj, "True", "Scheduled", "")

    def waits(self, pod: Obj, why: str) -> None:
        """The core says a member waits for room: so does its PodGroup, until it is scheduled."""
        ref = self._group_of.get(key_of(pod))
        if ref is None or ref.kind != PODGROUPS:
            return
        obj = self.objects.get(ref.object_key)
        if obj is not None and self._scheduled.get(ref.object_key, "").split(":", 1)[0] != "True":
            self._write(ref, obj, "False", "Unschedulable", why)

    def _write(self, ref: GroupRef, obj: Obj, status: str, reason: str, message: str) -> None:
        said = f"{status}:{reason}:{message}"
        if self._scheduled.get(ref.object_key) == said:
            return
        self._scheduled[ref.object_key] = said
        condition = scheduled_condition(obj, status, reason, message)
        self.shim.in_background(self.shim.kube.set_podgroup_condition(obj, condition))


def _tags(ref: GroupRef, policy: Policy) -> dict[str, str]:
    tags = {TAG_POD_GROUP: ref.key}
    if policy.gang:
        tags[TAG_POD_GROUP_MIN_COUNT] = str(policy.min_count)
    return tags


def scheduled_condition(obj: Mapping[str, Any], status: str, reason: str, message: str) -> Obj:
    """A metav1.Condition of type PodGroupScheduled; its lastTransitionTime kept while its status
    stays, as conditions are written."""
    conditions = (obj.get("status") or {}).get("conditions") or []
    before = next(
        (c for c in conditions if isinstance(c, Mapping) and c.get("type") == SCHEDULED_CONDITION), None
    )
    since = (
        before.get("lastTransitionTime") if before is not None and before.get("status") == status else None
    )
    return {
        "type": SCHEDULED_CONDITION,
        "status": status,
        "reason": reason,
        "message": message,
        "observedGeneration": (obj.get("metadata") or {}).get("generation", 0),
        "lastTransitionTime": since or datetime.now(UTC).strftime("%Y-%m-%dT%H:%M:%SZ"),
    }


__all__ = ["PODGROUPS", "WORKLOADS", "Admission", "PodGroups", "scheduled_condition"]
