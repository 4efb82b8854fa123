"""The most of each resource type any one node of a partition has: an ask beyond it fits no node at
all, whatever runs where, and that is known without a pass over the nodes."""

from __future__ import annotations

from collections.abc import Mapping

from core.objects.node import Node
from core.resources import Resource


class LargestNode:
    def __init__(self, nodes: Mapping[str, Node]) -> None:
        self._nodes = nodes
        self._most: dict[str, int] | None = {}  # None: to be worked out again (a node shrank or went)

    def added(self, capacity: Resource) -> None:
        if self._most is not None:
            for name, value in capacity.items():
                if value > self._most.get(name, 0):
                    self._most[name] = value

    def changed(self) -> None:
        """A node was resized or removed: the most may be less now."""
        self._most = None

    def most(self) -> dict[str, int]:
        if self._most is None:
            self._most = {}
            for node in self._nodes.values():
                self.added(node.capacity)
        return self._most

    def holds(self, resource: Resource) -> bool:
        """Whether some node, were it empty, could hold `resource`."""
        return resource.fits_in(self.most())
