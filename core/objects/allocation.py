"""Asks and allocations: one object, pending until it has a node.

YuniKorn merged its AllocationAsk and Allocation into one object with the same life: an ask is an
allocation without a node. Keeping one type means a preempted-and-resubmitted task, an RM-reported
running task and a freshly scheduled one are all handled by the same code.
"""

from __future__ import annotations

from dataclasses import dataclass, field

from core.constraints.ask import NO_CONSTRAINTS, AskConstraints
from core.objects.partition_key import PartitionKey
from core.resources import Resource

# Tag keys the core reads (YuniKorn's names, so its shims' tags work unchanged).


@dataclass(eq=False, slots=True)
class Allocation:
    key: str
    application_id: str
    partition: PartitionKey
    resource: Resource
    priority: int = 0
    tags: dict[str, str] = field(default_factory=dict)
    node_id: str = ""  # empty while pending
    task_group: str = ""
    pod_group: str = ""  # the group of its application it starts with (core.objects.pod_group)
    placeholder: bool = False
    originator: bool = False
    allow_preempt_self: bool = False
    allow_preempt_other: bool = False
    create_time: float = 0.0  # when the task was created (tag creationTime), else when the core saw it
    allocated_time: float = 0.0
    instance_type: str = ""  # of the node it was placed on (si/instance-type), for its usage (app_usage)
    foreign: bool = False  # occupies a node but belongs to no application or queue
    terminating: bool = False  # its pod is being deleted: it holds its node, spread counts leave it out
    releasing: bool = False  # preempted: the core asked the RM to release it and awaits confirmation
    preempting: bool = False  # an ask with victims chosen for it, not all released yet
    triggered_preemption: bool = False  # victims were ever chosen for it (REST: triggeredPreemption)
    triggered_scale_up: bool = False  # it ever waited for a node only (REST: triggeredScaleUp)
    waiting: str = ""  # how it waits now (core.scheduler.results.Waiting's value), as last sent to its RM
    held: bool = False  # its resource is held on its queues (Queue.held) until it is placed or removed
    constraints: AskConstraints = NO_CONSTRAINTS  # parsed from tags when the ask arrives
    # Gang scheduling: a real task taking a placeholder's place points at it, and the placeholder back,
    # from the core's decision until the RM confirms the placeholder's release.
    replaces: Allocation | None = None
    replaced_by: Allocation | None = None
    released_by_core: bool = False  # a placeholder the core asked the RM to release (any reason)
    placeholder_used: bool = False  # a real allocation that took a placeholder's place
    # Why a pending ask is still pending: the latest reason, when it was last seen, and how often.
    pending_reason: str = ""
    reason_time: float = 0.0
    reason_count: int = 0
    # Its namespace and labels (from the tags), once the pod rules first needed them.
    identity: tuple[str, dict[str, str], dict[str, str]] | None = None
    # Why no node takes it, node by node (node_search.why_no_node), and when that was last worked out.
    no_node_tally: str = ""
    tallied_at: float = float("-inf")
    # Why preemption, tried for this ask, found no plan: the latest reason, when, and how often.
    preemption_reason: str = ""
    preemption_time: float = 0.0
    preemption_count: int = 0

    def note_pending(self, reason: str, now: float) -> None:
        if reason != self.pending_reason:
            self.pending_reason, self.reason_count = reason, 0
        self.reason_time = now
        self.reason_count += 1

    def note_no_preemption(self, reason: str, now: float) -> bool:
        """Record why preemption found no plan; True when the reason changed (worth an event)."""
        changed = reason != self.preemption_reason
        if changed:
            self.preemption_reason, self.preemption_count = reason, 0
        self.preemption_time = now
        self.preemption_count += 1
        return changed

    @property
    def is_allocated(self) -> bool:
        return bool(self.node_id)

    @property
    def required_node(self) -> str:
        return self.constraints.required_node

    @property
    def ref(self) -> tuple[str, str]:
        """(application, key): what identifies an ask across the partition."""
        return (self.application_id, self.key)
