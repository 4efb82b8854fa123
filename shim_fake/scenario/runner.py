"""Runs a scenario against a core: submits the work, does what the core says, records what happened.

Scenario time runs `speed` times faster than real time; the core keeps real time. An allocated task
runs for its duration and is then released (STOPPED_BY_RM); a task the core preempts stops at once,
and a task lost with its node stops too; both are re-submitted under a new key when their
application restarts tasks. Waits (submission to allocation) are measured in scenario seconds.

When the core goes away (it restarted, crashed, or the connection dropped), the runner reconnects
with backoff, registers again and re-sends what a real shim knows: its nodes, its applications, the
tasks running (as allocations with their node) and the tasks still waiting (as asks). The core keeps
no state of its own, so that is all it needs to carry on.
"""

from __future__ import annotations

import asyncio
import heapq
import itertools
import time
from collections import deque
from collections.abc import Awaitable, Callable
from functools import partial
from typing import TextIO

import grpc
import structlog

from core.resources import Resource
from rmclient import messages
from rmclient.client import SEND_ERRORS, ResponseHandler, SchedulerClient
from rmclient.reconnect import RETRIED, Backoff, is_refusal, reconnect
from shim_fake.scenario.model import (
    AppSpec,
    GangGroup,
    NodeEvent,
    NodeSpec,
    Scenario,
    Task,
    TaskGroup,
    TaskState,
)
from shim_fake.scenario.recording import Recording
from si.v1 import si_pb2
from si.v1.tags import LABEL_PREFIX

log = structlog.get_logger("pykorn.fake.runner")

TICK = 0.05  # real seconds between steps
STALL_SECONDS = 6.0  # real seconds without any change, with nothing left that could change it
APP_ANSWER_TIMEOUT = 15.0
PROGRESS_EVERY = 0.2  # real seconds between updates of the live line
BACKOFF = Backoff(first=0.1, most=2.0)  # between attempts to reach a core that went away

_NODE_ACTIONS = {
    "add": si_pb2.NodeInfo.CREATE,
    "drain": si_pb2.NodeInfo.DRAIN_NODE,
    "undrain": si_pb2.NodeInfo.DRAIN_TO_SCHEDULABLE,
    "decommission": si_pb2.NodeInfo.DECOMISSION,
}


