"""Node order for placing asks, kept as an incremental index.

fair spreads load: the least used node comes first. binpacking fills: the most used node comes first.
"Used" is the weighted mean over the node's resource types of used/capacity (weights default to 1).
The index holds each node under its current score and is told when a node's usage changes, so
picking a node never sorts the cluster; ties go to the node ID, so the order is deterministic.
"""

from __future__ import annotations

from collections.abc import Iterator

from sortedcontainers import SortedList

from core.objects.node import Node

FAIR = "fair"
BINPACKING = "binpacking"


class NodeIndex:
    def __init__(self, policy: str = FAIR, weights: dict[str, float] | None = None) -> None:
        self._reset(policy, weights)

    def _reset(self, policy: str, weights: dict[str, float] | None) -> None:
        self.policy = policy
        self.weights = dict(weights) if weights else None
        self._sign = -1.0 if policy == BINPACKING else 1.0
        self._order: SortedList[tuple[float, str]] = SortedList()
        self._keys: dict[str, tuple[float, str]] = {}
        self._nodes: dict[str, Node] = {}

    def _key(self, node: Node) -> tuple[float, str]:
        return (self._sign * node.usage_share(self.weights), node.node_id)

    def add(self, node: Node) -> None:
        key = self._key(node)
        self._nodes[node.node_id] = node
        self._keys[node.node_id] = key
        self._order.add(key)

    def remove(self, node_id: str) -> None:
        key = self._keys.pop(node_id, None)
        if key is not None:
            self._order.remove(key)
            del self._nodes[node_id]

    def update(self, node: Node) -> None:
        """Re-score a node after its usage or capacity changed."""
        old = self._keys.get(node.node_id)
        if old is None:
            return
        new = self._key(node)
        if new != old:
            order = self._order
            if order[0] == old:  # the usual case: the node just allocated on was the best one
                order.pop(0)
            else:
                order.remove(old)
            order.add(new)
            self._keys[node.node_id] = new

    def set_policy(self, policy: str, weights: dict[str, float] | None) -> None:
        """A reload changed the policy: rebuild the order."""
        nodes = list(self._nodes.values())
        self._reset(policy, weights)
        for node in nodes:
            self.add(node)

    def __iter__(self) -> Iterator[Node]:
        """Nodes in policy order, best first."""
        for _, node_id in self._order:
            yield self._nodes[node_id]

    def __len__(self) -> int:
        return len(self._nodes)
