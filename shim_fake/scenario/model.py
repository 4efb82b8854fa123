"""A scenario: the cluster, the queue configuration, the work and the events, in scenario seconds."""

from __future__ import annotations

from dataclasses import dataclass, field
from enum import StrEnum

from shim_fake.scenario.core_formats import QueueReader
from shim_fake.scenario.resource import Resource
from shim_fake.scenario.units import fmt_quantity


@dataclass(frozen=True)
class NodeSpec:
    node_id: str
    resources: Resource
    attributes: tuple[tuple[str, str], ...] = ()


@dataclass(frozen=True)
class TaskGroup:
    name: str
    count: int
    resources: Resource
    priority: int = 0
    duration: float | None = None  # None: runs until stopped (released at the scenario's end)
    arrival: float = 0.0  # absolute scenario time the group's tasks are submitted
    allow_preempt_self: bool = True
    allow_preempt_other: bool = True
    originator: bool = False
    tags: tuple[tuple[str, str], ...] = ()
    line: int = 0
    task_group: str = ""  # the gang task group these tasks belong to (`taskGroup`)
    placeholder: bool = False  # the gang's placeholders, made by the runner, not written in a scenario


@dataclass(frozen=True)
class GangGroup:
    """A gang's task group, as YuniKorn's `task-groups` annotation declares one."""

    name: str
    min_member: int
    resources: Resource

    def placeholders(self) -> TaskGroup:
        """The group's placeholders: one per member, at the member's size, held until the core replaces
        or releases them."""
        return TaskGroup(
            name=f"ph-{self.name}", count=self.min_member, resources=self.resources, duration=None,
            task_group=self.name, placeholder=True,
        )  # fmt: skip


@dataclass(frozen=True)
class GangSpec:
    groups: tuple[GangGroup, ...]
    style: str = "Soft"  # or Hard
    timeout: float | None = None  # scenario seconds the placeholders may wait; None: the core's default

    def size(self) -> Resource:
        """The whole gang: every group's members at their size (the application's placeholderAsk)."""
        total = Resource()
        for group in self.groups:
            for _ in range(group.min_member):
                total = total + group.resources
        return total


@dataclass(frozen=True)
class AppSpec:
    app_id: str
    queue: str
    arrival: float = 0.0
    user: str = "nobody"
    groups: tuple[str, ...] = ()
    tags: tuple[tuple[str, str], ...] = ()
    restart: bool = True  # re-submit a task that was preempted or lost with its node
    tasks: tuple[TaskGroup, ...] = ()
    line: int = 0
    gang: GangSpec | None = None


@dataclass(frozen=True)
class ConfigChange:
    at: float
    config: str
    line: int = 0


@dataclass(frozen=True)
class NodeEvent:
    at: float
    action: str  # add | drain | undrain | decommission
    nodes: tuple[NodeSpec, ...]
    line: int = 0


class ExpectKind(StrEnum):
    """What a scenario may expect of a run (the keys of its `expect` list)."""

    EVERY_TASK_RAN = "every_task_ran"
    EVERY_TASK_FINISHED = "every_task_finished"
    QUEUE_USAGE_AT_MOST = "queue_usage_at_most"
    QUEUE_USAGE_AT_LEAST = "queue_usage_at_least"
    PREEMPTED = "preempted"
    NOT_PREEMPTED = "not_preempted"
    WAIT_P99_AT_MOST = "wait_p99_at_most"
    NO_REJECTIONS = "no_rejections"
    GANG_RAN_WHOLE = "gang_ran_whole"


# The parameters of an expectation, as the loader checked them: queue, app, task and resource are
# text; value (a quantity in the resource's unit) and at_least are whole numbers; after, before and
# seconds are scenario seconds.
ExpectParam = str | int | float


@dataclass(frozen=True)
class Expectation:
    kind: ExpectKind
    params: dict[str, ExpectParam] = field(default_factory=dict)  # in the order the file gives them
    line: int = 0

    def text(self, key: str, default: str = "") -> str:
        value = self.params.get(key)
        return default if value is None else str(value)

    def whole(self, key: str) -> int | None:
        value = self.params.get(key)
        return None if value is None else int(value)

    def seconds(self, key: str) -> float | None:
        value = self.params.get(key)
        return None if value is None else float(value)

    def describe(self) -> str:
        resource = str(self.params.get("resource") or "memory")
        parts = []
        for key, value in self.params.items():
            if key == "value" and isinstance(value, int):
                parts.append(f"value={fmt_quantity(resource, value)}")
            elif isinstance(value, float):
                parts.append(f"{key}={value:g}s")
            else:
                parts.append(f"{key}={value}")
        return f"{self.kind}({', '.join(parts)})" if parts else self.kind


@dataclass(frozen=True)
class Scenario:
    name: str
    config: str  # queues.yaml text in force at the start
    nodes: tuple[NodeSpec, ...]
    apps: tuple[AppSpec, ...]
    # How its queue configurations are read (the core's reading, given to the loader): the recording
    # reads the limits in force from each configuration with it.
    queue_reader: QueueReader = field(compare=False, repr=False)
    config_changes: tuple[ConfigChange, ...] = ()
    node_events: tuple[NodeEvent, ...] = ()
    expectations: tuple[Expectation, ...] = ()
    description: str = ""
    end: float | None = None  # scenario time to stop at; None: when all work is done
    speed: float = 1.0
    report_resource: str = "memory"
    sample_interval: float = 0.5

    def task_count(self) -> int:
        return sum(g.count for app in self.apps for g in app.tasks)  # placeholders not included

    def last_event_time(self) -> float:
        times = [a.arrival for a in self.apps] + [g.arrival for a in self.apps for g in a.tasks]
        times += [c.at for c in self.config_changes] + [e.at for e in self.node_events]
        return max(times, default=0.0)


class TaskState(StrEnum):
    WAITING = "waiting"  # not submitted yet
    PENDING = "pending"  # asked for, not allocated
    RUNNING = "running"
    DONE = "done"  # ran to its end (or, running until stopped, was stopped at the scenario's end)
    STOPPED = "stopped"  # preempted, lost with its node, or cut short at the scenario's end
    REJECTED = "rejected"  # the core refused its ask or its application


@dataclass(eq=False)
class Task:
    """One task of a scenario as it runs: its current attempt and what happened to it."""

    app: AppSpec
    group: TaskGroup
    name: str  # group-N: stable across restarts
    key: str = ""  # the current allocation key
    attempt: int = 0
    state: TaskState = TaskState.WAITING
    submitted_at: float = 0.0
    ends_at: float | None = None
    node_id: str = ""
    ran: bool = False
    preemptions: int = 0
    lost: int = 0
    waits: list[float] = field(default_factory=list)
    created: str = ""  # the creationTime tag of the current attempt (wall-clock seconds)
    replaced: bool = False  # a placeholder whose place a real task took

    @property
    def ident(self) -> str:
        return f"{self.app.app_id}/{self.name}"
