"""Required-node preemption: an ask that may only run on one node (a DaemonSet pod) takes room there.

As YuniKorn does, this runs whatever the partition's `preemption.enabled` says: such a pod has nowhere
else to go. Queue guarantees are not considered; priorities are: a victim never has a higher
priority than the ask, and required-node allocations are never victims.
"""

from __future__ import annotations

from core.objects.allocation import Allocation
from core.objects.node import Node
from core.scheduler.partition import Partition
from core.scheduler.partition.preemption_ledger import PreemptionKind
from core.scheduler.partition.victim_order import fewest_that_fit, may_be_victim, victim_order


def choose_victims(node: Node, ask: Allocation) -> list[Allocation] | None:
    candidates = sorted(
        (a for a in node.allocations.values() if may_be_victim(a) and a.priority <= ask.priority),
        key=victim_order,
    )
    return fewest_that_fit(node, ask.resource, candidates)


def preempt_for(partition: Partition, ask: Allocation, node: Node, now: float) -> bool:
    """Release what the ask needs on its node; True when victims were chosen."""
    if ask.preempting:
        return False
    victims = choose_victims(node, ask)
    if not victims:
        return False
    partition.preempt(ask, victims, now, PreemptionKind.REQUIRED_NODE)
    return True
