"""The si messages the fake RM sends, built from a scenario's specs: its nodes (labelled with their
name, as Kubernetes labels its nodes), its applications (a gang's with its placeholder ask) and its
tasks' asks."""

from __future__ import annotations

from rmclient import messages
from shim_fake.scenario.model import AppSpec, Task
from shim_fake.scenario.resource import Resource
from si.v1 import si_pb2
from si.v1.tags import LABEL_PREFIX, TAG_CREATION_TIME

# A node event's action in the scenario -> the action sent.
NODE_ACTIONS = {
    "add": si_pb2.NodeInfo.CREATE,
    "drain": si_pb2.NodeInfo.DRAIN_NODE,
    "undrain": si_pb2.NodeInfo.DRAIN_TO_SCHEDULABLE,
    "decommission": si_pb2.NodeInfo.DECOMISSION,
}
HOSTNAME_LABEL = LABEL_PREFIX + "kubernetes.io/hostname"


def node_info(
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


def application_message(app: AppSpec, speed: float) -> si_pb2.AddApplicationRequest:
    gang = app.gang
    tags = dict(app.tags)
    if gang is None:
        return messages.application(app.app_id, app.queue, user=app.user, groups=app.groups, tags=tags)
    # The core keeps real time: a timeout in scenario seconds is shorter by the speed-up.
    timeout_ms = max(1, int(gang.timeout / speed * 1000)) if gang.timeout is not None else 0
    return messages.application(
        app.app_id, app.queue, user=app.user, groups=app.groups, tags=tags,
        placeholder_ask=gang.size().as_dict(), gang_style=gang.style, placeholder_timeout_ms=timeout_ms,
    )  # fmt: skip


def ask_message(task: Task, node_id: str = "") -> si_pb2.Allocation:
    """The task's ask; with a node, the allocation it already is (re-sent after a reconnect)."""
    group = task.group
    return messages.ask(
        task.app.app_id,
        task.key,
        group.resources.as_dict(),
        priority=group.priority,
        tags={TAG_CREATION_TIME: task.created, **dict(group.tags)},
        node_id=node_id,
        originator=group.originator,
        allow_preempt_self=group.allow_preempt_self,
        allow_preempt_other=group.allow_preempt_other,
        task_group=group.task_group,
        placeholder=group.placeholder,
    )
