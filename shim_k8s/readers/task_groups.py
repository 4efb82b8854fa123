"""Gang scheduling annotations, as YuniKorn's k8s shim reads them, and the placeholder pods it makes.

- `yunikorn.apache.org/task-groups` on the application's first pod (the originator, e.g. a Spark
  driver): a JSON list of task groups, each `name`, `minMember`, `minResource`, and optionally
  `nodeSelector`, `tolerations`, `affinity`, `topologySpreadConstraints`, `labels`, `annotations`.
- `yunikorn.apache.org/task-group-name` on each member pod: the task group it belongs to.
- `yunikorn.apache.org/schedulingPolicyParameters`: `placeholderTimeoutInSeconds=N` and
  `gangSchedulingStyle=Soft|Hard`, separated by spaces.

A placeholder pod holds one member's room: the pause image, the group's `minResource` as requests and
limits, the group's constraints, owned by the originator pod so that it goes when the job goes.
"""

from __future__ import annotations

import json
import secrets
import string
from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import Any

from shim_k8s.api.objects import Obj
from shim_k8s.readers.bad_objects import Refused
from shim_k8s.readers.partitions import PARTITION_KEY
from shim_k8s.readers.translate import PLACEHOLDER, TASK_GROUP_NAME, quantities

TASK_GROUPS = "yunikorn.apache.org/task-groups"
SCHEDULING_POLICY = "yunikorn.apache.org/schedulingPolicyParameters"
DEFAULT_PLACEHOLDER_IMAGE = "registry.k8s.io/pause:3.7"  # YuniKorn's default
STYLES = ("Soft", "Hard")
_GROUP_KEYS = frozenset(
    {"name", "minMember", "minResource", "nodeSelector", "tolerations", "affinity",
     "topologySpreadConstraints", "labels", "annotations"}
)  # fmt: skip
_NONCE = string.ascii_lowercase + string.digits


class TaskGroupError(ValueError):
    """The task-groups annotation cannot be used; the text says why (it goes into a pod event)."""


@dataclass(frozen=True)
class TaskGroup:
    name: str
    min_member: int
    min_resource: dict[str, str]  # Kubernetes quantities, as written
    node_selector: dict[str, str] = field(default_factory=dict)
    tolerations: list[Any] = field(default_factory=list)
    affinity: dict[str, Any] = field(default_factory=dict)
    topology_spread: list[Any] = field(default_factory=list)
    labels: dict[str, str] = field(default_factory=dict)
    annotations: dict[str, str] = field(default_factory=dict)

    def member_size(self) -> dict[str, int]:
        """One member's size as the core counts a pod: its requests plus one `pods` slot."""
        size = quantities(self.min_resource)
        size["pods"] = 1
        return size


@dataclass(frozen=True)
class GangPolicy:
    timeout_seconds: int = 0  # 0: the core's default (15 minutes)
    style: str = "Soft"
    warnings: tuple[str, ...] = ()  # parameters not used as written, each named


def _annotations(pod: Obj) -> Mapping[str, str]:
    return (pod.get("metadata") or {}).get("annotations") or {}


def task_group_name(pod: Obj) -> str:
    return _annotations(pod).get(TASK_GROUP_NAME, "")


def in_yunikorn_gang(pod: Obj) -> bool:
    """Whether the pod carries YuniKorn's gang annotations: a member's task group or the groups."""
    annotations = _annotations(pod)
    return TASK_GROUP_NAME in annotations or TASK_GROUPS in annotations


def task_groups(pod: Obj) -> list[TaskGroup]:
    """The pod's task groups; [] without the annotation; TaskGroupError when it cannot be used."""
    raw = _annotations(pod).get(TASK_GROUPS)
    if not raw:
        return []
    try:
        items = json.loads(raw)
    except json.JSONDecodeError as exc:
        raise TaskGroupError(f"annotation {TASK_GROUPS} is not JSON: {exc}") from None
    if not isinstance(items, list) or not items:
        raise TaskGroupError(f"annotation {TASK_GROUPS} must be a non-empty JSON list of task groups")
    groups = [_task_group(item, i) for i, item in enumerate(items)]
    names = [g.name for g in groups]
    duplicate = next((n for n in names if names.count(n) > 1), None)
    if duplicate is not None:
        raise TaskGroupError(f"task group {duplicate!r} is declared twice in {TASK_GROUPS}")
    return groups


def _task_group(item: Any, index: int) -> TaskGroup:
    where = f"{TASK_GROUPS}[{index}]"
    if not isinstance(item, dict):
        raise TaskGroupError(f"{where} is not an object")
    unknown = sorted(set(item) - _GROUP_KEYS)
    if unknown:
        raise TaskGroupError(f"{where} has unknown fields {unknown} (known: {sorted(_GROUP_KEYS)})")
    name = item.get("name")
    if not isinstance(name, str) or not name:
        raise TaskGroupError(f"{where} has no name")
    members = item.get("minMember")
    if not isinstance(members, int) or isinstance(members, bool) or members < 1:
        raise TaskGroupError(
            f"{where} ({name}): minMember must be a whole number of at least 1, got {members!r}"
        )
    resources = item.get("minResource")
    if not isinstance(resources, dict) or not resources:
        raise TaskGroupError(f"{where} ({name}): minResource must name at least one resource")
    min_resource = {str(k): str(v) for k, v in resources.items()}
    try:
        size = quantities(min_resource, f"{where} ({name}) minResource")
    except Refused as exc:
        raise TaskGroupError(str(exc)) from None
    if any(v < 0 for v in size.values()) or "pods" in size:
        raise TaskGroupError(f"{where} ({name}): minResource must be positive quantities (pods is implied)")
    return TaskGroup(
        name=name,
        min_member=members,
        min_resource=min_resource,
        node_selector=_typed(item, "nodeSelector", dict, where),
        tolerations=_typed(item, "tolerations", list, where),
        affinity=_typed(item, "affinity", dict, where),
        topology_spread=_typed(item, "topologySpreadConstraints", list, where),
        labels=_typed(item, "labels", dict, where),
        annotations=_typed(item, "annotations", dict, where),
    )


