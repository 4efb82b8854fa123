"""The simulated cluster: what the fake RM has, as a real one would know it.

Its nodes with their drain state, the applications that have arrived (and those the core refused),
every task of the run, the ones the core knows by their current allocation key, and when anything
last changed. It is what a reconnect re-sends; it changes as the scenario's events come, as tasks run
out their durations, and as the core's answers are carried out (core_answers).
"""

from __future__ import annotations

import time

from shim_fake.scenario.model import AppSpec, NodeEvent, NodeSpec, Task, TaskState


class SimulatedCluster:
    def __init__(self) -> None:
        self.nodes: dict[str, tuple[NodeSpec, bool]] = {}  # node ID -> (spec, draining)
        self.arrived: list[AppSpec] = []
        self.rejected_apps: set[str] = set()
        self.tasks: dict[tuple[str, str], Task] = {}  # (app, current key) -> task
        self.all_tasks: list[Task] = []
        self.last_change = time.monotonic()

    def changed(self) -> None:
        self.last_change = time.monotonic()

    def running(self) -> list[Task]:
        return [t for t in self.tasks.values() if t.state == TaskState.RUNNING]

    def apply_node_event(self, event: NodeEvent) -> None:
        for n in event.nodes:
            if event.action == "decommission":
                self.nodes.pop(n.node_id, None)
            elif event.action == "add":
                self.nodes[n.node_id] = (n, False)
            elif n.node_id in self.nodes:
                self.nodes[n.node_id] = (self.nodes[n.node_id][0], event.action == "drain")

    def ask_for(self, tasks: list[Task], now: float, created: str) -> list[Task]:
        """Each task's next attempt, known by its new key from now on; those of a refused application
        are rejected at once and left out."""
        asked = []
        for task in tasks:
            if task.app.app_id in self.rejected_apps:
                task.state = TaskState.REJECTED
                continue
            task.key = task.name if task.attempt == 0 else f"{task.name}-r{task.attempt}"
            task.state = TaskState.PENDING
            task.submitted_at = now
            task.created = created
            self.tasks[(task.app.app_id, task.key)] = task
            asked.append(task)
        return asked

    def finish_due(self, now: float) -> list[Task]:
        """The running tasks whose duration is up, done from now on (still to be released)."""
        ending = [
            t
            for t in self.tasks.values()
            if t.state == TaskState.RUNNING and t.ends_at is not None and t.ends_at <= now
        ]
        for task in ending:
            task.state = TaskState.DONE
        return ending

    def stop_all(self) -> list[Task]:
        """At the scenario's end: running tasks stop (done if they ran until stopped), pending ones are
        given up; all of them to be released."""
        running = self.running()
        for task in running:
            task.state = TaskState.DONE if task.group.duration is None else TaskState.STOPPED
        pending = [t for t in self.all_tasks if t.state == TaskState.PENDING]
        return running + pending

    def forget(self, tasks: list[Task]) -> None:
        for task in tasks:
            self.tasks.pop((task.app.app_id, task.key), None)
