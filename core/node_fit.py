"""Which node an ask may go to: its constraints, and the first node in policy order with room."""

from __future__ import annotations

from core.objects.allocation import Allocation
from core.objects.constraints import node_admits
from core.objects.node import Node
from core.objects.node_affinity import NodeAffinity
from core.objects.partition import Partition


def admits(node: Node, ask: Allocation) -> bool:
    """The node passes the ask's constraints (selectors, affinity, taints against tolerations, host
    ports against those its pods use)."""
    constraints = ask.constraints
    # The shortcut holds only for untainted nodes: an ask without tolerations must still avoid taints.
    if constraints.is_empty and not node.traits.taints:
        return True
    if not node_admits(node.node_id, node.traits, constraints):
        return False
    return not constraints.host_ports or node.ports.conflict(constraints.host_ports) is None


def find_node(partition: Partition, ask: Allocation) -> Node | None:
    """The first node in policy order that is schedulable, unreserved, admits the ask and has room.

    An ask with preferred node affinity takes the node with the highest preference score among
    those, the policy order breaking ties: the first node with the full score ends the search."""
    affinity = ask.constraints.node_affinity
    if affinity is not None and affinity.preferred:
        return _preferred_node(partition, ask, affinity)
    for node in partition.node_index:
        if node.schedulable and not node.reservations and node.fits(ask.resource) and admits(node, ask):
            return node
    return None


def _preferred_node(partition: Partition, ask: Allocation, affinity: NodeAffinity) -> Node | None:
    full = sum(weight for weight, _ in affinity.preferred)
    best: Node | None = None
    best_score = -1
    for node in partition.node_index:
        if node.schedulable and not node.reservations and node.fits(ask.resource) and admits(node, ask):
            score = affinity.score(node.node_id, node.traits.label_map)
            if score == full:
                return node
            if score > best_score:
                best, best_score = node, score
    return best
