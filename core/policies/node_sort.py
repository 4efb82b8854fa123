"""Node choice for an ask: fair spreads load, binpacking fills the fullest node that fits first."""

from __future__ import annotations

from collections.abc import Iterable

from core.objects.node import Node
from core.resources import Resource

FAIR = "fair"
BINPACKING = "binpacking"


def best_node(
    nodes: Iterable[Node],
    resource: Resource,
    policy: str = FAIR,
    weights: dict[str, float] | None = None,
) -> Node | None:
    """The schedulable node with room for `resource` that the policy likes best.

    fair: the least used node (lowest weighted usage share); binpacking: the most used one.
    Ties go to the node ID so the choice is deterministic.
    """
    best: Node | None = None
    best_key: tuple[float, str] | None = None
    sign = -1.0 if policy == BINPACKING else 1.0
    for node in nodes:
        if not node.schedulable or not node.fits(resource):
            continue
        key = (sign * node.usage_share(weights), node.node_id)
        if best_key is None or key < best_key:
            best, best_key = node, key
    return best
