"""Which node an ask may go to: the checks it is held to (built once per search), and the node searches
over them: the first node in policy order with room that passes them all, the best scored among the
first feasible ones when the ask has preferences, and, node by node, what keeps a waiting ask off."""

from __future__ import annotations

from collections import Counter

from core.constraints.ask import CORDON, NO_CONSTRAINTS, AskConstraints, tolerates
from core.objects.allocation import Allocation
from core.objects.node import Node
from core.scheduler.fit.checks import (
    NO_TOLERATIONS,
    RESERVED,
    UNSCHEDULABLE,
    DiskConflict,
    HostPorts,
    NodeCheck,
    NodeSelector,
    PreferredAffinity,
    ReadWriteOncePod,
    RequiredAffinity,
    RequiredNode,
    Scorer,
    Tolerations,
    VolumeLimits,
    insufficient,
)
from core.scheduler.partition import Partition


class AskFit:
    """The checks one ask is held to for one search, in the order they are asked (the cheap and the
    likely-to-refuse first), and its scorers. Preemption asks each refusing check for its what-if
    (WhatIfCheck: the pod rules); a check without one keeps the node out."""

    __slots__ = ("best", "checks", "scorers")

    def __init__(self, checks: tuple[NodeCheck, ...], scorers: tuple[Scorer, ...] = ()) -> None:
        self.checks = checks
        self.scorers = scorers
        self.best = sum(scorer.best for scorer in scorers)  # the score that ends a search

    def refusal(self, node: Node) -> str:
        """The first check that refuses the node, as its reason; "" when all pass (room aside)."""
        for check in self.checks:
            why = check.refusal(node)
            if why:
                return why
        return ""

    def admits(self, node: Node) -> bool:
        # A plain loop: asked per node of a search, it is measurably faster than all() over a generator.
        for check in self.checks:  # noqa: SIM110
            if check.refusal(node):
                return False
        return True

    def score(self, node: Node) -> int:
        return sum(scorer.score(node) for scorer in self.scorers)


PLAIN = AskFit((NO_TOLERATIONS,))  # an ask with no rule of its own, where no placed pod has one about it


def own_checks(constraints: AskConstraints) -> list[NodeCheck]:
    """The checks a node's own traits and ports decide, from the ask's parsed constraints."""
    if constraints.is_empty:
        return [NO_TOLERATIONS]  # taints keep an ask without tolerations off too
    checks: list[NodeCheck] = []
    if constraints.required_node:
        checks.append(RequiredNode(constraints.required_node))
    if constraints.node_selector:
        checks.append(NodeSelector(constraints.node_selector))
    affinity = constraints.node_affinity
    if affinity is not None and affinity.required is not None:
        checks.append(RequiredAffinity(affinity))
    checks.append(Tolerations(constraints.tolerations) if constraints.tolerations else NO_TOLERATIONS)
    if constraints.host_ports:
        checks.append(HostPorts(constraints.host_ports))
    if constraints.csi_volumes:
        checks.append(VolumeLimits(constraints.csi_volumes))
    if constraints.disks:
        checks.append(DiskConflict(constraints.disks))
    return checks


def fit_for(partition: Partition, ask: Allocation) -> AskFit:
    """What `ask` is held to on this partition now: its own rules, and the pod rules over the pods
    placed (inter-pod affinity, spread, placed pods' terms about it)."""
    constraints = ask.constraints
    if constraints is NO_CONSTRAINTS and not partition.pod_rules.carried:
        return PLAIN  # most asks: nothing to build
    checks = own_checks(constraints)
    scorers: list[Scorer] = []
    affinity = constraints.node_affinity
    if affinity is not None and affinity.preferred:
        scorers.append(PreferredAffinity(affinity))
    if constraints.rwop_claims:
        checks.append(ReadWriteOncePod(constraints.rwop_claims, partition.pod_rules.claim_users, ask.ref))
    rules = partition.pod_rules.for_ask(ask)
    if rules is not None:
        checks.append(rules)
        if rules.preferences is not None:
            scorers.append(rules.preferences)
    return AskFit(tuple(checks), tuple(scorers))


def find_node(partition: Partition, ask: Allocation) -> Node | None:
    """The first node in policy order that is schedulable, unreserved, has room and passes the ask's
    checks. An ask with preferences takes the best scored node among the first feasible ones (see
    _preferred_node)."""
    fit = fit_for(partition, ask)
    if fit.scorers:
        return _preferred_node(partition, ask, fit)
    resource, checks = ask.resource, fit.checks
    for node in partition.node_index:
        if (node.schedulable or node.cordoned) and not node.reservations and node.fits(resource):
            for check in checks:
                if check.refusal(node):
                    break
            else:
                return node
    return None


def admits_now(partition: Partition, node: Node, ask: Allocation) -> bool:
    """The ask's checks, pod rules against the pods placed now included, for one node."""
    return fit_for(partition, ask).admits(node)


def nodes_to_score(nodes: int) -> int:
    """How many feasible nodes a scored search looks at: kube-scheduler's adaptive
    percentageOfNodesToScore (50 % less 1 % per 125 nodes, at least 5 %) and never fewer than 100."""
    percent = max(5.0, 50.0 - nodes / 125)
    return max(100, int(nodes * percent / 100))


def _preferred_node(partition: Partition, ask: Allocation, fit: AskFit) -> Node | None:
    """The node with the highest score among the first feasible nodes in policy order (nodes_to_score
    of them); the policy order breaks ties, and a node with the best score there can be ends the
    search."""
    best: Node | None = None
    best_score = 0
    enough = nodes_to_score(len(partition.nodes))
    feasible = 0
    for node in partition.node_index:
        if not (node.schedulable or node.cordoned) or node.reservations:
            continue
        if not node.fits(ask.resource) or not fit.admits(node):
            continue
        feasible += 1
        if feasible > enough:
            break  # as kube-scheduler: a large cluster's first feasible nodes are enough to choose from
        score = fit.score(node)
        if score >= fit.best:
            return node
        if best is None or score > best_score:
            best, best_score = node, score
    return best


def why_no_node(partition: Partition, ask: Allocation) -> str:
    """Per node, the first thing that keeps the ask off it, tallied as Kubernetes' scheduler words it:
    "0/5 nodes are available: 3 pod anti-affinity, 2 insufficient memory". One pass over the nodes:
    run only now and then for an ask that stays pending (see scheduling)."""
    fit = fit_for(partition, ask)
    tally: Counter[str] = Counter()
    for node in partition.node_index:
        why = _refusal(node, ask, fit)
        if why:
            tally[why] += 1
    total = len(partition.nodes)
    parts = ", ".join(
        f"{count} {why}" for why, count in sorted(tally.items(), key=lambda kv: (-kv[1], kv[0]))
    )
    return f"0/{total} nodes are available: {parts}" if parts else f"0/{total} nodes are available"


def _refusal(node: Node, ask: Allocation, fit: AskFit) -> str:
    if not node.schedulable and not (node.cordoned and tolerates(ask.constraints.tolerations, CORDON)):
        return UNSCHEDULABLE  # kube-scheduler's NodeUnschedulable speaks before any other filter
    if node.reservations and ask.ref not in node.reservations:
        return RESERVED
    why = fit.refusal(node)
    if why:
        return why
    for name, want in ask.resource.items():
        if want > 0 and node.available.get(name) < want:
            return insufficient(name)
    return ""
