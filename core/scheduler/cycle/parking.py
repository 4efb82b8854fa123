"""Which asks a cycle parks after failing to place them, and until when (core.objects.parking).

Not parked, so tried again every cycle as before: asks bound to one node (they reserve it and wait
there), and reserved asks and those with victims on their way out (the reservation is served first).
An ask that could have looked
for victims but found the cycle's preemption attempts used up is parked with a turn: the next cycles
wake such asks a few at a time, oldest first.
"""

from __future__ import annotations

import math

from core.objects.allocation import Allocation
from core.objects.application import Application
from core.objects.parking import Why
from core.objects.queue import Queue
from core.scheduler.partition import Partition

RESERVATION_DELAY = 2.0  # seconds an ask waits before it may reserve a node, as YuniKorn


def park(
    partition: Partition,
    leaf: Queue,
    app: Application,
    ask: Allocation,
    why: Why,
    now: float,
    timers: bool = True,
    turn: bool = False,
) -> bool:
    """Park the ask the cycle could not place (`why`: what held it); False when it must stay.
    `timers`: whether waiting longer could help it (no: it is bigger than every node). `turn`: it may
    look for victims, and the cycle's attempts were used up before its turn."""
    lot = partition.parking
    if not lot.enabled or ask.required_node or ask.preempting or ask.ref in partition.reservations:
        return False
    pod_rules = ask.constraints.waits_on_peers  # core.constraints.rule_facts
    wake_at = math.inf
    # Waiting longer may help, unless it is bigger than every node (`timers` off): it may reserve a
    # node once it has waited strictly longer than the delay, and look for victims after its queue's.
    if timers and why is Why.ROOM and now - ask.create_time <= RESERVATION_DELAY:
        wake_at = first_time_after(ask.create_time, RESERVATION_DELAY, strictly=True)
    if why is Why.ROOM and pod_rules:
        why = Why.PEERS  # other pods decide where it may go: any placed or gone may change that
    if timers and _may_preempt_later(partition, ask):
        # Victims come and go with every allocation, and the queues' usage against their guarantees
        # with every one that ends.
        why = Why.PEERS
        delay = leaf.props.preemption_delay
        if now - ask.create_time < delay:  # not yet, as _may_preempt asks it
            wake_at = min(wake_at, first_time_after(ask.create_time, delay, strictly=False))
    lot.park(app, ask, why, wake_at if now < wake_at < math.inf else None, turn=turn)
    app.park(ask)
    return True


def first_time_after(start: float, delay: float, strictly: bool) -> float:
    """The first time t at which `t - start > delay` (`strictly`) or `t - start >= delay` holds, as the
    scheduler computes it in floating point: a timer at t then finds the ask ready (the subtraction
    rounds, so start + delay alone may fall a hair short of it)."""
    t = start + delay
    while (t - start <= delay) if strictly else (t - start < delay):
        t = math.nextafter(t, math.inf)
    return t


def _may_preempt_later(partition: Partition, ask: Allocation) -> bool:
    """Whether preemption could ever find the ask room (before or after its delay)."""
    return partition.config.preemption.enabled and ask.allow_preempt_other
