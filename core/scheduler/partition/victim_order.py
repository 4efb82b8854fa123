"""What every kind of preemption shares: who may be a victim, in which order, and how many are enough."""

from __future__ import annotations

from collections.abc import Iterable

from core.objects.allocation import Allocation
from core.objects.node import Node
from core.resources import Resource


def may_be_victim(alloc: Allocation) -> bool:
    """Never a required-node (DaemonSet) allocation, a foreign one, or one already being released
    (preempted, or a placeholder the core gave up or is replacing); nor a real task holding room in a
    placeholder's stead, which is not the RM's allocation yet."""
    return not (
        alloc.required_node or alloc.foreign or alloc.releasing or alloc.released_by_core or alloc.replaces
    )


VictimKey = tuple[bool, bool, int, bool, float, int]


def victim_order(alloc: Allocation) -> VictimKey:
    """Preferred victims first: those that allow preemption, then not originators, then lower
    priority; at one priority a gang's placeholder before a real task (it holds room but runs no
    work), then the youngest, then the smallest."""
    return (
        not alloc.allow_preempt_self,
        alloc.originator,
        alloc.priority,
        not alloc.placeholder,
        -alloc.create_time,
        sum(alloc.resource.values()),
    )


def fewest_that_fit(node: Node, ask: Resource, candidates: Iterable[Allocation]) -> list[Allocation] | None:
    """Take candidates in order until the ask fits the node's free room plus what they hold.

    None when even all of them are not enough: preempting would not make the ask fit.
    """
    free = node.available.copy()
    chosen: list[Allocation] = []
    if ask.fits_in(free):
        return chosen
    for victim in candidates:
        if not victim.resource.shares_type_with(ask):
            continue
        chosen.append(victim)
        free.add_in_place(victim.resource)
        if ask.fits_in(free):
            return chosen
    return None
