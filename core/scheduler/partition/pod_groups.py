"""A partition's side of pod groups (core.objects.pod_group): asks and running allocations joining
their application's groups. The cycle's side, placing a group's members together, is
core.scheduler.cycle.pod_groups."""

from __future__ import annotations

from typing import TYPE_CHECKING

from core.objects.allocation import Allocation
from core.objects.application import Application
from core.scheduler.rejection import Rejection, pod_group_of

if TYPE_CHECKING:
    from core.scheduler.partition.partition import Partition


def join(part: Partition, app: Application, ask: Allocation) -> None:
    """The ask joins its pod group: refused when its tags cannot be used or its group's minimum
    differs. Its parked fellow members wake: one more member may be what they waited for."""
    found = pod_group_of(ask)
    if found is None:
        return
    name, min_count = found
    group = app.pod_groups.get(name)
    if group is not None and group.min_count != min_count:
        raise Rejection(
            f"allocation {ask.key}: pod group {name!r} of application {app.app_id} starts with "
            f"{group.min_count} pods, this ask says {min_count}"
        )
    app.join_pod_group(name, min_count)
    ask.pod_group = name
    for member in [a for a in app.parked.values() if a.pod_group == name]:
        part.parking.discard(member)
        app.unpark(member)


def recover(part: Partition, app: Application, alloc: Allocation) -> None:
    """A running member (recovery) counts in its group, so that the group's later pods go on their own
    once its minimum runs; tags that cannot be read lose the group, never the allocation."""
    try:
        found = pod_group_of(alloc)
    except Rejection as exc:
        part.log.warning(
            "pod group of a running allocation ignored", allocationKey=alloc.key, reason=str(exc)
        )
        return
    if found is not None:
        app.join_pod_group(*found)
        alloc.pod_group = found[0]
