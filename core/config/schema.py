"""The validated, immutable form of queues.yaml.

Names follow YuniKorn's configuration keys; resources are already parsed (memory in bytes, vcore in
milli-cores). Every object remembers the YAML line it came from so later checks can point at it.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from enum import StrEnum

from core.resources import Resource

ROOT_QUEUE = "root"
DEFAULT_PARTITION = "default"


class RuleName(StrEnum):
    """The placement rules YuniKorn defines (`placementrules[].name`, read in lower case)."""

    PROVIDED = "provided"  # the queue the application names
    USER = "user"  # a queue named after the user
    TAG = "tag"  # a queue named by one of the application's tags (`value` names the tag)
    FIXED = "fixed"  # the queue `value` names


@dataclass(frozen=True)
class Filter:
    type: str = "allow"  # allow | deny
    users: tuple[str, ...] = ()
    groups: tuple[str, ...] = ()


@dataclass(frozen=True)
class PlacementRuleConfig:
    name: RuleName
    create: bool = False
    value: str = ""
    parent: PlacementRuleConfig | None = None
    filter: Filter = field(default_factory=Filter)
    line: int = 0


@dataclass(frozen=True)
class LimitConfig:
    limit: str = ""
    users: tuple[str, ...] = ()
    groups: tuple[str, ...] = ()
    max_resources: Resource | None = None
    max_applications: int = 0
    # The quantities as written: YuniKorn compares a partition's and root's limits as written ("1k" is
    # not "1000" there); where a limit is written is no part of it.
    written: tuple[tuple[str, str], ...] = ()
    line: int = field(default=0, compare=False)


@dataclass(frozen=True)
class ChildTemplate:
    max_applications: int = 0
    properties: tuple[tuple[str, str], ...] = ()
    guaranteed: Resource | None = None
    max: Resource | None = None


@dataclass(frozen=True)
class QueueConfig:
    name: str
    parent: bool = False  # configured as a parent even when it has no children yet
    guaranteed: Resource | None = None
    max: Resource | None = None
    max_applications: int = 0  # 0: unlimited
    properties: tuple[tuple[str, str], ...] = ()
    submit_acl: str | None = None
    admin_acl: str | None = None
    child_template: ChildTemplate | None = None
    limits: tuple[LimitConfig, ...] = ()
    queues: tuple[QueueConfig, ...] = ()
    line: int = 0
    path: str = ""  # YAML path, for error messages
    # The line of each entry written under this queue, by path relative to it ("name",
    # "resources.max.memory"), so a check can point at the entry it is about rather than the queue.
    lines: tuple[tuple[str, int], ...] = field(default=(), compare=False, repr=False)

    @property
    def is_parent(self) -> bool:
        return self.parent or bool(self.queues)

    def property_map(self) -> dict[str, str]:
        return dict(self.properties)

    def line_of(self, relative_path: str) -> int:
        """The line of an entry under this queue; the queue's own line when it is not written."""
        return dict(self.lines).get(relative_path, self.line)


@dataclass(frozen=True)
class PreemptionConfig:
    enabled: bool = True
    quota_preemption_enabled: bool = False


@dataclass(frozen=True)
class NodeSortPolicyConfig:
    type: str = "fair"  # fair | binpacking
    resource_weights: tuple[tuple[str, float], ...] = ()


@dataclass(frozen=True)
class PartitionConfig:
    name: str
    root: QueueConfig
    placement_rules: tuple[PlacementRuleConfig, ...] = ()
    limits: tuple[LimitConfig, ...] = ()
    preemption: PreemptionConfig = field(default_factory=PreemptionConfig)
    node_sort_policy: NodeSortPolicyConfig = field(default_factory=NodeSortPolicyConfig)
    user_group_resolver: str = ""  # usergroupresolver.type: "" (no lookup) or os
    line: int = 0
    path: str = ""


@dataclass(frozen=True)
class SchedulerConfig:
    partitions: tuple[PartitionConfig, ...]
    source: str = ""  # the YAML text it was loaded from, for the REST config view

    def partition(self, name: str) -> PartitionConfig | None:
        for part in self.partitions:
            if part.name == name:
                return part
        return None
