"""Preemption: taking running allocations back so that an ask can run.

- required_node: a DaemonSet-style ask that must run on one node takes room on that node.
- inter_queue: an ask in a queue below its guarantee takes from queues above theirs.
- dry_run: what a configuration with lowered maxes would preempt (quota enforcement), changing nothing.

Victims are marked `releasing` and reported to their RM as PREEMPTED_BY_SCHEDULER; they keep their
room (counted as `preempting` on their queues) until the RM confirms the release.
"""
