"""The UG_USER_LIMIT and UG_GROUP_LIMIT events a configuration records, as YuniKorn's ugm does.

Every configuration (the first, and each reload) sets each user and group limit it names (SET, on the
user or group, referring to the queue), and takes back the named ones it no longer has (REMOVE). A
wildcard user limit is set on every user YuniKorn tracks (one with an application, or a limit of their
own somewhere) without a limit of their own on that queue. The wildcard group is one tracker, `*`, as
in the limits themselves.
"""

from __future__ import annotations

from collections.abc import Iterable

from core.events import ChangeType, Event
from core.objects import change_events
from core.objects.application import Application
from core.ugm.limits import WILDCARD, QueueLimits


def _named(table: dict[str, QueueLimits], apps: list[Application]) -> set[tuple[bool, str, str]]:
    """(group?, name, queue) of every limit the table sets on a user or group."""
    out: set[tuple[bool, str, str]] = set()
    # YuniKorn's user trackers: a user with an application, or with a limit of their own somewhere.
    tracked = {app.user for app in apps} | {user for limits in table.values() for user in limits.users}
    for path, limits in table.items():
        out.update((False, user, path) for user in limits.users)
        out.update((True, group, path) for group in limits.groups)
        if limits.group_wildcard is not None:
            out.add((True, WILDCARD, path))
        if limits.user_wildcard is not None:
            out.update((False, user, path) for user in tracked if user not in limits.users)
    return out


def limit_events(
    rm_id: str,
    old: dict[str, QueueLimits],
    new: dict[str, QueueLimits],
    applications: Iterable[Application],
    now: float,
) -> list[Event]:
    apps = [app for app in applications if app.user]
    before, after = _named(old, apps), _named(new, apps)
    events = [
        change_events.limit_changed(rm_id, group, name, queue, ChangeType.SET, now)
        for group, name, queue in sorted(after)
    ]
    events.extend(
        change_events.limit_changed(rm_id, group, name, queue, ChangeType.REMOVE, now)
        for group, name, queue in sorted(before - after)
    )
    return events