def _typed(item: dict[str, Any], key: str, kind: type, where: str) -> Any:
    value = item.get(key)
    if value is None:
        return kind()
    if not isinstance(value, kind):
        raise TaskGroupError(f"{where}: {key} must be a JSON {'object' if kind is dict else 'list'}")
    return value


def gang_policy(pod: Obj) -> GangPolicy:
    """`placeholderTimeoutInSeconds=N gangSchedulingStyle=Soft|Hard`; anything else is named in a
    warning and left at its default, as YuniKorn does."""
    raw = _annotations(pod).get(SCHEDULING_POLICY, "")
    timeout, style, warnings = 0, "Soft", []
    for part in raw.split():
        key, sep, value = part.partition("=")
        if not sep:
            warnings.append(f"{SCHEDULING_POLICY}: {part!r} is not key=value; ignored")
        elif key == "placeholderTimeoutInSeconds":
            if value.isdigit():
                timeout = int(value)
            else:
                why = f"placeholderTimeoutInSeconds {value!r} is not a number; the default timeout is used"
                warnings.append(f"{SCHEDULING_POLICY}: {why}")
        elif key == "gangSchedulingStyle":
            if value in STYLES:
                style = value
            else:
                warnings.append(
                    f"{SCHEDULING_POLICY}: gangSchedulingStyle {value!r} is not Soft or Hard; Soft is used"
                )
        else:
            warnings.append(f"{SCHEDULING_POLICY}: unknown parameter {key!r}; ignored")
    return GangPolicy(timeout, style, tuple(warnings))


def gang_size(groups: list[TaskGroup]) -> dict[str, int]:
    """The application's placeholderAsk: every group's members at their size."""
    total: dict[str, int] = {}
    for group in groups:
        for name, value in group.member_size().items():
            total[name] = total.get(name, 0) + value * group.min_member
    return total


def placeholder_pod(
    originator: Obj,
    app_id: str,
    queue: str,
    group: TaskGroup,
    image: str,
    scheduler_name: str,
    identity: Mapping[str, int] | None = None,
) -> dict[str, Any]:
    """A placeholder pod for one member of `group`, in the originator's namespace and owned by it;
    `identity`: runAsUser, runAsGroup and fsGroup for its security context (service.placeholder*)."""
    meta, spec = originator.get("metadata") or {}, originator.get("spec") or {}
    annotations = {**group.annotations, PLACEHOLDER: "true", TASK_GROUP_NAME: group.name}
    for key in (TASK_GROUPS, SCHEDULING_POLICY):  # copied, so a restart can rebuild the gang from them
        if key in _annotations(originator):
            annotations[key] = _annotations(originator)[key]
    labels = {**group.labels, "applicationId": app_id}
    if queue:
        labels["queue"] = queue
    partition = (meta.get("labels") or {}).get(PARTITION_KEY)
    if partition:  # its originator's partition, when the originator names one itself
        labels[PARTITION_KEY] = partition
    owner = {
        "apiVersion": "v1", "kind": "Pod", "name": meta.get("name", ""), "uid": meta.get("uid", ""),
        "controller": False, "blockOwnerDeletion": True,
    }  # fmt: skip
    requests = dict(group.min_resource)
    pod_spec: dict[str, Any] = {
        "schedulerName": scheduler_name,
        "restartPolicy": "Never",
        "terminationGracePeriodSeconds": 0,
        "securityContext": {
            "runAsNonRoot": True, "seccompProfile": {"type": "RuntimeDefault"}, **(identity or {})
        },
        "containers": [{
            "name": "pause", "image": image, "imagePullPolicy": "IfNotPresent",
            "resources": {"requests": requests, "limits": requests},
            "securityContext": {"privileged": False, "allowPrivilegeEscalation": False,
                                "readOnlyRootFilesystem": True, "capabilities": {"drop": ["ALL"]}},
        }],
    }  # fmt: skip
    if spec.get("priorityClassName"):
        pod_spec["priorityClassName"] = spec["priorityClassName"]
    if spec.get("imagePullSecrets"):
        pod_spec["imagePullSecrets"] = spec["imagePullSecrets"]
    for key, value in (
        ("nodeSelector", group.node_selector), ("tolerations", group.tolerations),
        ("affinity", group.affinity), ("topologySpreadConstraints", group.topology_spread),
    ):  # fmt: skip
        if value:
            pod_spec[key] = value
    return {
        "apiVersion": "v1",
        "kind": "Pod",
        "metadata": {
            "name": placeholder_name(app_id, group.name),
            "namespace": meta.get("namespace", "default"),
            "labels": labels,
            "annotations": annotations,
            "ownerReferences": [owner],
        },
        "spec": pod_spec,
    }


def placeholder_name(app_id: str, group: str) -> str:
    """`tg-<app>-<group>-<nonce>` within Kubernetes' 63 characters, as YuniKorn names them."""
    nonce = "".join(secrets.choice(_NONCE) for _ in range(10))
    return f"tg-{app_id[:28]}-{group[:20]}-{nonce}".lower()
