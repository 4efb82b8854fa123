"""What every kind of preemption shares: who may be a victim, in which order, and how many are enough."""

from __future__ import annotations

from collections.abc import Iterable

from core.objects.allocation import Allocation
from core.objects.node import Node
from core.resources import Resource


def may_be_victim(alloc: Allocation) -> bool:
    """Never a required-node (DaemonSet) allocation, a foreign one, or one already being released."""
    return not (alloc.required_node or alloc.foreign or alloc.releasing)


def victim_order(alloc: Allocation) -> tuple[bool, bool, int, float, int]:
    """Preferred victims first: those that allow preemption, then not originators, then lower
    priority, then the youngest, then the smallest."""
    return (
        not alloc.allow_preempt_self,
        alloc.originator,
        alloc.priority,
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
