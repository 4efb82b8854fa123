"""The user and group limits of one partition's queues, as the configuration sets them.

A `limits` entry on a queue applies to each user and group it lists, separately (a list is not a
shared total). At one queue a named user's limit takes the place of the wildcard (`*`) user limit;
a user named nowhere gets the wildcard's. Groups are different: each application is tracked under at
most one group, chosen walking up from its leaf (see `group_for`), and the wildcard group is one
shared tracker, `*`, for every application that resolves to it (YuniKorn's ugm does the same).
"""

from __future__ import annotations

from collections.abc import Iterable, Sequence
from dataclasses import dataclass, field

from core.config.schema import ROOT_QUEUE, LimitConfig, QueueConfig
from core.resources import Resource

WILDCARD = "*"


@dataclass(frozen=True)
class Limit:
    max_resources: Resource | None  # None: resources are not limited; a type not named is not limited
    max_applications: int  # 0: not limited

    def describe(self) -> str:
        parts = []
        if self.max_resources is not None:
            parts.append(f"maxresources {self.max_resources.as_dict()}")
        if self.max_applications:
            parts.append(f"maxapplications {self.max_applications}")
        return ", ".join(parts)


@dataclass
class QueueLimits:
    """The limits configured on one queue."""

    users: dict[str, Limit] = field(default_factory=dict)
    user_wildcard: Limit | None = None
    groups: dict[str, Limit] = field(default_factory=dict)  # in configuration order
    group_wildcard: Limit | None = None

    def for_user(self, user: str) -> Limit | None:
        named = self.users.get(user)
        return named if named is not None else self.user_wildcard

    def for_group(self, group: str) -> Limit | None:
        if group == WILDCARD:
            return self.group_wildcard
        return self.groups.get(group)


def _limit(config: LimitConfig) -> Limit:
    return Limit(config.max_resources, config.max_applications)


def queue_limits(configs: Iterable[LimitConfig]) -> QueueLimits:
    out = QueueLimits()
    for config in configs:
        limit = _limit(config)
        for user in config.users:
            if user == WILDCARD:
                out.user_wildcard = limit
            else:
                out.users.setdefault(user, limit)
        for group in config.groups:
            if group == WILDCARD:
                out.group_wildcard = limit
            else:
                out.groups.setdefault(group, limit)
    return out


def limit_table(root: QueueConfig) -> dict[str, QueueLimits]:
    """Every configured queue's limits, by full name (lower case, as queue names are matched)."""
    table: dict[str, QueueLimits] = {}

    def walk(queue: QueueConfig, path: str) -> None:
        if queue.limits:
            table[path.lower()] = queue_limits(queue.limits)
        for child in queue.queues:
            walk(child, f"{path}.{child.name}")

    walk(root, ROOT_QUEUE)
    return table


def group_for(table: dict[str, QueueLimits], path_up: Sequence[str], groups: Sequence[str]) -> str | None:
    """The one group an application is tracked under, or None.

    From the leaf up (`path_up`: the queue's full names, leaf first): at the first queue that names one
    of the user's groups in a limit, the first such group in configuration order; at a queue with a
    wildcard group limit and none of the user's groups named, the wildcard's shared tracker `*`."""
    for path in path_up:
        limits = table.get(path.lower())
        if limits is None:
            continue
        for group in limits.groups:
            if group in groups:
                return group
        if limits.group_wildcard is not None:
            return WILDCARD
    return None
