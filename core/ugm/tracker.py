"""Whether a user's or group's limit holds an application or an ask back, and the usage it is held to.

An application counts against its user and against at most one group (limits.group_for), on every
queue level of its path where a limit applies to that user or group. There, usage (resources, and
the applications running: those with at least one allocation) is kept as a counter that moves with
every allocation made or released, whatever the cause (scheduling, recovery, preemption, a node going
away); so a counter always equals the sum of the allocations it covers, and a reload rebuilds the
counters from the applications under the new limits.

Counters exist only where a limit applies, so the checks and the tracking cost one comparison and one
addition per applicable limit on the path, and nothing at all when no limit applies. What users and
groups use where no limit applies is read from the applications when it is asked for (usage_views).
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


@dataclass(frozen=True)
class Check:
    """A limit on the application's path, with the counter it is held against."""

    kind: SubjectKind
    name: str
    path: str
    usage: QueueUsage
    limit: Limit


@dataclass
class AppLink:
    group: str | None  # the group the application counts against
    checks: list[Check]  # every applicable limit, nearest the leaf first
    resource_checks: list[Check]  # those with maxresources
    app_checks: list[Check]  # those with maxapplications


# The link of every application while no queue has a limit: empty, and never added to.
_UNLIMITED = AppLink(None, [], [], [])


class _Choose:
    """A link's group still to be chosen (as opposed to a kept group, or a kept None: no group)."""


CHOOSE = _Choose()


@dataclass(frozen=True)
class Block:
    """A limit that holds an ask or an application back."""

    check: Check
    wanted: dict[str, int]  # the ask's quantities that do not fit (empty for maxapplications)
    room: dict[str, int]  # what is left under the limit of those types

    def describe(self) -> str:
        check = self.check
        who = f"{check.kind.value} {check.name}'s limit in queue {check.path}"
        if not self.wanted:
            limit = check.limit.max_applications
            return f"{who} ({limit} running application{'s' if limit != 1 else ''}) is reached"
        return f"over {who}: asks {self.wanted}, room left {self.room}"


Key = tuple[SubjectKind, str, str]  # (kind, user or group name, queue path)


