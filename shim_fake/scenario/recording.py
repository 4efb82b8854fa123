"""What happened during a run: usage samples per queue, allocations, preemptions, waits, events.

Usage is the fake RM's own view: the resources of its running tasks, summed per queue and up the
queue path. Queue limits come from the configuration in force at each moment (config changes
included), so the report and the plot show usage against guaranteed and max as they were then.
"""

from __future__ import annotations

import math
import statistics
from collections.abc import Iterable
from dataclasses import dataclass, field
from typing import Any

from shim_fake.scenario.core_formats import QueueReader
from shim_fake.scenario.model import Scenario, Task, TaskState


@dataclass
class QueueLimits:
    guaranteed: dict[str, int] = field(default_factory=dict)
    max: dict[str, int] = field(default_factory=dict)


def queue_limits(config_text: str, reader: QueueReader) -> dict[str, QueueLimits]:
    """Every queue's configured guaranteed and max, by full name (first partition)."""
    first = reader.partitions(config_text)[0]
    return {name: QueueLimits(dict(queue.guaranteed), dict(queue.max)) for name, queue in first.items()}


def _ancestors(queue: str) -> list[str]:
    parts = queue.split(".")
    return [".".join(parts[:i]) for i in range(len(parts), 1, -1)]  # the queue up to, not including, root


def percentile(values: list[float], fraction: float) -> float | None:
    """Nearest-rank percentile: the smallest value with at least `fraction` of the values at or below it."""
    if not values:
        return None
    ordered = sorted(values)
    rank = max(1, math.ceil(fraction * len(ordered)))
    return ordered[rank - 1]


