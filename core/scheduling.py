"""One scheduling cycle over a partition: queues, then applications, then asks, then nodes."""

from __future__ import annotations

from collections.abc import Iterator

from core.objects.allocation import Allocation
from core.objects.partition import Partition
from core.objects.queue import Queue
from core.policies.node_sort import best_node
from core.policies.queue_sort import sorted_applications, sorted_children


def _leaves_in_order(queue: Queue) -> Iterator[Queue]:
    if queue.is_leaf:
        yield queue
        return
    for child in sorted_children(queue):
        yield from _leaves_in_order(child)


def allocate(partition: Partition, now: float, budget: int) -> list[Allocation]:
    """Allocate as much as fits, at most `budget` allocations; returns the new allocations.

    Passes repeat while they make progress, so usage changes re-order queues between passes.
    """
    made: list[Allocation] = []
    policy = partition.config.node_sort_policy
    weights = dict(policy.resource_weights) or None
    progress = True
    while progress and len(made) < budget and partition.has_pending():
        progress = False
        for leaf in _leaves_in_order(partition.root):
            for app in sorted_applications(leaf):
                for ask in list(app.sorted_asks()):
                    if not leaf.fits_headroom(ask.resource):
                        continue
                    node = best_node(partition.nodes.values(), ask.resource, policy.type, weights)
                    if node is None:
                        continue
                    partition.allocate(ask, node, now)
                    made.append(ask)
                    progress = True
                    if len(made) >= budget:
                        return made
    return made
