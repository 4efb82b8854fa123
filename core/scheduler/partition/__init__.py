"""A partition and what it owns: its queue tree, applications, nodes and their indexes, the pod rules
over its nodes, gangs, reservations, the preemption ledger and the quota enforcer's timers, and the
bookkeeping of placing, removing and resizing. The search, the preemptors and the cycle sit above it
(core.scheduler.node_search, core.scheduler.preemption, core.scheduler.cycle) and work on a
Partition; nothing here knows them."""

from core.scheduler.partition.partition import Partition

__all__ = ["Partition"]
