"""What each node change records in the event log."""

from __future__ import annotations

from core.events import ChangeDetail, ChangeType, Event, EventType
from core.scheduler.commands import NodeAction, NodeChange
from core.scheduler.partition import Partition

# What each node action shows in the event log: (change type, si ChangeDetail, message).
_NODE_EVENTS: dict[NodeAction, tuple[ChangeType, ChangeDetail, str]] = {
    NodeAction.CREATE: (ChangeType.ADD, ChangeDetail.DETAILS_NONE, "node added"),
    NodeAction.CREATE_DRAIN: (ChangeType.ADD, ChangeDetail.NODE_SCHEDULABLE, "node added, not schedulable"),
    NodeAction.UPDATE: (ChangeType.SET, ChangeDetail.NODE_CAPACITY, "node updated"),
    NodeAction.DRAIN: (ChangeType.SET, ChangeDetail.NODE_SCHEDULABLE, "node draining: not schedulable"),
    NodeAction.DRAIN_TO_SCHEDULABLE: (
        ChangeType.SET,
        ChangeDetail.NODE_SCHEDULABLE,
        "node schedulable again",
    ),
    NodeAction.DECOMMISSION: (ChangeType.REMOVE, ChangeDetail.NODE_DECOMISSION, "node removed"),
}


def node_event(rm_id: str, part: Partition, change: NodeChange, now: float) -> Event:
    """The event a node change records, with the node's capacity (as it is after the change)."""
    change_type, detail, message = _NODE_EVENTS[change.action]
    node = part.nodes.get(change.node_id)
    resource = node.capacity.as_dict() if node is not None else {}
    return Event(rm_id, EventType.NODE, change.node_id, change_type, detail, message, now, resource=resource)
