"""What each user and group uses in one partition, and whether a limit holds an application back.

Usage (resources, and the applications running: those with at least one allocation) is tracked per
user and per group at every queue level of the path each application runs in, as YuniKorn's ugm does.
An application is tracked under its user and under at most one group (limits.group_for). Usage moves
with every allocation made or released, whatever the cause (scheduling, recovery, preemption, a node
going away), so the counters always equal the sum of the allocations they cover; a reload rebuilds
them from the applications.

The checks are incremental: each application keeps a link to the counters of its path and to the
limits that apply there, so a check costs one comparison per configured limit on the path, and
nothing when no limit applies.
"""

from __future__ import annotations

from collections.abc import Iterable
from dataclasses import dataclass, field
from enum import StrEnum

from core.objects.application import Application
from core.resources import Resource
from core.ugm.limits import Limit, QueueLimits, group_for


class SubjectKind(StrEnum):
    USER = "user"
    GROUP = "group"


@dataclass
class QueueUsage:
    """One user's or group's use of one queue, everything below it included."""

    resource: Resource = field(default_factory=Resource)  # a counter, changed in place
    running: set[str] = field(default_factory=set)  # applications with at least one allocation
    holders: int = 0  # applications linked to this counter; it goes when the last one lets go


@dataclass
class Subject:
    """A user or a group, and what it uses on each queue level (by full name)."""

    kind: SubjectKind
    name: str
    queues: dict[str, QueueUsage] = field(default_factory=dict)
    applications: set[str] = field(default_factory=set)  # linked to it now (groups: by group choice)


@dataclass(frozen=True)
class Check:
    """A limit on the application's path, with the counter it is held against."""

    subject: Subject
    path: str
    usage: QueueUsage
    limit: Limit


@dataclass
class AppLink:
    user: Subject
    group: Subject | None
    counters: list[tuple[Subject, str, QueueUsage]]  # every level, for the user and the group
    resource_checks: list[Check]  # levels with a maxresources limit, nearest the leaf first
    app_checks: list[Check]  # levels with a maxapplications limit, nearest the leaf first


@dataclass(frozen=True)
class Block:
    """A limit that holds an ask or an application back."""

    check: Check
    wanted: dict[str, int]  # the ask's quantities that do not fit (empty for maxapplications)
    room: dict[str, int]  # what is left under the limit of those types

    def describe(self) -> str:
        check = self.check
        who = f"{check.subject.kind.value} {check.subject.name}'s limit in queue {check.path}"
        if not self.wanted:
            limit = check.limit.max_applications
            return f"{who} ({limit} running application{'s' if limit != 1 else ''}) is reached"
        return f"over {who}: asks {self.wanted}, room left {self.room}"


