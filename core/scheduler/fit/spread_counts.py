"""One topology spread registration of a partition: the nodes a constraint counts (those with its
topology key that pass its node filter) and the pods it selects per domain, kept by PodRules."""

from __future__ import annotations

from core.constraints.ask import NodeFilter
from core.constraints.pod_affinity import PodSelector
from core.constraints.topology_spread import DomainCounts
from core.objects.node import Node


class Spread:
    """One spread registration: its eligible nodes and their domains' counts."""

    __slots__ = ("counts", "eligible", "filter", "key", "selector")

    def __init__(self, selector: PodSelector, key: str, node_filter: NodeFilter) -> None:
        self.selector, self.key, self.filter = selector, key, node_filter
        self.eligible: set[str] = set()
        self.counts = DomainCounts()

    def node_added(self, node: Node) -> None:
        domain = node.traits.label_map.get(self.key)
        if domain is not None and self.filter.admits(node.node_id, node.traits):
            self.eligible.add(node.node_id)
            self.counts.add_node(domain)

    def node_removed(self, node: Node) -> None:
        if node.node_id in self.eligible:
            self.eligible.discard(node.node_id)
            self.counts.remove_node(node.traits.label_map[self.key])
