"""The groups of a user whose RM sent none, as the partition's `usergroupresolver` says to find them.

YuniKorn's default (no `usergroupresolver`, or type `default`/empty) looks nothing up: the user's one
group is a group of the user's own name, so `submitacl: " alice"` admits alice. Type `os` asks this
host's user database (the primary group first, then the others the user is a member of). Groups the
RM sends are used as they are, whatever the type.
"""

from __future__ import annotations

import grp
import pwd

from core.config.resolver_names import OS


def resolve_groups(kind: str, user: str, groups: tuple[str, ...]) -> tuple[str, ...]:
    if groups:
        return groups
    if kind == OS:
        return _os_groups(user) or (user,)
    return (user,)


def _os_groups(user: str) -> tuple[str, ...]:
    try:
        entry = pwd.getpwnam(user)
    except KeyError:
        return ()
    try:
        primary = grp.getgrgid(entry.pw_gid).gr_name
    except KeyError:
        primary = str(entry.pw_gid)
    others = [g.gr_name for g in grp.getgrall() if user in g.gr_mem and g.gr_name != primary]
    return (primary, *others)
