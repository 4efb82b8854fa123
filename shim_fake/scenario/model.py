"""A scenario: the cluster, the queue configuration, the work and the events, in scenario seconds."""

from __future__ import annotations

from dataclasses import dataclass, field

from core.resources import Resource
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


@dataclass(frozen=True)
class Expectation:
    kind: str
    params: dict[str, object] = field(default_factory=dict)
    line: int = 0

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
    config_changes: tuple[ConfigChange, ...] = ()
    node_events: tuple[NodeEvent, ...] = ()
    expectations: tuple[Expectation, ...] = ()
    description: str = ""
    end: float | None = None  # scenario time to stop at; None: when all work is done
    speed: float = 1.0
    report_resource: str = "memory"
    sample_interval: float = 0.5

    def task_count(self) -> int:
        return sum(g.count for app in self.apps for g in app.tasks)

    def last_event_time(self) -> float:
        times = [a.arrival for a in self.apps] + [g.arrival for a in self.apps for g in a.tasks]
        times += [c.at for c in self.config_changes] + [e.at for e in self.node_events]
        return max(times, default=0.0)
