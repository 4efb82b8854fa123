"""What applying a configuration now would preempt to enforce lowered maxes, changing nothing.

The plan uses the same functions as the real run (core.scheduler.partition.quota_plan), against the usage
of now and the new configuration's limits. Queues are planned in the order their timers would fire
(shorter delay first, then leaf before parent); what an earlier queue would take is marked as being
released while the later ones are planned, exactly as in the real run, and unmarked afterwards."""

from __future__ import annotations

from dataclasses import dataclass, field

from core.config import properties
from core.config.schema import PartitionConfig, QueueConfig
from core.objects.allocation import Allocation
from core.objects.queue import Queue
from core.resources import Resource
from core.scheduler.partition import Partition, quota_plan


@dataclass(frozen=True)
class QuotaPreview:
    partition: str
    queue: str
    target: Resource
    achievable: Resource
    delay: float
    will_run: bool
    reason: str
    victims: tuple[tuple[Allocation, str], ...] = field(default_factory=tuple)  # (victim, its queue)


def _configured(config: PartitionConfig) -> dict[str, tuple[QueueConfig, float]]:
    """Each queue's configuration and effective quota.preemption.delay, by lower-cased full name."""
    out: dict[str, tuple[QueueConfig, float]] = {}

    def walk(cfg: QueueConfig, name: str, parent_props: dict[str, str] | None) -> None:
        effective = properties.inherit(parent_props, cfg.property_map())
        delay = properties.parse(effective, is_leaf=not cfg.is_parent, is_root=parent_props is None)
        out[name.lower()] = (cfg, delay.quota_preemption_delay)
        for child in cfg.queues:
            walk(child, f"{name}.{child.name}", effective)

    walk(config.root, "root", None)
    return out


def preview(partition: Partition, config: PartitionConfig) -> list[QuotaPreview]:
    configured = _configured(config)

    def limits(queue: Queue) -> tuple[Resource | None, Resource | None]:
        found = configured.get(queue.full_name.lower())
        return (found[0].guaranteed, found[0].max) if found is not None else (queue.guaranteed, queue.max)

    queues = [q for q in partition.tree if not q.is_root and q.full_name.lower() in configured]
    queues.sort(key=lambda q: (configured[q.full_name.lower()][1], -q.full_name.count(".")))
    enabled = config.preemption.quota_preemption_enabled
    marked: list[Allocation] = []
    busy: set[str] = set()
    results: list[QuotaPreview] = []
    try:
        for queue in queues:
            _, new_max = limits(queue)
            target = quota_plan.preemptable(quota_plan.usage_of(queue), new_max)
            if target.is_zero():
                continue
            delay = configured[queue.full_name.lower()][1]
            if not enabled or delay <= 0:
                reason = (
                    "quota preemption is disabled for the partition"
                    if not enabled
                    else "quota.preemption.delay is 0"
                )
                results.append(
                    QuotaPreview(partition.name, queue.full_name, target, Resource(), delay, False, reason)
                )
                continue
            # A queue planned earlier with victims is running its own quota preemption by now, as in
            # the real run, where its victims are still being released: later plans leave it alone.
            plans = quota_plan.plan(
                queue, target, limits, busy=lambda q: bool(q.quota_running) or q.full_name in busy
            )
            victims = tuple((v, p.queue) for p in plans for v in p.victims)
            if victims:
                busy.add(queue.full_name)
            taken = Resource()
            for victim, _ in victims:
                taken.add_in_place(victim.resource)
                victim.releasing = True
                partition.applications[victim.application_id].queue.add_preempting(victim.resource)
                marked.append(victim)
            achievable = Resource({k: min(taken.get(k), v) for k, v in target.items()})
            reason = "; ".join(sorted({p.reason for p in plans if p.reason}))
            results.append(
                QuotaPreview(
                    partition.name, queue.full_name, target, achievable, delay, True, reason, victims
                )
            )
    finally:
        for victim in marked:  # the dry run changes nothing
            victim.releasing = False
            partition.applications[victim.application_id].queue.remove_preempting(victim.resource)
    return results
