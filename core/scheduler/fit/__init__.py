"""Whether an ask fits a node: one check per rule the ask carries (its constraints, the pod rules over
the partition, room), each with a named refusal reason, and the partition's pod counts those rules
read. The search over the nodes is core.scheduler.node_search, a row above the partition."""
