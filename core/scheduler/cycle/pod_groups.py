"""Placing a pod group's members together (core.objects.pod_group): all of the members its minimum
still lacks in one decision, or none.

The members are planned one after another as if placed: each held on the node the search finds for
it, so the next one's search sees that room taken and the pod rules (anti-affinity, spread) see it
there, as kube-scheduler's assumed pods. Every hold is then let go. When at least the members needed
found a node, and the queue's headroom and the user's limits take them all, they are allocated where
they were planned, in one cycle and so in one answer to the RM; otherwise none is, and each says why.
Members beyond the minimum that fit are placed with the others (kube-scheduler schedules a whole
group's pods once its quorum is there).
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass, field

from core.objects.allocation import Allocation
from core.objects.application import Application
from core.objects.node import Node
from core.objects.parking import Why
from core.objects.pod_group import PodGroup
from core.objects.queue import Queue
from core.resources import Resource
from core.scheduler.node_search import find_node
from core.scheduler.partition import Partition


@dataclass
class Attempt:
    """What trying a group came to."""

    placed: list[Allocation] = field(default_factory=list)  # allocated, together
    waiting: list[Allocation] = field(default_factory=list)  # its members left pending
    why: str = ""  # why they wait, said on each
    held_by: Why = Why.ROOM  # what must change for them to be tried again


def members(app: Application, group: PodGroup) -> list[Allocation]:
    """The group's pending asks in the application's scheduling order."""
    return [ask for ask in app.sorted_asks() if ask.pod_group == group.name]


def start_together(
    partition: Partition,
    leaf: Queue,
    app: Application,
    group: PodGroup,
    now: float,
    look_for_victims: Callable[[Allocation], object] = lambda ask: False,
) -> Attempt:
    """`look_for_victims(member)`: called for a member no node takes, while the members before it are
    held, so that victims chosen for it make room beside theirs (preemption for the gang, one member
    at a time, as the cycle's attempts allow); truthy when it looked."""
    pending = members(app, group)
    need = group.to_start()
    if len(pending) < need:
        known = len(pending) + group.allocated
        why = (f"pod group {group.name}: {known} of the {group.min_count} pods it starts with are known; "
               "waiting for the others")  # fmt: skip
        return Attempt(waiting=pending, why=why, held_by=Why.LIMIT)
    plan, refusal, no_room = _plan(partition, leaf, app, pending, look_for_victims)
    if len(plan) < need:
        why = (f"pod group {group.name}: {len(plan)} of the {need} pods that must start together "
               f"can be placed now ({refusal})")  # fmt: skip
        return Attempt(waiting=pending, why=why, held_by=Why.ROOM if no_room else Why.LIMIT)
    for ask, node in plan:
        partition.allocate(ask, node, now)
    placed = [ask for ask, _ in plan]
    return Attempt(placed=placed, waiting=[a for a in pending if not a.is_allocated])


def _plan(
    partition: Partition,
    leaf: Queue,
    app: Application,
    pending: list[Allocation],
    look_for_victims: Callable[[Allocation], object],
) -> tuple[list[tuple[Allocation, Node]], str, bool]:
    """A node for each member that can have one, all held as placed while planning and let go after:
    (the plan, why the first member left out was, whether a member found no room)."""
    plan: list[tuple[Allocation, Node]] = []
    total = Resource()
    held = Resource()  # what of `total` its members' own holds cover (headroom kept after preemption)
    refusal = ""
    no_room = False
    looked = False
    try:
        for ask in pending:
            after = total + ask.resource
            blocked = partition.user_groups.resource_block(app, after)
            if blocked is not None:
                refusal = refusal or blocked.describe()
                continue
            holds = held + ask.resource if ask.held else held
            over = leaf.headroom_shortfall(after, True, held_by_asking=holds)
            if over is not None:
                queue = over[0]
                if queue.is_root:  # the nodes' room: more nodes (or victims) would help
                    refusal = refusal or "over the cluster's capacity"
                    no_room = True
                    looked = looked or bool(look_for_victims(ask))
                else:
                    refusal = refusal or f"over queue {queue.full_name}'s max"
                continue
            node = find_node(partition, ask)
            if node is None:
                refusal = refusal or "no node has room for the rest"
                no_room = True
                looked = looked or bool(look_for_victims(ask))
                continue
            _hold(partition, ask, node)
            plan.append((ask, node))
            total, held = after, holds
    finally:
        for ask, node in reversed(plan):
            _let_go(partition, ask, node)
    return plan, refusal, no_room


def _hold(partition: Partition, ask: Allocation, node: Node) -> None:
    """The ask counted on the node as if placed (its room, its rules' indexes), without waking asks
    parked for room: nothing has really changed."""
    watcher, node.room_watcher = node.room_watcher, None
    try:
        ask.node_id = node.node_id
        node.add_allocation(ask)
    finally:
        node.room_watcher = watcher
    partition.node_index.update(node)


def _let_go(partition: Partition, ask: Allocation, node: Node) -> None:
    watcher, node.room_watcher = node.room_watcher, None
    try:
        node.remove_allocation(ask.key)
        ask.node_id = ""
    finally:
        node.room_watcher = watcher
    partition.node_index.update(node)
