"""What the core answers, kept until the runner's next step, and carried out on the simulated cluster.

An allocation starts its task on its node; a release the core decided stops its task (preempted, or
lost with its node) or ends a gang's placeholder; a rejected ask or application is recorded. What
must go back to the core (confirming a release it decided) and the tasks to submit again (their
application restarts tasks) are handed back to the runner, which sends them.
"""

from __future__ import annotations

from collections import deque
from dataclasses import dataclass, field

from rmclient.client import ResponseHandler
from shim_fake.scenario.model import Task, TaskState
from shim_fake.scenario.recording import Recording
from shim_fake.scenario.simulated_cluster import SimulatedCluster
from si.v1 import si_pb2

# Releases the core decides and then waits on the RM to confirm, the task (or pod) being gone.
_CORE_DECIDED = (si_pb2.PLACEHOLDER_REPLACED, si_pb2.TIMEOUT, si_pb2.PREEMPTED_BY_SCHEDULER)

TaskKey = tuple[str, str]  # (application, allocation key)


class CoreAnswers(ResponseHandler):
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


@dataclass
class FollowUp:
    """What carrying out the core's allocation responses leaves the runner to do."""

    restarts: list[Task] = field(default_factory=list)  # to submit again, under a new key
    confirm: dict[si_pb2.TerminationType, list[TaskKey]] = field(default_factory=dict)  # type -> released

    def confirm_release(self, termination: si_pb2.TerminationType, key: TaskKey) -> None:
        self.confirm.setdefault(termination, []).append(key)


def apply_allocation_responses(
    answers: CoreAnswers, cluster: SimulatedCluster, record: Recording, now: float
) -> FollowUp:
    """Carry out every allocation response since the last step, each once."""
    follow = FollowUp()
    while answers.allocations:
        response = answers.allocations.popleft()
        for alloc in response.new:
            _started(cluster, record, alloc, now)
        for release in response.released:
            if _gang_release(cluster, record, release, now, follow):
                continue
            task = _stopped_by_core(cluster, record, release, now)
            if task is not None and release.terminationType == si_pb2.PREEMPTED_BY_SCHEDULER:
                follow.confirm_release(
                    release.terminationType, (release.applicationID, release.allocationKey)
                )
            if task is not None and task.app.restart:
                task.attempt += 1
                follow.restarts.append(task)
        for rejected in response.rejectedAllocations:
            refused = cluster.tasks.pop((rejected.applicationID, rejected.allocationKey), None)
            if refused is not None:
                refused.state = TaskState.REJECTED
            record.rejection(
                now, f"allocation {rejected.applicationID}/{rejected.allocationKey}", rejected.reason
            )
    return follow


def apply_rejected_applications(
    answers: CoreAnswers, cluster: SimulatedCluster, record: Recording, now: float
) -> None:
    """Applications the core refused: their tasks are rejected when they come to be submitted."""
    while answers.rejected_apps:
        rejected_app = answers.rejected_apps.popleft()
        cluster.rejected_apps.add(rejected_app.applicationID)
        record.rejection(now, f"application {rejected_app.applicationID}", rejected_app.reason)


def _gang_release(
    cluster: SimulatedCluster,
    record: Recording,
    release: si_pb2.AllocationRelease,
    now: float,
    follow: FollowUp,
) -> bool:
    """A placeholder the core gives up or replaces, or a real task of a failed gang never started:
    handled here (True), or not gang business (False)."""
    key = (release.applicationID, release.allocationKey)
    task = cluster.tasks.get(key)
    if task is None:
        return False
    if task.group.placeholder:
        del cluster.tasks[key]
        # The core waits for the pod to be gone when it decided the release; a pending placeholder
        # was only an ask, and a release of another type (its node went) is already done.
        if task.state == TaskState.RUNNING and release.terminationType in _CORE_DECIDED:
            follow.confirm_release(release.terminationType, key)
        task.replaced = release.terminationType == si_pb2.PLACEHOLDER_REPLACED
        task.state = TaskState.DONE if task.replaced else TaskState.STOPPED
        record.placeholder_gone(now, task, release.message)
        cluster.changed()
        return True
    if task.state == TaskState.PENDING and release.terminationType == si_pb2.TIMEOUT:
        del cluster.tasks[key]  # a Hard gang timed out: its real tasks are failed with it
        task.state = TaskState.STOPPED
        record.lost(now, task, release.message)
        cluster.changed()
        return True
    return False


def _started(cluster: SimulatedCluster, record: Recording, alloc: si_pb2.Allocation, now: float) -> None:
    task = cluster.tasks.get((alloc.applicationID, alloc.allocationKey))
    if task is None or task.state != TaskState.PENDING:
        return
    task.state = TaskState.RUNNING
    task.ran = True
    task.node_id = alloc.nodeID
    task.waits.append(now - task.submitted_at)
    task.ends_at = now + task.group.duration if task.group.duration is not None else None
    record.allocated(now, task)
    cluster.changed()


def _stopped_by_core(
    cluster: SimulatedCluster, record: Recording, release: si_pb2.AllocationRelease, now: float
) -> Task | None:
    task = cluster.tasks.get((release.applicationID, release.allocationKey))
    if task is None or task.state != TaskState.RUNNING:
        return None  # the confirmation of a release we sent ourselves
    del cluster.tasks[(release.applicationID, release.allocationKey)]
    task.state = TaskState.STOPPED
    task.ends_at = None
    if release.terminationType == si_pb2.PREEMPTED_BY_SCHEDULER:
        task.preemptions += 1
        record.preempted(now, task, release.message)
    else:
        task.lost += 1
        record.lost(now, task, release.message)
    cluster.changed()
    return task
