"""One scheduling cycle over a partition.

First the reservations: a reserved ask goes to its node once that has room, or to any other node
with room. Then everything else in order: queues (fair), applications (the leaf's policy), asks
(priority, then age), nodes (the partition's node index). An ask that fits no node's free room but
fits some node's capacity reserves the best such node once it has waited RESERVATION_DELAY; a
reserved node takes no other ask. Passes repeat while they make progress.
"""

from __future__ import annotations

from collections.abc import Iterator

from core.objects.allocation import Allocation
from core.objects.application import Application, AppState
from core.objects.constraints import node_admits
from core.objects.node import Node
from core.objects.partition import Partition
from core.objects.queue import Queue
from core.policies.queue_sort import sorted_applications, sorted_children

RESERVATION_DELAY = 2.0  # seconds an ask waits before it may reserve a node, as YuniKorn


def _leaves_in_order(queue: Queue) -> Iterator[Queue]:
    if queue.is_leaf:
        yield queue
        return
    for child in sorted_children(queue):
        yield from _leaves_in_order(child)


def _may_allocate(app: Application) -> bool:
    # An application still Accepted must fit under maxapplications before its first allocation.
    return app.state != AppState.ACCEPTED or app.queue.can_run_another_app()


def _admits(node: Node, ask: Allocation) -> bool:
    return ask.constraints.is_empty or node_admits(node.node_id, node.traits, ask.constraints)


def find_node(partition: Partition, ask: Allocation) -> Node | None:
    """The first node in policy order that is schedulable, unreserved, admits the ask and has room."""
    for node in partition.node_index:
        if node.schedulable and not node.reservations and node.fits(ask.resource) and _admits(node, ask):
            return node
    return None


def _fit_score(ask: Allocation, node: Node) -> float:
    """How far the node's free room is from the ask: 0 fits; 1 per type with nothing free."""
    score = 0.0
    for name, want in ask.resource.items():
        if want <= 0:
            continue
        free = node.available.get(name)
        if free < want:
            score += (want - max(free, 0)) / want
    return score


def _reserve_candidate(partition: Partition, ask: Allocation) -> Node | None:
    best: Node | None = None
    best_score = 0.0
    for node in partition.node_index:
        if not node.schedulable or node.reservations or not node.fits_capacity(ask.resource):
            continue
        if not _admits(node, ask):
            continue
        score = _fit_score(ask, node)
        if best is None or score < best_score:
            best, best_score = node, score
    return best


def _serve_reservations(partition: Partition, now: float, budget: int) -> list[Allocation]:
    made: list[Allocation] = []
    for ref, node_id in list(partition.reservations.items()):
        if len(made) >= budget:
            break
        app = partition.applications.get(ref[0])
        ask = app.asks.get(ref[1]) if app is not None else None
        if app is None or ask is None:
            partition.unreserve(ref)
            continue
        if not _may_allocate(app) or not app.queue.fits_headroom(ask.resource):
            continue
        node = partition.nodes[node_id]
        if node.fits(ask.resource) and _admits(node, ask):
            partition.unreserve(ref)
            partition.allocate(ask, node, now)
            made.append(ask)
            continue
        if ask.required_node:
            continue  # it can only ever run there
        other = find_node(partition, ask)
        if other is not None:
            partition.unreserve(ref)
            partition.allocate(ask, other, now)
            made.append(ask)
    return made


def _try_required_node(partition: Partition, ask: Allocation, now: float) -> bool:
    """A required-node ask (a DaemonSet pod) goes to its node or reserves it at once."""
    node = partition.nodes.get(ask.required_node)
    if node is None:
        return False
    # Normal reservations give way to a required-node ask on their node.
    for ref in [r for r in node.reservations if r != ask.ref]:
        other = partition.applications.get(ref[0])
        other_ask = other.asks.get(ref[1]) if other is not None else None
        if other_ask is None or not other_ask.required_node:
            partition.unreserve(ref)
    if node.fits(ask.resource) and _admits(node, ask):
        partition.allocate(ask, node, now)
        return True
    partition.reserve(ask, node)
    return False


def allocate(partition: Partition, now: float, budget: int) -> list[Allocation]:
    """Allocate as much as fits, at most `budget` allocations; returns the new allocations."""
    made = _serve_reservations(partition, now, budget) if partition.reservations else []
    progress = True
    while progress and len(made) < budget and partition.has_pending():
        progress = False
        for leaf in _leaves_in_order(partition.root):
            for app in sorted_applications(leaf):
                if not _may_allocate(app):
                    continue
                for ask in list(app.sorted_asks()):
                    if partition.is_reserved(ask) or not leaf.fits_headroom(ask.resource):
                        continue
                    if ask.required_node:
                        placed = _try_required_node(partition, ask, now)
                    else:
                        placed = _try_nodes(partition, ask, now)
                    if placed:
                        made.append(ask)
                        progress = True
                        if len(made) >= budget:
                            return made
    return made


def _try_nodes(partition: Partition, ask: Allocation, now: float) -> bool:
    node = find_node(partition, ask)
    if node is not None:
        partition.allocate(ask, node, now)
        return True
    if now - ask.create_time >= RESERVATION_DELAY:
        candidate = _reserve_candidate(partition, ask)
        if candidate is not None:
            partition.reserve(ask, candidate)
    return False