class _CoreAnswers(ResponseHandler):
    """What the core sends, kept for the runner's next step (each response once, in order), and the
    answers the runner waits on counted as they arrive."""

    def __init__(self) -> None:
        self.allocations: deque[si_pb2.AllocationResponse] = deque()
        self.rejected_apps: deque[si_pb2.RejectedApplication] = deque()
        self.apps_answered: set[str] = set()
        self.nodes_answered = 0

    def on_allocations(self, response: si_pb2.AllocationResponse) -> None:
        self.allocations.append(response)

    def on_applications(self, response: si_pb2.ApplicationResponse) -> None:
        self.apps_answered.update(a.applicationID for a in response.accepted)
        self.apps_answered.update(r.applicationID for r in response.rejected)
        self.rejected_apps.extend(response.rejected)

    def on_nodes(self, response: si_pb2.NodeResponse) -> None:
        self.nodes_answered += len(response.accepted) + len(response.rejected)


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
        self.answers = _CoreAnswers()
        client.add_handler(self.answers)
        self.record = Recording(scenario)
        self.tasks: dict[tuple[str, str], Task] = {}  # (app, current key) -> task
        self.all_tasks: list[Task] = []
        self._events: list[tuple[float, int, Callable[[], object]]] = []
        self._seq = itertools.count()
        self._next_sample = 0.0
        self._last_change = time.monotonic()
        self._rejected_apps: set[str] = set()
        self._to_submit: list[Task] = []
        self._last_progress = 0.0
        # What a shim knows and re-sends after reconnecting: the config in force, the nodes with their
        # drain state, and the applications that have arrived.
        self.config = scenario.config
        self.nodes: dict[str, tuple[NodeSpec, bool]] = {}  # node ID -> (spec, draining)
        self.arrived: list[AppSpec] = []
        self.reconnects = 0

    # Setup ------------------------------------------------------------------------------------
    async def start(self) -> None:
        self.nodes = {n.node_id: (n, False) for n in self.s.nodes}
        try:
            await self.client.register(config=self.config)
            if self.s.nodes:
                await self.client.add_nodes(
                    *(_node_info(n.node_id, n.resources, n.attributes) for n in self.s.nodes)
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
                self.record.sample(now, self._running())
                self._next_sample = now + self.s.sample_interval
            await self._finish_tasks(now)
            self._show_progress(now)
            if self._finished(now):
                break
            await asyncio.sleep(TICK)
        await self._stop_remaining(self.clock.now())
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
            self._changed()
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
        return not finite_running and time.monotonic() - self._last_change > STALL_SECONDS

    def _changed(self) -> None:
        self._last_change = time.monotonic()

    # Submitting -------------------------------------------------------------------------------
    async def _add_app(self, app: AppSpec) -> None:
        self.arrived.append(app)
        await self._send_apps([app])
        if app.gang is not None:  # the placeholders go first, in the same request as the first tasks
            for group in app.gang.groups:
                self._submit_group(app, _placeholder_group(group))

    async def _send_apps(self, apps: list[AppSpec]) -> None:
        """Add applications and wait for the core's answers (or for the connection to drop: the
        reconnect re-sends them), so no ask overtakes its application on the other stream."""
        ids = {app.app_id for app in apps}
        self.answers.apps_answered -= ids  # a resync sends them again: wait for the new answers
        await self._send(
            self.client.send_application_request(
                si_pb2.ApplicationRequest(
                    rmID=self.client.rm_id,
                    new=[self._application_message(a) for a in apps],
                )
            )
        )

        def answered() -> bool:
            return ids <= self.answers.apps_answered or self._connection_lost()

        await self.client.wait_for(
            answered, timeout=APP_ANSWER_TIMEOUT, what=f"the core's answer to applications {sorted(ids)}"
        )

    def _application_message(self, app: AppSpec) -> si_pb2.AddApplicationRequest:
        gang = app.gang
        tags = dict(app.tags)
        if gang is None:
            return messages.application(app.app_id, app.queue, user=app.user, groups=app.groups, tags=tags)
        # The core keeps real time: a timeout in scenario seconds is shorter by the speed-up.
        timeout_ms = max(1, int(gang.timeout / self.speed * 1000)) if gang.timeout is not None else 0
        return messages.application(
            app.app_id, app.queue, user=app.user, groups=app.groups, tags=tags,
            placeholder_ask=gang.size().as_dict(), gang_style=gang.style, placeholder_timeout_ms=timeout_ms,
        )  # fmt: skip

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
        now = self.clock.now()
        created = str(int(time.time()))
        asks = []
        for task in tasks:
            if task.app.app_id in self._rejected_apps:
                task.state = TaskState.REJECTED
                continue
            task.key = task.name if task.attempt == 0 else f"{task.name}-r{task.attempt}"
            task.state = TaskState.PENDING
            task.submitted_at = now
            task.created = created
            self.tasks[(task.app.app_id, task.key)] = task
            asks.append(self._ask_message(task))
        if asks:
            await self._send(self.client.asks(asks))

    @staticmethod
    def _ask_message(task: Task, node_id: str = "") -> si_pb2.Allocation:
        """The task's ask; with a node, the allocation it already is (re-sent after a reconnect)."""
        group = task.group
        return messages.ask(
            task.app.app_id,
            task.key,
            group.resources.as_dict(),
            priority=group.priority,
            tags={"creationTime": task.created, **dict(group.tags)},
            node_id=node_id,
            originator=group.originator,
            allow_preempt_self=group.allow_preempt_self,
            allow_preempt_other=group.allow_preempt_other,
            task_group=group.task_group,
            placeholder=group.placeholder,
        )

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
        action = _NODE_ACTIONS[event.action]
        infos = [
            _node_info(n.node_id, n.resources if event.action == "add" else None, n.attributes, action)
            for n in event.nodes
        ]
        for n in event.nodes:
            if event.action == "decommission":
                self.nodes.pop(n.node_id, None)
            elif event.action == "add":
                self.nodes[n.node_id] = (n, False)
            elif n.node_id in self.nodes:
                self.nodes[n.node_id] = (self.nodes[n.node_id][0], event.action == "drain")
        await self._send(self.client.add_nodes(*infos))
        self.record.node_event(event.at, event.action, [n.node_id for n in event.nodes])

    # What the core says -----------------------------------------------------------------------
    async def _read_core(self, now: float) -> None:
        """Carry out what the core said since the last step, each response once."""
        restarts: list[Task] = []
        confirm: dict[si_pb2.TerminationType, list[tuple[str, str]]] = {}  # type -> (app, key) to confirm
        while self.answers.allocations:
            response = self.answers.allocations.popleft()
            for alloc in response.new:
                self._started(alloc, now)
            for release in response.released:
                if self._gang_release(release, now, confirm):
                    continue
                task = self._stopped_by_core(release, now)
                if task is not None and release.terminationType == si_pb2.PREEMPTED_BY_SCHEDULER:
                    confirm.setdefault(release.terminationType, []).append(
                        (release.applicationID, release.allocationKey)
                    )
                if task is not None and task.app.restart:
                    task.attempt += 1
                    restarts.append(task)
            for rejected in response.rejectedAllocations:
                refused = self.tasks.pop((rejected.applicationID, rejected.allocationKey), None)
                if refused is not None:
                    refused.state = TaskState.REJECTED
                self.record.rejection(
                    now, f"allocation {rejected.applicationID}/{rejected.allocationKey}", rejected.reason
                )
        for termination, keys in confirm.items():
            # The task is killed (or the placeholder deleted); tell the core it is gone, with the same
            # termination type back as the interface asks, so the room it held is free (or, for a
            # replaced placeholder, taken by the real task).
            await self._send(self.client.release_many(keys, termination=termination))
        while self.answers.rejected_apps:
            rejected_app = self.answers.rejected_apps.popleft()
            self._rejected_apps.add(rejected_app.applicationID)
            self.record.rejection(now, f"application {rejected_app.applicationID}", rejected_app.reason)
        if restarts:
            await self._submit(restarts)

    def _gang_release(
        self,
        release: si_pb2.AllocationRelease,
        now: float,
        confirm: dict[si_pb2.TerminationType, list[tuple[str, str]]],
    ) -> bool:
        """A placeholder the core gives up or replaces, or a real task of a failed gang never started:
        handled here (True), or not gang business (False)."""
        key = (release.applicationID, release.allocationKey)
        task = self.tasks.get(key)
        if task is None:
            return False
        if task.group.placeholder:
            del self.tasks[key]
            # The core waits for the pod to be gone when it decided the release; a pending placeholder
            # was only an ask, and a release of another type (its node went) is already done.
            if task.state == TaskState.RUNNING and release.terminationType in _CORE_DECIDED:
                confirm.setdefault(release.terminationType, []).append(key)
            task.replaced = release.terminationType == si_pb2.PLACEHOLDER_REPLACED
            task.state = TaskState.DONE if task.replaced else TaskState.STOPPED
            self.record.placeholder_gone(now, task, release.message)
            self._changed()
            return True
        if task.state == TaskState.PENDING and release.terminationType == si_pb2.TIMEOUT:
            del self.tasks[key]  # a Hard gang timed out: its real tasks are failed with it
            task.state = TaskState.STOPPED
            self.record.lost(now, task, release.message)
            self._changed()
            return True
        return False

    def _started(self, alloc: si_pb2.Allocation, now: float) -> None:
        task = self.tasks.get((alloc.applicationID, alloc.allocationKey))
        if task is None or task.state != TaskState.PENDING:
            return
        task.state = TaskState.RUNNING
        task.ran = True
        task.node_id = alloc.nodeID
        task.waits.append(now - task.submitted_at)
        task.ends_at = now + task.group.duration if task.group.duration is not None else None
        self.record.allocated(now, task)
        self._changed()

    def _stopped_by_core(self, release: si_pb2.AllocationRelease, now: float) -> Task | None:
        task = self.tasks.get((release.applicationID, release.allocationKey))
        if task is None or task.state != TaskState.RUNNING:
            return None  # the confirmation of a release we sent ourselves
        del self.tasks[(release.applicationID, release.allocationKey)]
        task.state = TaskState.STOPPED
        task.ends_at = None
        if release.terminationType == si_pb2.PREEMPTED_BY_SCHEDULER:
            task.preemptions += 1
            self.record.preempted(now, task, release.message)
        else:
            task.lost += 1
            self.record.lost(now, task, release.message)
        self._changed()
        return task

    async def _finish_tasks(self, now: float) -> None:
        ending = [
            t
            for t in self.tasks.values()
            if t.state == TaskState.RUNNING and t.ends_at is not None and t.ends_at <= now
        ]
        for task in ending:
            task.state = TaskState.DONE
        if ending:
            await self._release(ending)
            self._changed()

    async def _release(self, tasks: list[Task]) -> None:
        """Tasks ending together are released in one request, as their room frees at the same moment."""
        for task in tasks:
            self.tasks.pop((task.app.app_id, task.key), None)
        await self._send(self.client.release_many((t.app.app_id, t.key) for t in tasks))

    async def _stop_remaining(self, now: float) -> None:
        running = self._running()
        for task in running:
            task.state = TaskState.DONE if task.group.duration is None else TaskState.STOPPED
        pending = [t for t in self.all_tasks if t.state == TaskState.PENDING]
        await self._release(running + pending)

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
        self._changed()

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
            _node_info(spec.node_id, spec.resources, spec.attributes, si_pb2.NodeInfo.CREATE_DRAIN if drained
                       else si_pb2.NodeInfo.CREATE)
            for spec, drained in self.nodes.values()
        ]  # fmt: skip
        if infos:
            await self.client.add_nodes(*infos)
            await self._wait_answered(lambda: self.answers.nodes_answered >= answered + len(infos), "nodes")
        apps = [a for a in self.arrived if a.app_id not in self._rejected_apps]
        if apps:
            await self._send_apps(apps)
            if self._connection_lost():
                raise ConnectionError("the core went away during the resync")
        running: list[Task] = []
        lost: list[Task] = []
        for task in self.tasks.values():
            if task.state == TaskState.RUNNING:
                (running if task.node_id in self.nodes else lost).append(task)
        for task in lost:  # its node went while the core was away: the task went with it
            self.tasks.pop((task.app.app_id, task.key), None)
            task.state, task.lost = TaskState.STOPPED, task.lost + 1
            self.record.lost(self.clock.now(), task, f"node {task.node_id} is gone")
            if task.app.restart:
                task.attempt += 1
                self._to_submit.append(task)
        existing = [self._ask_message(t, node_id=t.node_id) for t in running]
        waiting = [self._ask_message(t) for t in self.tasks.values() if t.state == TaskState.PENDING]
        if existing or waiting:
            await self.client.asks(existing + waiting)

    # Views ------------------------------------------------------------------------------------
    def _running(self) -> list[Task]:
        return [t for t in self.tasks.values() if t.state == TaskState.RUNNING]

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


