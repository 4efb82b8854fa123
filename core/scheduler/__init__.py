"""The scheduler floor, on inner rows (docs/architecture.md): its vocabulary (commands, results,
refusals, metrics); the node checks (fit/); a partition and what it owns (partition/); the node
search; the preemptors (preemption/); the cycle (cycle/); the cluster context and the engine (the one
writer). It sits above the objects and the services on them (placement, sort policies, user and group
tracking) and below the RM adapter and the read views."""