class UserGroupTracker:
    def __init__(self, table: dict[str, QueueLimits]) -> None:
        self.table = table
        self.users: dict[str, Subject] = {}
        self.groups: dict[str, Subject] = {}
        self._links: dict[str, AppLink] = {}  # by application ID; dropped when it has no allocation

    # Checks -----------------------------------------------------------------------------------
    def resource_block(self, app: Application, resource: Resource) -> Block | None:
        """The first limit on the path (nearest the leaf) that `resource` more would exceed, for the
        types the ask needs; None when it fits under all of them."""
        link = self._links.get(app.app_id) or self._link(app)
        for check in link.resource_checks:
            limit = check.limit.max_resources
            assert limit is not None  # only limits with maxresources are resource checks
            used = check.usage.resource
            for name, want in resource.items():
                if want > 0 and name in limit and used.get(name) + want > limit[name]:
                    wanted = {
                        k: v
                        for k, v in resource.items()
                        if v > 0 and k in limit and used.get(k) + v > limit[k]
                    }
                    room = {k: max(0, limit[k] - used.get(k)) for k in wanted}
                    return Block(check, wanted, room)
        return None

    def run_block(self, app: Application) -> Block | None:
        """The maxapplications limit that keeps a not yet running application from starting."""
        link = self._links.get(app.app_id) or self._link(app)
        for check in link.app_checks:
            running = check.usage.running
            if app.app_id not in running and len(running) >= check.limit.max_applications:
                return Block(check, {}, {})
        return None

    # Usage ------------------------------------------------------------------------------------
    def allocated(self, app: Application, resource: Resource) -> None:
        """An allocation of `app` was made (or recovered); the app holds it already."""
        link = self._links.get(app.app_id) or self._link(app)
        first = len(app.allocations) == 1
        for _, _, usage in link.counters:
            usage.resource.add_in_place(resource)
            if first:
                usage.running.add(app.app_id)

    def released(self, app: Application, resource: Resource) -> None:
        """An allocation of `app` is gone; the app no longer holds it."""
        link = self._links.get(app.app_id)
        if link is None:
            return
        for _, _, usage in link.counters:
            usage.resource.sub_in_place(resource)
        if not app.allocations:
            self._unlink(app.app_id, link)  # not running; its group is chosen afresh when it is again

    def forget(self, app_id: str) -> None:
        link = self._links.get(app_id)
        if link is not None:
            self._unlink(app_id, link)

    def reconfigure(self, table: dict[str, QueueLimits], applications: Iterable[Application]) -> None:
        """New limits (a reload): usage is rebuilt from what the applications hold, under the limits
        and group choices of the new configuration. Nothing is preempted: a lowered limit only stops
        new work."""
        self.table = table
        self.users.clear()
        self.groups.clear()
        self._links.clear()
        for app in applications:
            if app.allocations:
                link = self._link(app)
                for _, _, usage in link.counters:
                    usage.resource.add_in_place(app.allocated)
                    usage.running.add(app.app_id)

    # Links ------------------------------------------------------------------------------------
    def _link(self, app: Application) -> AppLink:
        path_up = [queue.full_name for queue in app.queue.path_to_root()]  # leaf first
        user = self._subject(self.users, SubjectKind.USER, app.user)
        group_name = group_for(self.table, path_up, app.groups)
        group = self._subject(self.groups, SubjectKind.GROUP, group_name) if group_name is not None else None
        link = AppLink(user, group, [], [], [])
        for path in path_up:
            limits = self.table.get(path)
            for subject in (user, group):
                if subject is None:
                    continue
                usage = subject.queues.get(path)
                if usage is None:
                    usage = subject.queues[path] = QueueUsage()
                usage.holders += 1
                link.counters.append((subject, path, usage))
                limit = None
                if limits is not None:
                    limit = (
                        limits.for_user(subject.name) if subject is user else limits.for_group(subject.name)
                    )
                if limit is None:
                    continue
                if limit.max_resources is not None:
                    link.resource_checks.append(Check(subject, path, usage, limit))
                if limit.max_applications:
                    link.app_checks.append(Check(subject, path, usage, limit))
        user.applications.add(app.app_id)
        if group is not None:
            group.applications.add(app.app_id)
        self._links[app.app_id] = link
        return link

    @staticmethod
    def _subject(subjects: dict[str, Subject], kind: SubjectKind, name: str) -> Subject:
        subject = subjects.get(name)
        if subject is None:
            subject = subjects[name] = Subject(kind, name)
        return subject

    def _unlink(self, app_id: str, link: AppLink) -> None:
        del self._links[app_id]
        for subject, path, usage in link.counters:
            usage.running.discard(app_id)
            subject.applications.discard(app_id)
            usage.holders -= 1
            if usage.holders == 0:
                del subject.queues[path]
        for held, subjects in ((link.user, self.users), (link.group, self.groups)):
            if held is not None and not held.queues and subjects.get(held.name) is held:
                del subjects[held.name]

    def group_of(self, app_id: str) -> str | None:
        link = self._links.get(app_id)
        return link.group.name if link is not None and link.group is not None else None