class UserGroupTracker:
    def __init__(self, table: dict[str, QueueLimits]) -> None:
        self.table = table
        self.counters: dict[Key, QueueUsage] = {}  # where a limit applies, while an application is linked
        self._links: dict[str, AppLink] = {}  # by application ID; dropped when it has no allocation
        self._apps_of: dict[str, int] = {}  # applications per user: YuniKorn tracks a user while it has any

    # Checks -----------------------------------------------------------------------------------
    def resource_block(self, app: Application, resource: Resource) -> Block | None:
        """The first limit on the path (nearest the leaf) that `resource` more would exceed, for the
        types the ask needs; None when it fits under all of them."""
        link = self._links.get(app.app_id) or self._link(app)
        for check in link.resource_checks:
            limit = check.limit.max_resources
            assert limit is not None  # only limits with maxresources are resource checks
            used = check.usage.resource
            if used.exceeds_with(resource, limit):
                wanted = {
                    k: v for k, v in resource.items() if v > 0 and k in limit and used.get(k) + v > limit[k]
                }
                room = {k: max(0, limit[k] - used.get(k)) for k in wanted}
                return Block(check, wanted, room)
        return None

    def resource_shortfalls(self, app: Application, resource: Resource) -> dict[Key, dict[str, int]]:
        """Every limit on the path that `resource` more would exceed, with how much of each type must
        be freed under it (by the same user's or group's allocations) for the ask to fit."""
        link = self._links.get(app.app_id) or self._link(app)
        out: dict[Key, dict[str, int]] = {}
        for check in link.resource_checks:
            limit = check.limit.max_resources
            assert limit is not None
            used = check.usage.resource
            over = {
                k: used.get(k) + v - limit[k] for k, v in resource.items() if v > 0 and k in limit
            }  # fmt: skip
            over = {k: v for k, v in over.items() if v > 0}
            if over:
                out[(check.kind, check.name, check.path)] = over
        return out

    def keys_of(self, app: Application) -> list[Key]:
        """The limits `app`'s usage counts against (where a maxresources applies)."""
        link = self._links.get(app.app_id) or self._link(app)
        return [(c.kind, c.name, c.path) for c in link.resource_checks]

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
        if not link.checks:
            return
        first = len(app.allocations) == 1
        for check in link.checks:
            check.usage.resource.add_in_place(resource)
            if first:
                check.usage.running.add(app.app_id)

    def resized(self, app: Application, before: Resource, after: Resource) -> None:
        """An allocation of `app` runs at a new size: its user's and group's usage follows."""
        link = self._links.get(app.app_id)
        for check in link.checks if link is not None else ():
            check.usage.resource.sub_in_place(before)
            check.usage.resource.add_in_place(after)

    def released(self, app: Application, resource: Resource) -> None:
        """An allocation of `app` is gone; the app no longer holds it."""
        link = self._links.get(app.app_id)
        if link is None:
            return
        for check in link.checks:
            check.usage.resource.sub_in_place(resource)
        if not app.allocations:
            self._unlink(app.app_id, link)  # not running; its group is chosen afresh when it is again

    def arrived(self, app: Application) -> list[str]:
        """Count an application in; for a user's first, the queues whose wildcard user limit now applies
        to it (its own limit there aside), where YuniKorn's new user tracker takes them."""
        first = self._apps_of.get(app.user, 0) == 0
        self._apps_of[app.user] = self._apps_of.get(app.user, 0) + 1
        if not first or not app.user or not self.table:
            return []
        if any(app.user in limits.users for limits in self.table.values()):
            return []  # a user with a limit of its own: the configuration tracks it, wildcards too
        return [
            path for path, limits in self.table.items()
            if limits.user_wildcard is not None and app.user not in limits.users
        ]  # fmt: skip

    def forget(self, app: Application) -> None:
        """The application left its partition."""
        left = self._apps_of.get(app.user, 0) - 1
        if left > 0:
            self._apps_of[app.user] = left
        else:
            self._apps_of.pop(app.user, None)
        link = self._links.get(app.app_id)
        if link is not None:
            self._unlink(app.app_id, link)

    def reconfigure(self, table: dict[str, QueueLimits], applications: Iterable[Application]) -> None:
        """New limits (a reload): the counters are rebuilt from what the applications hold, under the
        limits of the new configuration. An application keeps the group it was linked to while that
        group still has a limit on its path (YuniKorn keeps the link until the application ends or the
        group's limit goes); the others are placed afresh. Nothing is preempted: a lowered limit only
        stops new work."""
        kept = {app_id: link.group for app_id, link in self._links.items()}  # no group (None) too
        self.table = table
        self.counters.clear()
        self._links.clear()
        for app in applications:
            if not app.allocations and app.app_id not in kept:
                continue
            group: str | _Choose | None = kept.get(app.app_id, CHOOSE)
            if isinstance(group, str) and not self._limited_on_path(app, group):
                group = CHOOSE  # its group's limit is gone: YuniKorn lets go of the link
            link = self._link(app, group)
            if app.allocations:
                for check in link.checks:
                    check.usage.resource.add_in_place(app.allocated)
                    check.usage.running.add(app.app_id)

    def _limited_on_path(self, app: Application, group: str) -> bool:
        for queue in app.queue.path_to_root():
            limits = self.table.get(queue.full_name)
            if limits is not None and limits.for_group(group) is not None:
                return True
        return False

    # Links ------------------------------------------------------------------------------------
    def group_of(self, app: Application) -> str | None:
        """The group `app` counts against, under the limits in force (fixed while it is linked)."""
        link = self._links.get(app.app_id)
        if link is not None:
            return link.group
        return group_for(self.table, [q.full_name for q in app.queue.path_to_root()], app.groups)

    def _link(self, app: Application, kept: str | _Choose | None = CHOOSE) -> AppLink:
        """Link `app` to the counters of its limits: counted against the group `kept` (a reload's; None:
        no group, as it had none when it was linked), or CHOOSE: the group the limits in force give."""
        if not self.table:  # no limits configured (the usual case): nothing to count, one shared link
            self._links[app.app_id] = _UNLIMITED
            return _UNLIMITED
        group = self.group_of(app) if isinstance(kept, _Choose) else kept
        link = AppLink(group, [], [], [])
        for queue in app.queue.path_to_root():  # leaf first
            limits = self.table.get(queue.full_name)
            if limits is None:
                continue
            subjects = [(SubjectKind.USER, app.user, limits.for_user(app.user))]
            if group is not None:
                subjects.append((SubjectKind.GROUP, group, limits.for_group(group)))
            for kind, name, limit in subjects:
                if limit is None:
                    continue
                key = (kind, name, queue.full_name)
                usage = self.counters.get(key)
                if usage is None:
                    usage = self.counters[key] = QueueUsage()
                usage.holders += 1
                check = Check(kind, name, queue.full_name, usage, limit)
                link.checks.append(check)
                if limit.max_resources is not None:
                    link.resource_checks.append(check)
                if limit.max_applications:
                    link.app_checks.append(check)
        self._links[app.app_id] = link
        return link

    def _unlink(self, app_id: str, link: AppLink) -> None:
        del self._links[app_id]
        for check in link.checks:
            check.usage.running.discard(app_id)
            check.usage.holders -= 1
            if check.usage.holders == 0:
                del self.counters[(check.kind, check.name, check.path)]
