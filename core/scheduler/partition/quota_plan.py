"""Quota enforcement through preemption: when a queue's max is lowered below what it uses.

Follows ../shared/design/quota-enforcement-preemption.txt:
- preemptable resource: usage minus the new max, for the types the new max sets and usage exceeds
  (the old max plays no part: every row of the document's table follows from this);
- a leaf gives victims from its running allocations that share a type with the target, except
  required-node ones: non-originators first, then lower priority, then those allowing preemption, then
  the youngest; taken until the target is met, never below the queue's guarantee, nor that of the
  enforced queue or any parent in between (best effort);
- a parent splits the target between children that have usage and no quota preemption running, by
  their share of the total releasable (usage above guaranteed; all usage without a guarantee), per
  type, rounded so the parts add up to the target, and recurses down to the leaves;
- priority fences and offsets, preemption.policy and preemption.delay play no part.

The planning functions only read state, so the same code serves the real run and the dry run.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass, field

from core.objects.allocation import Allocation
from core.objects.queue import Queue
from core.resources import ZERO, Resource
from core.scheduler.partition.victim_order import may_be_victim

# (guaranteed, max) of a queue: the live ones, or those of a configuration not yet applied (dry run)
Limits = Callable[[Queue], tuple[Resource | None, Resource | None]]


def live_limits(queue: Queue) -> tuple[Resource | None, Resource | None]:
    return queue.guaranteed, queue.max


def preemptable(usage: Resource, new_max: Resource | None) -> Resource:
    """What must go for usage to fit the new max: only the types the max sets and usage exceeds."""
    if new_max is None:
        return Resource()
    return Resource(
        {name: usage.get(name) - limit for name, limit in new_max.items() if usage.get(name) > limit}
    )


def usage_of(queue: Queue) -> Resource:
    """What a queue holds, less what is already being released."""
    return queue.allocated - queue.preempting


def _releasable(queue: Queue, guaranteed: Resource | None) -> Resource:
    used = usage_of(queue)
    if not guaranteed:
        return Resource({k: v for k, v in used.items() if v > 0})
    return Resource({k: v - guaranteed.get(k) for k, v in used.items() if v - guaranteed.get(k) > 0})


def victim_order(alloc: Allocation) -> tuple[bool, int, bool, bool, float]:
    """The document's order: non-originators first, lower priority, allowing preemption, youngest; a
    gang's placeholder goes before a real task where the document's order ties (it runs no work)."""
    preempt_self, placeholder = alloc.allow_preempt_self, alloc.placeholder
    return (alloc.originator, alloc.priority, not preempt_self, not placeholder, -alloc.create_time)


@dataclass
class QueuePlan:
    queue: str
    target: Resource
    victims: list[Allocation] = field(default_factory=list)
    achieved: Resource = field(default_factory=Resource)
    reason: str = ""

    @property
    def complete(self) -> bool:
        return all(self.achieved.get(k) >= v for k, v in self.target.items())


def plan(
    queue: Queue,
    target: Resource,
    limits: Limits = live_limits,
    busy: Callable[[Queue], bool] | None = None,
    _floors: tuple[Queue, ...] = (),
    _taken: dict[str, Resource] | None = None,
) -> list[QueuePlan]:
    """Victims, leaf by leaf, to take `target` out of `queue` (a leaf, or a parent split down).

    No queue of the run (the enforced one, the parents in between, the leaf) goes below its
    guarantee: `_floors` are the parents above the current queue, `_taken` what the victims chosen
    so far take from each queue of the run.
    """
    taken = {} if _taken is None else _taken
    if queue.is_leaf:
        return [_plan_leaf(queue, target, limits, _floors, taken)]
    children = [
        c for c in queue.children.values()
        if not usage_of(c).is_zero() and not (busy is not None and busy(c))
    ]  # fmt: skip
    releasable = {c.full_name: _releasable(c, limits(c)[0]) for c in children}
    parts = _split(target, children, releasable)
    plans: list[QueuePlan] = []
    for child in children:
        part = parts[child.full_name]
        if not part.is_zero():
            plans.extend(plan(child, part, limits, busy, (*_floors, queue), taken))
    if not plans:
        plans.append(
            QueuePlan(queue.full_name, target, reason="no child queue holds anything above its guarantee")
        )
    return plans


def _split(target: Resource, children: list[Queue], releasable: dict[str, Resource]) -> dict[str, Resource]:
    """Each child's part of the target, per type, by its share of the total releasable; largest
    remainders get the rounding, so the parts add up to the target (or to all that is releasable)."""
    parts: dict[str, dict[str, int]] = {c.full_name: {} for c in children}
    for name, amount in target.items():
        total = sum(releasable[c.full_name].get(name) for c in children)
        if total <= 0:
            continue
        want = min(amount, total)
        # Integer arithmetic: quantities go up to int64, beyond what a float holds exactly.
        shares = {c.full_name: divmod(want * releasable[c.full_name].get(name), total) for c in children}
        floors = {q: whole for q, (whole, _) in shares.items()}
        left = want - sum(floors.values())
        for q in sorted(shares, key=lambda q: shares[q][1], reverse=True)[:left]:
            floors[q] += 1
        for q, v in floors.items():
            if v > 0:
                parts[q][name] = v
    return {q: Resource(v) for q, v in parts.items()}


def _plan_leaf(
    queue: Queue,
    target: Resource,
    limits: Limits,
    floors: tuple[Queue, ...] = (),
    taken_from: dict[str, Resource] | None = None,
) -> QueuePlan:
    taken_from = {} if taken_from is None else taken_from
    guards = [(q, g) for q in (queue, *floors) if (g := limits(q)[0])]
    result = QueuePlan(queue.full_name, target)
    candidates = sorted(
        (
            a for app in queue.applications.values() for a in app.allocations.values()
            if may_be_victim(a) and a.resource.shares_type_with(target)
        ),
        key=victim_order,
    )  # fmt: skip
    if not candidates:
        result.reason = "no running allocation uses the resources over the max"
        return result
    usage = {q.full_name: usage_of(q) for q, _ in guards}
    taken = Resource()
    stopped_by_guarantee = False
    for victim in candidates:
        if result.complete:
            break
        if not any(victim.resource.get(k) > 0 and taken.get(k) < v for k, v in target.items()):
            continue  # frees nothing still needed
        if any(
            usage[q.full_name].get(k) - taken_from.get(q.full_name, ZERO).get(k) - victim.resource.get(k) < g
            for q, guaranteed in guards for k, g in guaranteed.items()
            if victim.resource.get(k) > 0
        ):  # fmt: skip
            stopped_by_guarantee = True
            continue
        result.victims.append(victim)
        taken.add_in_place(victim.resource)
        for q, _ in guards:
            taken_from.setdefault(q.full_name, Resource()).add_in_place(victim.resource)
    result.achieved = Resource({k: min(taken.get(k), v) for k, v in target.items()})
    if not result.complete:
        result.reason = (
            "stopped at the queue's guaranteed resources" if stopped_by_guarantee
            else "not enough running allocations use the resources over the max"
        )  # fmt: skip
    return result
