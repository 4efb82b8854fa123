"""REST views of what users and groups use, shaped as YuniKorn's ugm DAO objects
(UserResourceUsageDAOInfo, GroupResourceUsageDAOInfo, ResourceUsageDAOInfo: same JSON field names,
empty fields left out as YuniKorn leaves them out).

Read from the applications when asked: a user's usage on a queue is what its running applications
(those with an allocation) hold in that queue or below; a group's, that of the running applications
that count against it. Unlike YuniKorn, whose user and group manager is one for the whole scheduler,
usage here is per partition, as the route's partition says.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

from core.config.names import valid_group, valid_user
from core.resources import Resource, int64_values
from core.scheduler.partition import Partition
from core.ugm.limits import WILDCARD, Limit
from core.ugm.tracker import SubjectKind, UserGroupTracker
from core.views.dao import BadRequest, NotFound

Json = dict[str, Any]


@dataclass
class _Level:
    resource: Resource = field(default_factory=Resource)
    running: set[str] = field(default_factory=set)


@dataclass
class _Usage:
    queues: dict[str, _Level] = field(default_factory=dict)  # by queue path
    groups: dict[str, str] = field(default_factory=dict)  # users: application -> its group


def _usage(part: Partition, kind: SubjectKind) -> dict[str, _Usage]:
    """Per user (or group, of those a limit names): what its running applications hold, per level;
    and every user and group a limit names, with the levels down to each queue that limits it, even
    when it runs nothing (YuniKorn tracks them from the moment the configuration names them)."""
    out: dict[str, _Usage] = {}
    tracker = part.user_groups
    for path, limits in tracker.table.items():
        if kind is SubjectKind.USER:
            named: list[str] = list(limits.users)
        else:
            named = [*limits.groups, *([WILDCARD] if limits.group_wildcard is not None else [])]
        levels = path.split(".")
        for subject in named:
            queues = out.setdefault(subject, _Usage()).queues
            for depth in range(1, len(levels) + 1):
                queues.setdefault(".".join(levels[:depth]), _Level())
    for app in part.applications.values():
        if not app.allocations:
            continue
        group = tracker.group_of(app)
        name = app.user if kind is SubjectKind.USER else group
        if name is None:
            continue
        usage = out.setdefault(name, _Usage())
        if kind is SubjectKind.USER and group is not None:
            usage.groups[app.app_id] = group
        for queue in app.queue.path_to_root():
            level = usage.queues.setdefault(queue.full_name, _Level())
            level.resource.add_in_place(app.allocated)
            level.running.add(app.app_id)
    return out


def users(part: Partition) -> list[Json]:
    return _all(part, SubjectKind.USER)


def user(part: Partition, name: str) -> Json:
    return _one(part, SubjectKind.USER, name)


def groups(part: Partition) -> list[Json]:
    return _all(part, SubjectKind.GROUP)


def group(part: Partition, name: str) -> Json:
    return _one(part, SubjectKind.GROUP, name)


_NAME_CHECKS = {SubjectKind.USER: valid_user, SubjectKind.GROUP: valid_group}


def _all(part: Partition, kind: SubjectKind) -> list[Json]:
    usage = _usage(part, kind)
    return [_view(part, kind, name, usage[name]) for name in sorted(usage)]


def _one(part: Partition, kind: SubjectKind, name: str) -> Json:
    label = kind.value.capitalize()
    if not _NAME_CHECKS[kind](name):
        raise BadRequest(f"Invalid {kind.value} name {name!r}")
    usage = _usage(part, kind).get(name)
    if usage is None:
        raise NotFound(
            f"{label} not found: no usage tracked for {kind.value} {name!r} in partition {part.name!r}"
        )
    return _view(part, kind, name, usage)


def _view(part: Partition, kind: SubjectKind, name: str, usage: _Usage) -> Json:
    return _user(part, name, usage) if kind is SubjectKind.USER else _group(part, name, usage)


def _user(part: Partition, name: str, usage: _Usage) -> Json:
    out: Json = {"userName": name}
    if usage.groups:
        out["groups"] = dict(sorted(usage.groups.items()))
    out["queues"] = _queue(part.user_groups, SubjectKind.USER, name, usage, "root")
    return out


def _group(part: Partition, name: str, usage: _Usage) -> Json:
    out: Json = {"groupName": name}
    out["applications"] = sorted(usage.queues["root"].running)
    out["queues"] = _queue(part.user_groups, SubjectKind.GROUP, name, usage, "root")
    return out


def _queue(tracker: UserGroupTracker, kind: SubjectKind, name: str, usage: _Usage, path: str) -> Json:
    level = usage.queues[path]
    out: Json = {"queuePath": path}
    if not level.resource.is_zero():
        out["resourceUsage"] = int64_values(level.resource)
    if level.running:
        out["runningApplications"] = sorted(level.running)
    limit = _limit(tracker, kind, name, path)
    if limit is not None and limit.max_resources is not None:
        out["maxResources"] = int64_values(limit.max_resources)
    if limit is not None and limit.max_applications:
        out["maxApplications"] = limit.max_applications
    prefix = path + "."
    children = sorted(p for p in usage.queues if p.startswith(prefix) and "." not in p[len(prefix) :])
    if children:
        out["children"] = [_queue(tracker, kind, name, usage, child) for child in children]
    return out


def _limit(tracker: UserGroupTracker, kind: SubjectKind, name: str, path: str) -> Limit | None:
    limits = tracker.table.get(path)
    if limits is None:
        return None
    return limits.for_user(name) if kind is SubjectKind.USER else limits.for_group(name)
