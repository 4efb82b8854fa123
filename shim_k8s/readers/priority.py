"""Pod priority as Kubernetes defines it (../shared/design/kubernetes-priority.md), resolved by the shim.

- `spec.priority` set (the Priority admission plugin fills it in): that value.
- Otherwise `spec.priorityClassName`: the PriorityClass's value; `system-cluster-critical` and
  `system-node-critical` are known without objects; an unknown name is an error (the pod waits).
- No class name: the value of the class marked `globalDefault`, or 0 when there is none.

Preemption: `preemptionPolicy: Never` (on the pod, else on its class) means the pod may not preempt
others; the annotation `yunikorn.apache.org/allow-preemption: "false"` protects the pod from being
preempted, on the pod itself or on its PriorityClass (the pod's own annotation wins, as YuniKorn
documents).
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any

SYSTEM_CLUSTER_CRITICAL = 2_000_000_000
SYSTEM_NODE_CRITICAL = 2_000_001_000
SYSTEM_CLASSES = {
    "system-cluster-critical": SYSTEM_CLUSTER_CRITICAL,
    "system-node-critical": SYSTEM_NODE_CRITICAL,
}
ANNOTATION_ALLOW_PREEMPTION = "yunikorn.apache.org/allow-preemption"
NEVER = "Never"


class UnknownPriorityClass(LookupError):
    def __init__(self, name: str) -> None:
        self.name = name
        super().__init__(f"priority class {name!r} does not exist; the pod waits until it does")


@dataclass(frozen=True)
class PriorityClassInfo:
    name: str
    value: int
    global_default: bool = False
    preemption_policy: str = "PreemptLowerPriority"
    allow_preemption: bool = True  # may pods of this class be preempted

    @classmethod
    def from_object(cls, obj: Mapping[str, Any]) -> PriorityClassInfo:
        meta = obj.get("metadata") or {}
        annotations = meta.get("annotations") or {}
        return cls(
            name=meta.get("name", ""),
            value=int(obj.get("value") or 0),  # null is 0, as Go decodes it
            global_default=bool(obj.get("globalDefault", False)),
            preemption_policy=obj.get("preemptionPolicy") or "PreemptLowerPriority",
            allow_preemption=str(annotations.get(ANNOTATION_ALLOW_PREEMPTION, "true")).lower() != "false",
        )


@dataclass(frozen=True)
class PodPriority:
    value: int
    allow_preempt_other: bool  # the pod may trigger preemption
    allow_preempt_self: bool  # the pod may be preempted


class PriorityResolver:
    """Keeps the cluster's PriorityClasses (fed by an informer) and resolves pods against them."""

    def __init__(self) -> None:
        self.classes: dict[str, PriorityClassInfo] = {}

    def upsert(self, obj: Mapping[str, Any]) -> None:
        info = PriorityClassInfo.from_object(obj)
        self.classes[info.name] = info

    def remove(self, name: str) -> None:
        self.classes.pop(name, None)

    def global_default(self) -> PriorityClassInfo | None:
        defaults = [c for c in self.classes.values() if c.global_default]
        return max(defaults, key=lambda c: c.value) if defaults else None

    def resolve(self, pod: Mapping[str, Any]) -> PodPriority:
        spec = pod.get("spec") or {}
        name = spec.get("priorityClassName") or ""
        info = self.classes.get(name) if name else self.global_default()
        if spec.get("priority") is not None:
            value = int(spec["priority"])
        elif name in self.classes:
            value = self.classes[name].value
        elif name in SYSTEM_CLASSES:
            value = SYSTEM_CLASSES[name]
        elif name:
            raise UnknownPriorityClass(name)
        else:
            value = info.value if info is not None else 0
        policy = spec.get("preemptionPolicy") or (info.preemption_policy if info is not None else "")
        own = ((pod.get("metadata") or {}).get("annotations") or {}).get(ANNOTATION_ALLOW_PREEMPTION)
        if own is not None:
            allow_preempt_self = str(own).lower() != "false"
        else:
            allow_preempt_self = info.allow_preemption if info is not None else True
        return PodPriority(
            value=value, allow_preempt_other=policy != NEVER, allow_preempt_self=allow_preempt_self
        )
