"""Which node an ask may go to: its constraints, and the first node in policy order with room."""

from __future__ import annotations

from core.objects.allocation import Allocation
from core.objects.constraints import NO_CONSTRAINTS, node_admits
from core.objects.node import Node
from core.objects.node_affinity import NodeAffinity
from core.objects.partition import Partition
from core.objects.pod_rules import AskPodRules


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
    constraints = ask.constraints
    pod_rules = partition.pod_rules
    rules = pod_rules.for_ask(ask) if constraints is not NO_CONSTRAINTS or pod_rules.anti_terms else None
    affinity = constraints.node_affinity
    if affinity is not None and affinity.preferred:
        return _preferred_node(partition, ask, affinity, rules)
    for node in partition.node_index:
        if node.schedulable and not node.reservations and node.fits(ask.resource) and admits(node, ask):  # noqa: SIM102
            if rules is None or rules.admits(node):
                return node
    return None


def admits_now(partition: Partition, node: Node, ask: Allocation) -> bool:
    """`admits`, and the pod rules (inter-pod affinity) against the pods placed now: for one node."""
    if not admits(node, ask):
        return False
    rules = partition.pod_rules.for_ask(ask)
    return rules is None or rules.admits(node)


def _preferred_node(
    partition: Partition, ask: Allocation, affinity: NodeAffinity, rules: AskPodRules | None
) -> Node | None:
    full = sum(weight for weight, _ in affinity.preferred)
    best: Node | None = None
    best_score = -1
    for node in partition.node_index:
        if node.schedulable and not node.reservations and node.fits(ask.resource) and admits(node, ask):
            if rules is not None and not rules.admits(node):
                continue
            score = affinity.score(node.node_id, node.traits.label_map)
            if score == full:
                return node
            if score > best_score:
                best, best_score = node, score
    return best
