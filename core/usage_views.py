"""REST views of what users and groups use, shaped as YuniKorn's ugm DAO objects
(UserResourceUsageDAOInfo, GroupResourceUsageDAOInfo, ResourceUsageDAOInfo: same JSON field names,
empty fields left out as YuniKorn leaves them out).

Unlike YuniKorn, whose user and group manager is one for the whole scheduler, usage here is per
partition, as the route's partition says.
"""

from __future__ import annotations

from typing import Any

from core.config.limits_check import GROUP_NAME, USER_NAME
from core.objects.partition import Partition
from core.state import BadRequest, NotFound
from core.ugm.limits import Limit
from core.ugm.tracker import Subject, SubjectKind, UserGroupTracker

Json = dict[str, Any]


def users(part: Partition) -> list[Json]:
    tracker = part.user_groups
    return [_user(tracker, subject) for _, subject in sorted(tracker.users.items())]


def user(part: Partition, name: str) -> Json:
    if not USER_NAME.match(name):
        raise BadRequest(f"Invalid user name {name!r}")
    subject = part.user_groups.users.get(name)
    if subject is None:
        raise NotFound(f"User not found: no usage tracked for user {name!r} in partition {part.name!r}")
    return _user(part.user_groups, subject)


def groups(part: Partition) -> list[Json]:
    tracker = part.user_groups
    return [_group(tracker, subject) for _, subject in sorted(tracker.groups.items())]


def group(part: Partition, name: str) -> Json:
    if not GROUP_NAME.match(name):
        raise BadRequest(f"Invalid group name {name!r}")
    subject = part.user_groups.groups.get(name)
    if subject is None:
        raise NotFound(f"Group not found: no usage tracked for group {name!r} in partition {part.name!r}")
    return _group(part.user_groups, subject)


def _user(tracker: UserGroupTracker, subject: Subject) -> Json:
    out: Json = {"userName": subject.name}
    linked = {app_id: tracker.group_of(app_id) for app_id in sorted(subject.applications)}
    chosen = {app_id: name for app_id, name in linked.items() if name is not None}
    if chosen:
        out["groups"] = chosen
    if subject.queues:
        out["queues"] = _queue(tracker, subject, "root")
    return out


def _group(tracker: UserGroupTracker, subject: Subject) -> Json:
    out: Json = {"groupName": subject.name}
    if subject.applications:
        out["applications"] = sorted(subject.applications)
    if subject.queues:
        out["queues"] = _queue(tracker, subject, "root")
    return out


def _queue(tracker: UserGroupTracker, subject: Subject, path: str) -> Json:
    usage = subject.queues[path]
    out: Json = {"queuePath": path}
    if not usage.resource.is_zero():
        out["resourceUsage"] = usage.resource.as_dict()
    if usage.running:
        out["runningApplications"] = sorted(usage.running)
    limit = _limit(tracker, subject, path)
    if limit is not None and limit.max_resources is not None:
        out["maxResources"] = limit.max_resources.as_dict()
    if limit is not None and limit.max_applications:
        out["maxApplications"] = limit.max_applications
    prefix = path + "."
    children = sorted(p for p in subject.queues if p.startswith(prefix) and "." not in p[len(prefix) :])
    if children:
        out["children"] = [_queue(tracker, subject, child) for child in children]
    return out


def _limit(tracker: UserGroupTracker, subject: Subject, path: str) -> Limit | None:
    limits = tracker.table.get(path)
    if limits is None:
        return None
    return (
        limits.for_user(subject.name) if subject.kind is SubjectKind.USER else limits.for_group(subject.name)
    )
