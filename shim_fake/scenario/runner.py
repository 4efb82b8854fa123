"""Runs a scenario against a core: submits the work, does what the core says, records what happened.

Scenario time runs `speed` times faster than real time; the core keeps real time. An allocated task
runs for its duration and is then released (STOPPED_BY_RM); a task the core preempts stops at once,
and a task lost with its node stops too; both are re-submitted under a new key when their
application restarts tasks. Waits (submission to allocation) are measured in scenario seconds.

When the core goes away (it restarted, crashed, or the connection dropped), the runner reconnects
with backoff, registers again and re-sends what a real shim knows: its nodes, its applications, the
tasks running (as allocations with their node) and the tasks still waiting (as asks). The core keeps
no state of its own, so that is all it needs to carry on.

The runner is the loop; what the RM has is the simulated cluster (simulated_cluster), what the core
answers is carried out by core_answers, and the messages are built by si_messages.
"""

from __future__ import annotations

import asyncio
import heapq
import itertools
import time
from collections.abc import Awaitable, Callable
from functools import partial
from typing import TextIO

import grpc
import structlog

from rmclient.client import SEND_ERRORS, SchedulerClient
from rmclient.reconnect import RETRIED, Backoff, is_refusal, reconnect
from shim_fake.scenario.core_answers import (
    CoreAnswers,
    apply_allocation_responses,
    apply_rejected_applications,
)
from shim_fake.scenario.model import AppSpec, NodeEvent, Scenario, Task, TaskGroup, TaskState
from shim_fake.scenario.recording import Recording
from shim_fake.scenario.si_messages import NODE_ACTIONS, application_message, ask_message, node_info
from shim_fake.scenario.simulated_cluster import SimulatedCluster
from si.v1 import si_pb2

log = structlog.get_logger("pykorn.fake.runner")

TICK = 0.05  # real seconds between steps
STALL_SECONDS = 6.0  # real seconds without any change, with nothing left that could change it
APP_ANSWER_TIMEOUT = 15.0
PROGRESS_EVERY = 0.2  # real seconds between updates of the live line
BACKOFF = Backoff(first=0.1, most=2.0)  # between attempts to reach a core that went away


class ScenarioClock:
    def __init__(self, speed: float) -> None:
        self.speed = speed
        self._start = time.monotonic()

    def now(self) -> float:
        return (time.monotonic() - self._start) * self.speed


