"""What each node change records in the event log, as YuniKorn's node events record it."""

from __future__ import annotations

from core.events import ChangeDetail, ChangeType, Event, EventType
from core.resources import Resource
from core.scheduler.commands import NodeAction, NodeChange
from core.scheduler.partition import Partition


def _schedulable(rm_id: str, node_id: str, schedulable: bool, now: float) -> Event:
    message = f"schedulable: {'true' if schedulable else 'false'}"  # YuniKorn's text
    return Event(rm_id, EventType.NODE, node_id, ChangeType.SET, ChangeDetail.NODE_SCHEDULABLE, message, now)


def node_state(part: Partition, node_id: str) -> tuple[bool, Resource] | None:
    """What of a node its events compare (schedulable, capacity); None when it is not there."""
    node = part.nodes.get(node_id)
    return (node.schedulable, node.capacity) if node is not None else None


def node_events(
    rm_id: str,
    part: Partition,
    change: NodeChange,
    before: tuple[bool, Resource] | None,
    now: float,
) -> list[Event]:
    """The events of a node change that was applied; `before` is the node's (schedulable, capacity)
    as it was (None for a node not there before)."""
    node_id = change.node_id
    node = part.nodes.get(node_id)
    action = change.action
    if action in (NodeAction.CREATE, NodeAction.CREATE_DRAIN):
        assert node is not None
        # YuniKorn sets a new node's schedulable flag (an event) and then adds it.
        added = Event(
            rm_id, EventType.NODE, node_id, ChangeType.ADD, ChangeDetail.DETAILS_NONE,
            "Node added to the scheduler", now, resource=node.capacity,
        )  # fmt: skip
        return [_schedulable(rm_id, node_id, node.schedulable, now), added]
    if action == NodeAction.DECOMMISSION:
        removed = Event(
            rm_id, EventType.NODE, node_id, ChangeType.REMOVE, ChangeDetail.NODE_DECOMISSION,
            "Node removed from the scheduler", now,
        )  # fmt: skip
        return [_schedulable(rm_id, node_id, False, now), removed]
    assert node is not None and before is not None
    was_schedulable, old_capacity = before
    if action == NodeAction.UPDATE:
        if node.capacity == old_capacity:  # labels or taints only: YuniKorn records nothing
            return []
        return [
            Event(
                rm_id, EventType.NODE, node_id, ChangeType.SET, ChangeDetail.NODE_CAPACITY, "", now,
                resource=node.capacity,
            )
        ]  # fmt: skip
    if node.schedulable != was_schedulable:  # DRAIN, DRAIN_TO_SCHEDULABLE: only a change is recorded
        return [_schedulable(rm_id, node_id, node.schedulable, now)]
    return []
