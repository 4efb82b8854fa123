"""Where a new application of a partition goes: the leaf queue its placement rules choose, made when the
rules may create it (the recovery queue for a recovered application no rule places), with the limits a
dynamic queue takes from the application's tags (a Kubernetes namespace's annotations)."""

from __future__ import annotations

from typing import TYPE_CHECKING

from core.config.validation import RECOVERY_QUEUE
from core.objects import change_events, namespace_limits, queue_events
from core.objects.queue import Queue
from core.placement.manager import PlacementRefused
from core.placement.rules import PlacementRequest
from core.scheduler.rejection import Rejection

if TYPE_CHECKING:  # the partition owns this part and hands itself in
    from core.scheduler.partition.partition import Partition


def leaf_for(part: Partition, request: PlacementRequest, now: float) -> Queue:
    """The leaf queue the application goes to; Rejection when no rule places it."""
    app_id = request.app_id
    try:
        placement = part.placement.place(request, part.tree)
    except PlacementRefused as exc:
        raise Rejection(str(exc)) from None
    queue = part.tree.find(placement.queue_name)
    if queue is None and placement.queue_name == RECOVERY_QUEUE:
        queue = part.tree.create_recovery()
        part.events.append(change_events.queue_created(part.rm_id, queue.full_name, app_id, now))
        part.log.warning("recovery queue made", applicationID=app_id, queue=queue.full_name)
    elif queue is None and placement.create:
        existing = set(part.tree.queues)
        queue = part.tree.create(placement.queue_name)
        for created in [q for key, q in part.tree.queues.items() if key not in existing]:  # parents too
            part.events.append(change_events.queue_created(part.rm_id, created.full_name, app_id, now))
    assert queue is not None and queue.is_leaf
    if not queue.managed and queue.full_name != RECOVERY_QUEUE:
        _apply_tagged_limits(part, queue, app_id, request.tags, now)
    return queue


def _apply_tagged_limits(
    part: Partition, queue: Queue, app_id: str, tags: dict[str, str], now: float
) -> None:
    """A dynamic queue takes the max, guaranteed and maxapplications its newest application's tags
    carry (a Kubernetes namespace's annotations); a tag that cannot be read is reported, not used."""
    limits = namespace_limits.from_tags(tags)
    for problem in limits.problems:
        part.log.warning("application tag ignored", applicationID=app_id, queue=queue.full_name,
                         detail=problem)  # fmt: skip
    if not limits.any:
        return
    before = queue_events.snapshot([queue])
    was = (queue.max, queue.guaranteed)
    if limits.max is not None:
        queue.max = limits.max
    if limits.guaranteed is not None:
        queue.guaranteed = limits.guaranteed
    if limits.max_applications:
        queue.max_applications = limits.max_applications
    if (queue.max, queue.guaranteed) != was:
        part.parking.everything()  # asks parked under the old max (or guarantee) may run now
    part.events.extend(queue_events.reload_events(part.rm_id, before, [queue], now))