class Runner:
    def __init__(
        self, scenario: Scenario, client: SchedulerClient, speed: float, progress: TextIO | None
    ) -> None:
        self.s = scenario
        self.client = client
        self.speed = speed
        self.progress = progress
        self.clock = ScenarioClock(speed)
        self.answers = CoreAnswers()
        client.add_handler(self.answers)
        self.record = Recording(scenario)
        self.cluster = SimulatedCluster()
        self._events: list[tuple[float, int, Callable[[], object]]] = []
        self._seq = itertools.count()
        self._next_sample = 0.0
        self._to_submit: list[Task] = []
        self._last_progress = 0.0
        # The configuration in force: what a reconnect registers with.
        self.config = scenario.config
        self.reconnects = 0

    @property
    def tasks(self) -> dict[tuple[str, str], Task]:
        """The tasks the core knows, by (application, current allocation key)."""
        return self.cluster.tasks

    @property
    def all_tasks(self) -> list[Task]:
        return self.cluster.all_tasks

    # Setup ------------------------------------------------------------------------------------
    async def start(self) -> None:
        self.cluster.nodes = {n.node_id: (n, False) for n in self.s.nodes}
        try:
            await self.client.register(config=self.config)
            if self.s.nodes:
                await self.client.add_nodes(
                    *(node_info(n.node_id, n.resources, n.attributes) for n in self.s.nodes)
                )
                await self.client.wait_for(
                    lambda: self.answers.nodes_answered >= len(self.s.nodes) or self._connection_lost(),
                    what="the core's answers to the nodes",
                )
        except RETRIED as exc:
            if is_refusal(exc):
                raise
            # The core went away while we started: the main loop reconnects and sends it all again.
            self.client.connection_lost(f"start interrupted: {exc!r}")
        self.clock = ScenarioClock(self.speed)
        for app in self.s.apps:
            self._at(app.arrival, partial(self._add_app, app))
            for group in app.tasks:
                self._at(max(group.arrival, app.arrival), partial(self._submit_group, app, group))
        for change in self.s.config_changes:
            self._at(change.at, partial(self._change_config, change.at, change.config))
        for event in self.s.node_events:
            self._at(event.at, partial(self._node_event, event))

    def _at(self, when: float, action: Callable[[], object]) -> None:
        heapq.heappush(self._events, (when, next(self._seq), action))

    # Main loop --------------------------------------------------------------------------------
    async def run(self) -> Recording:
        await self.start()
        while True:
            if self._connection_lost():
                await self._reconnect()
            now = self.clock.now()
            await self._run_due_events(now)
            await self._read_core(now)
            # Sample before finishing tasks: a task ending now is replaced by the core's next answer,
            # which arrives by the next step; sampling in between would show a gap that is not there.
            if now >= self._next_sample:
                self.record.sample(now, self.cluster.running())
                self._next_sample = now + self.s.sample_interval
            await self._finish_tasks(now)
            self._show_progress(now)
            if self._finished(now):
                break
            await asyncio.sleep(TICK)
        await self._release(self.cluster.stop_all())
        self.record.finish(self.clock.now(), self.all_tasks)
        if self.progress is not None:
            self.progress.write("\n")
        return self.record

    async def _run_due_events(self, now: float) -> None:
        while self._events and self._events[0][0] <= now:
            _, _, action = heapq.heappop(self._events)
            result = action()
            if asyncio.iscoroutine(result):
                await result
            self.cluster.changed()
        await self._flush_submissions()

    def _finished(self, now: float) -> bool:
        if self.s.end is not None:
            return now >= self.s.end
        if self._events:
            return False
        active = [t for t in self.all_tasks if t.state in (TaskState.PENDING, TaskState.RUNNING)]
        finite_running = [t for t in active if t.state == TaskState.RUNNING and t.group.duration is not None]
        if not [t for t in active if t.state == TaskState.PENDING] and not finite_running:
            return True  # all work done; until-stopped tasks are stopped at the end
        # Pending work that nothing will ever unblock: no task will end and no event will come.
        return not finite_running and time.monotonic() - self.cluster.last_change > STALL_SECONDS

    # Submitting -------------------------------------------------------------------------------
    async def _add_app(self, app: AppSpec) -> None:
        self.cluster.arrived.append(app)
        await self._send_apps([app])
        if app.gang is not None:  # the placeholders go first, in the same request as the first tasks
            for group in app.gang.groups:
                self._submit_group(app, group.placeholders())

    async def _send_apps(self, apps: list[AppSpec]) -> None:
        """Add applications and wait for the core's answers (or for the connection to drop: the
        reconnect re-sends them), so no ask overtakes its application on the other stream."""
        ids = {app.app_id for app in apps}
        self.answers.apps_answered -= ids  # a resync sends them again: wait for the new answers
        await self._send(
            self.client.send_application_request(
                si_pb2.ApplicationRequest(
                    rmID=self.client.rm_id,
                    new=[application_message(a, self.speed) for a in apps],
                )
            )
        )

        def answered() -> bool:
            return ids <= self.answers.apps_answered or self._connection_lost()

        await self.client.wait_for(
            answered, timeout=APP_ANSWER_TIMEOUT, what=f"the core's answer to applications {sorted(ids)}"
        )

    def _submit_group(self, app: AppSpec, group: TaskGroup) -> None:
        tasks = [Task(app, group, f"{group.name}-{i:03d}") for i in range(group.count)]
        self.all_tasks.extend(tasks)
        self._to_submit.extend(tasks)

    async def _flush_submissions(self) -> None:
        """Everything due at once goes in one request, so one scheduling cycle sees all of it."""
        if self._to_submit:
            tasks, self._to_submit = self._to_submit, []
            await self._submit(tasks)

    async def _submit(self, tasks: list[Task]) -> None:
        asked = self.cluster.ask_for(tasks, self.clock.now(), created=str(int(time.time())))
        if asked:
            await self._send(self.client.asks([ask_message(t) for t in asked]))

    async def _change_config(self, at: float, config: str) -> None:
        try:
            response = await self.client.update_configuration(config)
        except grpc.aio.AioRpcError as exc:
            # Not delivered (the core is away): the next registration carries it instead, as a shim
            # re-reading its ConfigMap would.
            self.config = config
            log.warning(
                "configuration change not delivered; it goes with the next registration", error=str(exc)
            )
            return
        self.record.config_change(at, config, response.accepted, list(response.errors))
        if response.accepted:
            self.config = config  # what a reconnect registers with: the configuration in force
        else:
            log.warning("configuration change rejected", at=at, errors=list(response.errors))

    async def _node_event(self, event: NodeEvent) -> None:
        action = NODE_ACTIONS[event.action]
        infos = [
            node_info(n.node_id, n.resources if event.action == "add" else None, n.attributes, action)
            for n in event.nodes
        ]
        self.cluster.apply_node_event(event)
        await self._send(self.client.add_nodes(*infos))
        self.record.node_event(event.at, event.action, [n.node_id for n in event.nodes])

    # What the core says and what ends -----------------------------------------------------------
    async def _read_core(self, now: float) -> None:
        """Carry out what the core said since the last step, each response once."""
        follow = apply_allocation_responses(self.answers, self.cluster, self.record, now)
        for termination, keys in follow.confirm.items():
            # The task is killed (or the placeholder deleted); tell the core it is gone, with the same
            # termination type back as the interface asks, so the room it held is free (or, for a
            # replaced placeholder, taken by the real task).
            await self._send(self.client.release_many(keys, termination=termination))
        apply_rejected_applications(self.answers, self.cluster, self.record, now)
        if follow.restarts:
            await self._submit(follow.restarts)

    async def _finish_tasks(self, now: float) -> None:
        ending = self.cluster.finish_due(now)
        if ending:
            await self._release(ending)
            self.cluster.changed()

    async def _release(self, tasks: list[Task]) -> None:
        """Tasks ending together are released in one request, as their room frees at the same moment."""
        self.cluster.forget(tasks)
        await self._send(self.client.release_many((t.app.app_id, t.key) for t in tasks))

    # Losing the core and coming back --------------------------------------------------------------
    async def _send(self, sending: Awaitable[None]) -> None:
        """Send, or let the message go when the connection is gone: the reconnect re-sends the state
        it would have changed (a release simply is not re-sent, as its task is no longer running)."""
        try:
            await sending
        except SEND_ERRORS as exc:
            log.info("send failed; the core is away", error=repr(exc))
            self.client.connection_lost(f"send failed: {exc!r}")

    def _connection_lost(self) -> bool:
        return self.client.lost is not None

    async def _reconnect(self) -> None:
        # What the old core said before it went (allocations, releases) comes first, so the resync
        # re-sends each task as what it really was: running on its node, or still waiting.
        await self._read_core(self.clock.now())
        back = await reconnect(self.client, lambda: self.config, self._resync, BACKOFF)
        assert back is not None  # no stop event: it returns only once the core is back
        self.reconnects += 1
        self.record.reconnected(self.clock.now(), back.attempts, back.seconds)
        self.cluster.changed()

    async def _wait_answered(self, done: Callable[[], bool], what: str) -> None:
        """Until `done`, or raise ConnectionError at once when the core goes away meanwhile."""
        await self.client.wait_for(
            lambda: done() or self._connection_lost(), what=f"the core's answers to {what}"
        )
        if self._connection_lost():
            raise ConnectionError(f"the core went away while answering {what}")

    async def _resync(self) -> None:
        """Tell a core that knows nothing what this RM has: nodes, applications, running tasks (with
        their nodes) and waiting tasks, in that order, each waiting for the one before."""
        answered = self.answers.nodes_answered
        infos = [
            node_info(spec.node_id, spec.resources, spec.attributes, si_pb2.NodeInfo.CREATE_DRAIN if drained
                      else si_pb2.NodeInfo.CREATE)
            for spec, drained in self.cluster.nodes.values()
        ]  # fmt: skip
        if infos:
            await self.client.add_nodes(*infos)
            await self._wait_answered(lambda: self.answers.nodes_answered >= answered + len(infos), "nodes")
        apps = [a for a in self.cluster.arrived if a.app_id not in self.cluster.rejected_apps]
        if apps:
            await self._send_apps(apps)
            if self._connection_lost():
                raise ConnectionError("the core went away during the resync")
        running: list[Task] = []
        lost: list[Task] = []
        for task in self.tasks.values():
            if task.state == TaskState.RUNNING:
                (running if task.node_id in self.cluster.nodes else lost).append(task)
        for task in lost:  # its node went while the core was away: the task went with it
            self.tasks.pop((task.app.app_id, task.key), None)
            task.state, task.lost = TaskState.STOPPED, task.lost + 1
            self.record.lost(self.clock.now(), task, f"node {task.node_id} is gone")
            if task.app.restart:
                task.attempt += 1
                self._to_submit.append(task)
        existing = [ask_message(t, node_id=t.node_id) for t in running]
        waiting = [ask_message(t) for t in self.tasks.values() if t.state == TaskState.PENDING]
        if existing or waiting:
            await self.client.asks(existing + waiting)

    # Views ------------------------------------------------------------------------------------
    def _show_progress(self, now: float) -> None:
        if self.progress is None or time.monotonic() - self._last_progress < PROGRESS_EVERY:
            return
        self._last_progress = time.monotonic()
        running = sum(1 for t in self.all_tasks if t.state == TaskState.RUNNING)
        pending = sum(1 for t in self.all_tasks if t.state == TaskState.PENDING)
        preempted = sum(t.preemptions for t in self.all_tasks)
        done = sum(1 for t in self.all_tasks if t.state == TaskState.DONE)
        self.progress.write(
            f"\r  t={now:7.1f}s  running {running:4d}  pending {pending:4d}  "
            f"preempted {preempted:4d}  done {done:4d} "
        )
        self.progress.flush()
