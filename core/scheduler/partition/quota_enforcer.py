"""Quota enforcement of one partition: each queue's timer after its max was lowered, and the run that
takes victims when the timer fires (the planning is core.scheduler.partition.quota_plan's).

Follows ../shared/design/quota-enforcement-preemption.txt: a lowered max (or a changed delay) starts the
queue's timer; a raise that brings the max back above usage cancels it; a queue whose run is in
progress is left alone, so changes landing meanwhile are skipped, not stacked. When the delay has
passed, the run takes what the plan names, and its outcome is kept on the queue for the REST API.
"""

from __future__ import annotations

from collections.abc import Callable

import structlog

from core.events import RawEvent
from core.objects import change_events
from core.objects.allocation import Allocation
from core.objects.queue import Queue, QuotaOutcome
from core.objects.queue_events import QueueShape
from core.objects.queue_tree import QueueTree
from core.resources import Resource
from core.scheduler.partition import quota_plan
from core.scheduler.partition.preemption_ledger import PreemptionKind, PreemptionLedger, Ref

# Marks an allocation as a victim (why, for its RM; when; of which kind of preemption; what its event
# says), as the partition does.
MarkVictim = Callable[[Allocation, str, float, PreemptionKind, str], None]


def _lowered(old: Resource | None, new: Resource) -> bool:
    """Whether a new max is lower than the old in some type (a type newly limited counts)."""
    if old is None:
        return True
    return any(name not in old or value < old[name] for name, value in new.items())


class QuotaEnforcer:
    def __init__(
        self,
        rm_id: str,
        tree: QueueTree,
        ledger: PreemptionLedger,
        mark_victim: MarkVictim,
        record: Callable[[RawEvent], None],
        log: structlog.typing.FilteringBoundLogger,
    ) -> None:
        self._rm_id = rm_id
        self._tree = tree
        self._ledger = ledger
        self._mark_victim = mark_victim
        self._record = record
        self._log = log

    def update_timers(self, before: dict[str, QueueShape], now: float) -> None:
        """Start, restart or cancel each queue's timer after a configuration was applied (`before`:
        the queues as they were; empty when the configuration is loaded afresh)."""
        for queue in self._tree:
            if queue.quota_running:
                continue  # a change landing during a run is skipped, not stacked
            shape = before.get(queue.full_name)
            old_max, old_delay = (shape.max, shape.quota_delay) if shape is not None else (None, 0.0)
            delay = queue.props.quota_preemption_delay
            if delay <= 0 or queue.max is None or queue.is_root:
                queue.quota_timer = None
            elif _lowered(old_max, queue.max) or delay != old_delay:
                queue.quota_timer = now
            elif (
                queue.quota_timer is not None
                and quota_plan.preemptable(quota_plan.usage_of(queue), queue.max).is_zero()
            ):
                queue.quota_timer = None

    def fire_due(self, now: float, enabled: bool) -> None:
        """Run the queues whose delay has passed (`enabled`: the partition's quota preemption switch;
        when off, a due timer ends without a run)."""
        due = [
            (started + q.props.quota_preemption_delay, q)
            for q in self._tree
            if (started := q.quota_timer) is not None and now - started >= q.props.quota_preemption_delay
        ]
        # In order of firing; at the same moment a leaf goes before its parent (deeper first).
        due.sort(key=lambda item: (item[0], -item[1].full_name.count(".")))
        for _, queue in due:
            queue.quota_timer = None
            if enabled and not queue.quota_running:
                self.enforce(queue, now)

    def enforce(self, queue: Queue, now: float) -> None:
        target = quota_plan.preemptable(quota_plan.usage_of(queue), queue.max)
        if target.is_zero():
            queue.quota_outcome = QuotaOutcome(
                time=now, target={}, achieved={}, victims=0, complete=True, reason=""
            )
            return
        plans = quota_plan.plan(queue, target, busy=lambda q: bool(q.quota_running))
        achieved = Resource()
        for leaf_plan in plans:
            for victim in leaf_plan.victims:
                achieved.add_in_place(victim.resource)
                why = f"preempted to enforce the max of {queue.full_name}"
                said = f"Preempted by Quota change enforcement process in {leaf_plan.queue}"  # its leaf
                self._mark_victim(victim, why, now, PreemptionKind.QUOTA, said)
                self._ledger.for_quota(victim.ref, queue.full_name)
                queue.quota_running.add(victim.ref)
        achieved = Resource({k: min(achieved.get(k), v) for k, v in target.items()})
        reason = "; ".join(sorted({p.reason for p in plans if p.reason}))
        complete = all(achieved.get(k) >= v for k, v in target.items())
        victims = len(queue.quota_running)
        queue.quota_outcome = QuotaOutcome(
            time=now, target=target.as_dict(), achieved=achieved.as_dict(), victims=victims,
            complete=complete, reason=reason,
        )  # fmt: skip
        summary = (
            f"quota preemption of {queue.full_name}: target {target.as_dict()}, "
            f"took {achieved.as_dict()} with {victims} allocation(s)"
        )
        if not complete:
            summary += f"; short of the target because {reason}"
        limit = queue.max if queue.max is not None else Resource()  # YuniKorn's event carries the max
        self._record(change_events.quota_preemption(self._rm_id, queue.full_name, summary, limit, now))
        log_event = self._log.info if complete else self._log.warning
        log_event(
            "quota preemption" if complete else "quota preemption fell short",
            queue=queue.full_name, target=target.as_dict(), achieved=achieved.as_dict(),
            victims=victims, reason=reason,
        )  # fmt: skip

    def released(self, victim: Ref, enforced: str) -> None:
        """A quota victim's release was confirmed: the run of `enforced` waits for one fewer."""
        queue = self._tree.find(enforced)
        if queue is not None:
            queue.quota_running.discard(victim)
