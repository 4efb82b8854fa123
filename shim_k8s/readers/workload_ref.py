"""Kubernetes' Workload API as a pod and its objects say it (KEP-4671, feature gate GenericWorkload).

Two API versions, read as the API defines them (kubernetes/api v0.35.0 and v0.36.0):
- 1.35, `scheduling.k8s.io/v1alpha1`: a `Workload` lists `spec.podGroups[]`, each `name` and `policy`
  (`basic: {}` or `gang: {minCount}`); a pod names one with `spec.workloadRef` (`name`, `podGroup`,
  optional `podGroupReplicaKey`: each replica key is a gang of its own).
- 1.36, `scheduling.k8s.io/v1alpha2`: a `PodGroup` carries `spec.schedulingPolicy` (`basic` or
  `gang.minCount`, copied from its Workload's template) and a status the scheduler writes; a pod names
  one with `spec.schedulingGroup.podGroupName`.

What is read here is pure: which group a pod names, and a group's policy from its object. Keeping the
objects and the pods' counts, and deciding when a pod may be asked for, is shim_k8s.pod_groups.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any

from shim_k8s.readers.bad_objects import Refused

WORKLOADS, PODGROUPS = "workloads", "podgroups"  # the informers' kinds
NAME_LIMIT = 253  # a DNS subdomain's length, what the API allows for these names


@dataclass(frozen=True)
class GroupRef:
    """The pod group a pod names."""

    kind: str  # WORKLOADS (v1alpha1 workloadRef) or PODGROUPS (v1alpha2 schedulingGroup)
    namespace: str
    name: str  # the Workload's or the PodGroup's
    pod_group: str = ""  # v1alpha1: the group within the Workload
    replica_key: str = ""  # v1alpha1: each key a gang of its own

    @property
    def object_key(self) -> str:
        """The object it depends on, as the informer keys it: `<kind>/<namespace>/<name>`."""
        return f"{self.kind}/{self.namespace}/{self.name}"

    @property
    def key(self) -> str:
        """The gang: the pods counted together and the core's pod group name (its namespace in it, as
        two namespaces may each have a Workload of the name)."""
        if self.kind == PODGROUPS:
            return f"podgroup/{self.namespace}/{self.name}"
        replica = f"/{self.replica_key}" if self.replica_key else ""
        return f"workload/{self.namespace}/{self.name}/{self.pod_group}{replica}"

    def describe(self) -> str:
        if self.kind == PODGROUPS:
            return f"pod group {self.name!r}"
        replica = f" (replica {self.replica_key!r})" if self.replica_key else ""
        return f"pod group {self.pod_group!r} of workload {self.name!r}{replica}"


@dataclass(frozen=True)
class Policy:
    """A group's scheduling policy: `min_count` 0 for basic (pod by pod)."""

    min_count: int = 0

    @property
    def gang(self) -> bool:
        return self.min_count > 0


def group_ref(pod: Mapping[str, Any]) -> GroupRef | None:
    """The group the pod names, None when it names none; Refused for a reference that cannot be read
    (the API server would not have stored it)."""
    spec = pod.get("spec") or {}
    ref, sgroup = spec.get("workloadRef"), spec.get("schedulingGroup")
    if ref is None and sgroup is None:
        return None
    namespace = (pod.get("metadata") or {}).get("namespace") or "default"
    if ref is not None and sgroup is not None:
        raise Refused("spec.workloadRef and spec.schedulingGroup are both set; a pod names one group")
    if sgroup is not None:
        if not isinstance(sgroup, Mapping):
            raise Refused("spec.schedulingGroup must be an object")
        return GroupRef(PODGROUPS, namespace, _name(sgroup, "podGroupName", "spec.schedulingGroup"))
    if not isinstance(ref, Mapping):
        raise Refused("spec.workloadRef must be an object")
    replica = ref.get("podGroupReplicaKey") or ""
    if not isinstance(replica, str) or len(replica) > 63:
        raise Refused("spec.workloadRef.podGroupReplicaKey must be a DNS label")
    return GroupRef(
        WORKLOADS,
        namespace,
        _name(ref, "name", "spec.workloadRef"),
        _name(ref, "podGroup", "spec.workloadRef"),
        replica,
    )


def _name(obj: Mapping[str, Any], field: str, where: str) -> str:
    value = obj.get(field)
    if not isinstance(value, str) or not value or len(value) > NAME_LIMIT:
        raise Refused(f"{where}.{field} must name an object (1 to {NAME_LIMIT} characters)")
    return value


def workload_policy(workload: Mapping[str, Any], pod_group: str) -> Policy | None:
    """The policy of one of a v1alpha1 Workload's pod groups; None when it has no such group."""
    for group in (workload.get("spec") or {}).get("podGroups") or []:
        if isinstance(group, Mapping) and group.get("name") == pod_group:
            return read_policy(group.get("policy"), f"podGroups[{pod_group}].policy")
    return None


def podgroup_policy(podgroup: Mapping[str, Any]) -> Policy:
    """A v1alpha2 PodGroup's policy."""
    return read_policy((podgroup.get("spec") or {}).get("schedulingPolicy"), "spec.schedulingPolicy")


def read_policy(raw: object, where: str) -> Policy:
    """`basic: {}` or `gang: {minCount: N}`, exactly one, as the API validates it."""
    if not isinstance(raw, Mapping):
        raise Refused(f"{where} must be an object with basic or gang")
    has_basic, gang = raw.get("basic") is not None, raw.get("gang")
    if has_basic == (gang is not None):
        raise Refused(f"{where}: exactly one of `basic`, `gang` is required")
    if gang is None:
        return Policy()
    count = gang.get("minCount") if isinstance(gang, Mapping) else None
    if not isinstance(count, int) or isinstance(count, bool) or count < 1:
        raise Refused(f"{where}.gang.minCount must be a whole number of at least 1, got {count!r}")
    return Policy(count)


def diagnose(kind: str, obj: Mapping[str, Any]) -> str:
    """What makes a Workload or PodGroup unusable ("" when nothing): the policies it carries."""
    try:
        if kind == PODGROUPS:
            podgroup_policy(obj)
        else:
            groups = (obj.get("spec") or {}).get("podGroups")
            if not isinstance(groups, list) or not groups:
                return "spec.podGroups must have at least one item"
            for i, group in enumerate(groups):
                if not isinstance(group, Mapping) or not isinstance(group.get("name"), str):
                    return f"spec.podGroups[{i}] must be an object with a name"
                read_policy(group.get("policy"), f"spec.podGroups[{i}].policy")
    except Refused as exc:
        return str(exc)
    return ""
