"""Open history rows of what ended while the core or its RM was away.

A core that restarts, or an RM that comes back after its grace period, learns the RM's applications
and allocations again from what the RM sends after registering. What ended meanwhile is never sent,
so no end is ever recorded for it: its row would stay open (running) until its application ends, and
count as used all that time. Some time after a registration (the recorder's SETTLE, long enough for
the RM to have sent its state again), the rows of that RM still open from before the registration
whose allocation or application the core does not hold are closed at the registration's time: the
latest it can have ended (so its usage is counted up to then, never beyond).
"""

from __future__ import annotations

from collections.abc import Set
from typing import Any

from sqlalchemy import Connection, bindparam, select, update

from core.history.tables import allocations, applications

LOST = "ENDED_WHILE_AWAY"  # an allocation's termination: not sent again after its RM registered
LOST_REASON = (
    "not sent again after its resource manager registered: it ended while the core or the RM was away"
)

Reconcile = tuple[str, float, Set[tuple[str, str, str]], Set[tuple[str, str]]]
# (rmID, the registration's time, the allocations the core holds as (partition, application, key),
#  the applications it holds as (partition, application))


def close_lost(connection: Connection, params: Reconcile) -> tuple[int, int]:
    """Close the RM's rows open since before `at` whose allocation or application the core no longer
    holds; how many allocations and applications."""
    rm_id, at, live_allocations, live_apps = params
    a = allocations.c
    open_allocations = connection.execute(
        select(a.partition, a.app_id, a.allocation_key).where(
            a.rm_id == rm_id, a.ended.is_(None), a.started < at
        )
    )
    lost = [
        {"p": p, "app": app, "key": key}
        for p, app, key in open_allocations
        if (p, app, key) not in live_allocations
    ]
    if lost:
        connection.execute(
            update(allocations)
            .where(
                a.rm_id == rm_id, a.partition == bindparam("p"), a.app_id == bindparam("app"),
                a.allocation_key == bindparam("key"), a.ended.is_(None),
            )
            .values(ended=at, termination=LOST),
            lost,
        )  # fmt: skip
    c = applications.c
    open_apps = connection.execute(
        select(c.partition, c.app_id).where(c.rm_id == rm_id, c.finished.is_(None), c.submitted < at)
    )
    gone: list[dict[str, Any]] = [{"p": p, "app": app} for p, app in open_apps if (p, app) not in live_apps]
    if gone:
        connection.execute(
            update(applications)
            .where(
                c.rm_id == rm_id, c.partition == bindparam("p"), c.app_id == bindparam("app"),
                c.finished.is_(None),
            )
            .values(finished=at, reason=LOST_REASON),
            gone,
        )  # fmt: skip
    return len(lost), len(gone)