_CORE_DECIDED = (si_pb2.PLACEHOLDER_REPLACED, si_pb2.TIMEOUT, si_pb2.PREEMPTED_BY_SCHEDULER)


def _placeholder_group(group: GangGroup) -> TaskGroup:
    """A gang task group's placeholders: one per member, at the member's size, held until the core
    replaces or releases them."""
    return TaskGroup(
        name=f"ph-{group.name}", count=group.min_member, resources=group.resources, duration=None,
        task_group=group.name, placeholder=True,
    )  # fmt: skip


HOSTNAME_LABEL = LABEL_PREFIX + "kubernetes.io/hostname"


def _node_info(
    node_id: str,
    resources: Resource | None,
    attributes: tuple[tuple[str, str], ...] = (),
    action: si_pb2.NodeInfo.ActionFromRM = si_pb2.NodeInfo.CREATE,
) -> si_pb2.NodeInfo:
    capacity = resources.as_dict() if resources is not None else None
    labelled = dict(attributes)
    if action in (si_pb2.NodeInfo.CREATE, si_pb2.NodeInfo.CREATE_DRAIN):
        # Every node is labelled with its name, as Kubernetes labels its nodes: a topology key for
        # rules. Only when the node is described whole: other actions send no attributes, keeping them.
        labelled = {HOSTNAME_LABEL: node_id, **labelled}
    return messages.node(node_id, capacity, action=action, attributes=labelled)
