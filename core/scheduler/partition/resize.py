"""An allocation the RM runs, sent again at a new size (Kubernetes' in-place pod resize)."""

from __future__ import annotations

from core.objects import change_events
from core.objects.allocation import Allocation
from core.resources import Resource
from core.scheduler.partition import Partition
from core.scheduler.rejection import Rejection


def resize(part: Partition, alloc: Allocation, now: float) -> bool:
    """An allocation the RM runs, sent again (Kubernetes' in-place resize): False when this
    partition does not hold it; True when it does on that node, taken at its new size. As YuniKorn,
    whatever that does to the node and the queues: the pod already runs at it (its kubelet resized
    it). A queue pushed over its max shows it; its new asks wait until it is back under."""
    held = part.foreign.get(alloc.key) if alloc.foreign else None
    app = None if alloc.foreign else part.applications.get(alloc.application_id)
    if app is not None:
        held = app.allocations.get(alloc.key)
    if held is None:
        return False
    if held.node_id != alloc.node_id:
        raise Rejection(f"allocation {alloc.key} runs on node {held.node_id}, not on {alloc.node_id}")
    if alloc.terminating and not held.terminating:
        # Sent again as its pod is being deleted: topology spread stops counting it at once.
        part.pod_rules.terminating(held, part.node(held.node_id))
        part.parking.everything()
    before, after = held.resource, alloc.resource
    if after == before:
        return True
    if held.placeholder:  # it holds its task group's size for the real task; the gang counts on it
        raise Rejection(f"allocation {alloc.key} is a placeholder: its size is its task group's")
    node = part.node(held.node_id)
    node.resize_allocation(held.key, after)
    part.node_index.update(node)
    if app is None:
        part.occupied_total = part.occupied_total - before + after
        part.room_changed()
    else:
        app.resize_allocation(held.key, after)
        app.queue.remove_allocated(before)
        app.queue.add_allocated(after)
        if held.releasing:  # a victim being preempted: what it gives back is its new size
            app.queue.remove_preempting(before)
            app.queue.add_preempting(after)
        part.user_groups.resized(app, before, after)
        # YuniKorn's UpdateAllocationResources: the user's (and group's) usage grows by the difference
        # (UG_*_RESOURCE ADD, negative where it shrank).
        part.usage_added(app, Resource({k: v for k, v in (after - before).items() if v}), now)
    held.resource = after
    part.parking.everything()
    part.events.append(change_events.allocation_resized(part.rm_id, held, before, now))
    return True
