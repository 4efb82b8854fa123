"""What the engine tells each RM: one batch per RM per engine step. Free of transport types."""

from __future__ import annotations

from dataclasses import dataclass, field
from enum import StrEnum

from core.objects.allocation import Allocation
from core.objects.application import AppState
from core.objects.partition_key import PartitionKey


class Termination(StrEnum):
    STOPPED_BY_RM = "STOPPED_BY_RM"
    TIMEOUT = "TIMEOUT"
    PREEMPTED_BY_SCHEDULER = "PREEMPTED_BY_SCHEDULER"
    PLACEHOLDER_REPLACED = "PLACEHOLDER_REPLACED"


class Waiting(StrEnum):
    """Why an ask waits, in the two kinds YuniKorn's RM callback UpdateContainerSchedulingState names:
    it fits its queue, limits and gang but no node has room (FAILED: more nodes would help, the
    cluster autoscaler's signal), or something of its own holds it back (SKIPPED: a queue's max,
    maxapplications, a user's or group's limit, its gang's placeholders, its required node)."""

    NO_NODE = "FAILED"
    HELD = "SKIPPED"


@dataclass(frozen=True)
class SchedulingState:
    """An ask's way of waiting changed: sent to its RM (si UpdateContainerSchedulingStateRequest)."""

    app_id: str
    key: str
    waiting: Waiting
    reason: str


@dataclass(slots=True)  # not frozen: a frozen dataclass's __init__ costs 3x, and one is made per change
class Released:
    partition: PartitionKey
    app_id: str
    key: str
    termination: Termination
    message: str
    placeholder: bool = False  # a gang placeholder (counted in the metrics apart)


@dataclass(frozen=True)
class RejectedItem:
    """A refused allocation (key + app), application (app) or node (key = node ID)."""

    key: str
    app_id: str
    reason: str


@dataclass(slots=True)  # not frozen: a frozen dataclass's __init__ costs 3x, and one is made per change
class AppUpdate:
    app_id: str
    state: AppState
    time: float
    message: str = ""


@dataclass
class ResultBatch:
    rm_id: str
    new_allocations: list[Allocation] = field(default_factory=list)
    released: list[Released] = field(default_factory=list)
    rejected_allocations: list[RejectedItem] = field(default_factory=list)
    accepted_apps: list[str] = field(default_factory=list)
    rejected_apps: list[RejectedItem] = field(default_factory=list)
    updated_apps: list[AppUpdate] = field(default_factory=list)
    accepted_nodes: list[str] = field(default_factory=list)
    rejected_nodes: list[RejectedItem] = field(default_factory=list)
    scheduling_states: list[SchedulingState] = field(default_factory=list)

    def has_allocation_news(self) -> bool:
        return bool(
            self.new_allocations or self.released or self.rejected_allocations or self.scheduling_states
        )

    def has_application_news(self) -> bool:
        return bool(self.accepted_apps or self.rejected_apps or self.updated_apps)

    def has_node_news(self) -> bool:
        return bool(self.accepted_nodes or self.rejected_nodes)
