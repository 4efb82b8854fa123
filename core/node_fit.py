"""Which node an ask may go to: its constraints, and the first node in policy order with room."""

from __future__ import annotations

from core.objects.allocation import Allocation
from core.objects.constraints import node_admits
from core.objects.node import Node
from core.objects.partition import Partition


def admits(node: Node, ask: Allocation) -> bool:
    """The node passes the ask's constraints (selectors, affinity, taints against tolerations)."""
    # The shortcut holds only for untainted nodes: an ask without tolerations must still avoid taints.
    if ask.constraints.is_empty and not node.traits.taints:
        return True
    return node_admits(node.node_id, node.traits, ask.constraints)


def find_node(partition: Partition, ask: Allocation) -> Node | None:
    """The first node in policy order that is schedulable, unreserved, admits the ask and has room."""
    for node in partition.node_index:
        if node.schedulable and not node.reservations and node.fits(ask.resource) and admits(node, ask):
            return node
    return None