class Recording:
    def __init__(self, scenario: Scenario) -> None:
        self.scenario = scenario
        self.resource = scenario.report_resource
        self.queues = sorted({q for app in scenario.apps for q in _ancestors(app.queue)})
        self.limits_timeline: list[tuple[float, dict[str, QueueLimits]]] = [
            (0.0, queue_limits(scenario.config, scenario.queue_reader))
        ]
        self.samples: list[tuple[float, dict[str, int]]] = []
        self.events: list[dict[str, Any]] = []
        self.allocations: dict[str, int] = dict.fromkeys(self.queues, 0)
        self.preemptions: dict[str, int] = dict.fromkeys(self.queues, 0)
        self.waits: dict[str, list[float]] = {q: [] for q in self.queues}
        self.rejections: list[dict[str, Any]] = []
        self.end_time = 0.0
        self.tasks: list[Task] = []  # the scenario's own tasks
        self.placeholders: list[Task] = []  # the gangs' placeholders, made by the runner
        self.placeholder_samples: list[tuple[float, dict[str, int]]] = []  # their usage, per queue
        self.placements: dict[str, list[str]] = {}  # task (app/name) -> the nodes it ran on, in order

    # During the run ---------------------------------------------------------------------------
    def sample(self, now: float, running: Iterable[Task]) -> None:
        """What each queue holds (placeholders included, as the core counts them), and the part of it
        that placeholders hold."""
        usage = dict.fromkeys(self.queues, 0)
        held = dict.fromkeys(self.queues, 0)
        for task in running:
            amount = task.group.resources.get(self.resource)
            for queue in _ancestors(task.app.queue):
                usage[queue] = usage.get(queue, 0) + amount
                if task.group.placeholder:
                    held[queue] = held.get(queue, 0) + amount
        self.samples.append((now, usage))
        self.placeholder_samples.append((now, held))

    def allocated(self, now: float, task: Task) -> None:
        self.placements.setdefault(task.ident, []).append(task.node_id)
        for queue in _ancestors(task.app.queue):
            self.allocations[queue] += 1
            self.waits[queue].append(task.waits[-1])

    def preempted(self, now: float, task: Task, message: str) -> None:
        for queue in _ancestors(task.app.queue):
            self.preemptions[queue] += 1
        self.events.append(
            {
                "t": round(now, 3),
                "kind": "preempted",
                "task": task.ident,
                "queue": task.app.queue,
                "message": message,
            }
        )

    def placeholder_gone(self, now: float, task: Task, message: str) -> None:
        kind = "placeholder replaced" if task.replaced else "placeholder released"
        self.events.append({"t": round(now, 3), "kind": kind, "task": task.ident, "message": message})

    def lost(self, now: float, task: Task, message: str) -> None:
        self.events.append({"t": round(now, 3), "kind": "lost", "task": task.ident, "message": message})

    def rejection(self, now: float, what: str, reason: str) -> None:
        self.rejections.append({"t": round(now, 3), "what": what, "reason": reason})

    def config_change(self, now: float, config: str, accepted: bool, errors: list[str]) -> None:
        self.events.append({"t": round(now, 3), "kind": "config", "accepted": accepted, "errors": errors})
        if accepted:
            self.limits_timeline.append((now, queue_limits(config, self.scenario.queue_reader)))

    def reconnected(self, now: float, attempts: int, downtime: float) -> None:
        self.events.append(
            {
                "t": round(now, 3),
                "kind": "core reconnect",
                "attempts": attempts,
                "seconds": round(downtime, 3),
            }
        )

    def node_event(self, now: float, action: str, nodes: list[str]) -> None:
        self.events.append({"t": round(now, 3), "kind": f"node {action}", "nodes": nodes})

    def finish(self, now: float, tasks: list[Task]) -> None:
        self.end_time = now
        self.tasks = [t for t in tasks if not t.group.placeholder]
        self.placeholders = [t for t in tasks if t.group.placeholder]

    # Views ------------------------------------------------------------------------------------
    def limits_at(self, t: float) -> dict[str, QueueLimits]:
        current = self.limits_timeline[0][1]
        for at, limits in self.limits_timeline:
            if at <= t:
                current = limits
        return current

    def usage_of(self, queue: str, after: float = 0.0, before: float | None = None) -> list[int]:
        return [
            usage.get(queue, 0) for t, usage in self.samples if t >= after and (before is None or t <= before)
        ]

    def queue_summary(self, queue: str) -> dict[str, Any]:
        values = self.usage_of(queue)
        limits = self.limits_at(self.end_time).get(queue, QueueLimits())
        waits = self.waits.get(queue, [])
        history = [lim.get(queue, QueueLimits()) for _, lim in self.limits_timeline]
        return {
            "guaranteed": limits.guaranteed,
            "max": limits.max,
            "guaranteed_history": [h.guaranteed for h in history],
            "max_history": [h.max for h in history],
            "usage": {
                "resource": self.resource,
                "min": min(values, default=0),
                "mean": round(statistics.fmean(values), 1) if values else 0,
                "max": max(values, default=0),
            },
            "allocations": self.allocations.get(queue, 0),
            "preemptions": self.preemptions.get(queue, 0),
            "wait_p50": _round(percentile(waits, 0.5)),
            "wait_p99": _round(percentile(waits, 0.99)),
        }

    def task_summary(self) -> dict[str, int]:
        return {
            "total": len(self.tasks),
            "ran": sum(1 for t in self.tasks if t.ran),
            "finished": sum(1 for t in self.tasks if t.state == TaskState.DONE),
            "preempted": sum(1 for t in self.tasks if t.preemptions),
            "lost_with_node": sum(1 for t in self.tasks if t.lost),
            "never_ran": sum(1 for t in self.tasks if not t.ran),
        }

    def gang_summary(self) -> dict[str, dict[str, int]]:
        """Per gang-scheduled application: its placeholders, how many were allocated and replaced."""
        out: dict[str, dict[str, int]] = {}
        for ph in self.placeholders:
            entry = out.setdefault(ph.app.app_id, {"placeholders": 0, "allocated": 0, "replaced": 0})
            entry["placeholders"] += 1
            entry["allocated"] += ph.ran
            entry["replaced"] += ph.replaced
        return out


def _round(value: float | None) -> float | None:
    return round(value, 3) if value is not None else None
