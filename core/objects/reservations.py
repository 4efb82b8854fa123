"""Reservations of one partition: a node held for an ask that fits no node now (or waits for the
victims preempted for it), so smaller asks do not keep taking the room it needs. Kept both ways,
ask -> node here and node -> asks on the node, and always changed together."""

from __future__ import annotations

from collections.abc import Callable

import structlog

from core.objects.allocation import Allocation
from core.objects.node import Node

Ref = tuple[str, str]  # (application, allocation key)


class Reservations(dict[Ref, str]):
    """Ask -> the ID of the node reserved for it."""

    def __init__(
        self,
        nodes: dict[str, Node],
        log: structlog.typing.FilteringBoundLogger,
        on_release: Callable[[Node], None] | None = None,
        on_change: Callable[[Allocation, str, bool], None] | None = None,
    ) -> None:
        super().__init__()
        self._nodes = nodes
        self._log = log
        self._on_release = on_release  # the node is free of this hold: others may take or reserve it
        self._on_change = on_change  # (ask, node ID, reserved): the partition records NODE_RESERVATION
        self._asks: dict[Ref, Allocation] = {}

    def reserve(self, ask: Allocation, node: Node) -> None:
        self[ask.ref] = node.node_id
        self._asks[ask.ref] = ask
        node.reservations.add(ask.ref)
        if self._on_change is not None:
            self._on_change(ask, node.node_id, True)
        self._log.debug(
            "node reserved", applicationID=ask.application_id, allocationKey=ask.key, nodeID=node.node_id
        )

    def release(self, ref: Ref) -> None:
        """Give the node back (nothing when the ask holds none)."""
        node_id = self.pop(ref, None)
        if node_id is None:
            return
        ask = self._asks.pop(ref)
        if self._on_change is not None:
            self._on_change(ask, node_id, False)
        node = self._nodes.get(node_id)
        if node is not None:
            node.reservations.discard(ref)
            if self._on_release is not None:
                self._on_release(node)
