"""Which node an ask may go to: its constraints, and the first node in policy order with room."""

from __future__ import annotations

from collections import Counter

from core.constraints.ask import NO_CONSTRAINTS, node_admits, node_refusal
from core.constraints.node_affinity import NodeAffinity
from core.objects.allocation import Allocation
from core.objects.node import Node
from core.scheduler.fit.pod_rules import AskPodRules
from core.scheduler.partition import Partition


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
    rules = pod_rules.for_ask(ask) if constraints is not NO_CONSTRAINTS or pod_rules.carried else None
    affinity = constraints.node_affinity
    if (affinity is not None and affinity.preferred) or (rules is not None and rules.preferences is not None):
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


def nodes_to_score(nodes: int) -> int:
    """How many feasible nodes a scored search looks at: kube-scheduler's adaptive
    percentageOfNodesToScore (50 % less 1 % per 125 nodes, at least 5 %) and never fewer than 100."""
    percent = max(5.0, 50.0 - nodes / 125)
    return max(100, int(nodes * percent / 100))


def _preferred_node(
    partition: Partition, ask: Allocation, affinity: NodeAffinity | None, rules: AskPodRules | None
) -> Node | None:
    """The node with the highest preference score (preferred node affinity, plus the pod rules'
    preferences) among the first feasible nodes in policy order (nodes_to_score of them); the policy
    order breaks ties, and a node with the best score there can be ends the search."""
    preferences = rules.preferences if rules is not None else None
    best_possible = (sum(w for w, _ in affinity.preferred) if affinity is not None else 0) + (
        preferences.best if preferences is not None else 0
    )
    best: Node | None = None
    best_score = 0
    enough = nodes_to_score(len(partition.nodes))
    feasible = 0
    for node in partition.node_index:
        if not (node.schedulable and not node.reservations and node.fits(ask.resource) and admits(node, ask)):
            continue
        if rules is not None and not rules.admits(node):
            continue
        feasible += 1
        if feasible > enough:
            break  # as kube-scheduler: a large cluster's first feasible nodes are enough to choose from
        score = affinity.score(node.node_id, node.traits.label_map) if affinity is not None else 0
        if preferences is not None:
            score += preferences.score(node)
        if score >= best_possible:
            return node
        if best is None or score > best_score:
            best, best_score = node, score
    return best


def why_no_node(partition: Partition, ask: Allocation) -> str:
    """Per node, the first thing that keeps the ask off it, tallied as Kubernetes' scheduler words it:
    "0/5 nodes are available: 3 pod anti-affinity, 2 insufficient memory". One pass over the nodes:
    run only now and then for an ask that stays pending (see scheduling)."""
    rules = partition.pod_rules.for_ask(ask)
    tally: Counter[str] = Counter()
    for node in partition.node_index:
        why = _refusal(node, ask, rules)
        if why:
            tally[why] += 1
    total = len(partition.nodes)
    parts = ", ".join(
        f"{count} {why}" for why, count in sorted(tally.items(), key=lambda kv: (-kv[1], kv[0]))
    )
    return f"0/{total} nodes are available: {parts}" if parts else f"0/{total} nodes are available"


def _refusal(node: Node, ask: Allocation, rules: AskPodRules | None) -> str:
    if not node.schedulable:
        return "unschedulable"
    if node.reservations and ask.ref not in node.reservations:
        return "reserved for another ask"
    constraints = ask.constraints
    why = node_refusal(node.node_id, node.traits, constraints)
    if why:
        return why
    if constraints.host_ports and node.ports.conflict(constraints.host_ports) is not None:
        return "didn't have free ports for the requested pod ports"
    if rules is not None:
        why = rules.refusal(node)
        if why:
            return why
    for name, want in ask.resource.items():
        if want > 0 and node.available.get(name) < want:
            return f"insufficient {name}"
    return ""
