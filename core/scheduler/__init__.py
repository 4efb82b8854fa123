"""The scheduler floor: partitions, the cluster context, the engine (the one writer), the scheduling
cycle, gang scheduling, node fit and preemption. It sits above the objects and the services on them
(placement, sort policies, user and group tracking) and below the RM adapter and the read views; see
docs/architecture.md."""
