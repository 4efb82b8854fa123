"""A scenario's applications: id, leaf queue, arrival, user and groups, tags, whether lost tasks are
restarted, their tasks, and a gang (YuniKorn's task groups: placeholders first, then the real tasks)."""

from __future__ import annotations

from yaml.nodes import Node

from shim_fake.scenario.loader.queues import KnownQueues
from shim_fake.scenario.loader.tasks import read_task
from shim_fake.scenario.loader.values import Reading, line_of
from shim_fake.scenario.model import AppSpec, GangGroup, GangSpec, NodeSpec, TaskGroup

_APP = frozenset({"id", "queue", "arrival", "user", "groups", "tags", "restart", "tasks", "gang"})
_GANG = frozenset({"style", "timeout", "taskGroups"})
_GANG_GROUP = frozenset({"name", "minMember", "resources"})
_GANG_STYLES = ("Soft", "Hard")


def read_applications(
    rd: Reading, node: Node | None, path: str, nodes: list[NodeSpec], queues: KnownQueues
) -> list[AppSpec]:
    """`nodes`: every node the scenario ever has, for the check that each task fits one."""
    out: list[AppSpec] = []
    seen: set[str] = set()
    for i, item in enumerate(rd.r.sequence(node, path) or [] if node is not None else []):
        app = _application(rd, item, f"{path}[{i}]", nodes, queues)
        if app is None:
            continue
        if app.app_id in seen:
            rd.r.error(f"{path}[{i}].id", item, f"duplicate application id {app.app_id!r}")
        seen.add(app.app_id)
        out.append(app)
    return out


def _application(
    rd: Reading, item: Node, path: str, nodes: list[NodeSpec], queues: KnownQueues
) -> AppSpec | None:
    fields = rd.r.mapping(item, path, _APP)
    if fields is None:
        return None
    if rd.missing(fields, ("id", "queue", "tasks"), item, path, "an application"):
        return None
    app_id = rd.r.string(fields["id"], f"{path}.id") or ""
    queue = rd.r.string(fields["queue"], f"{path}.queue") or ""
    qualified = queue.lower() if queue.lower().startswith("root.") else f"root.{queue.lower()}"
    if queues.leaves and qualified not in queues.leaves:
        hint = "a parent queue" if qualified in queues.names else "not in the queue configuration"
        rd.r.error(f"{path}.queue", fields["queue"], f"queue {queue!r} is {hint}; name a leaf queue")
    arrival = rd.time(fields.get("arrival"), f"{path}.arrival") or 0.0
    restart = rd.r.boolean(fields["restart"], f"{path}.restart") if "restart" in fields else True
    groups = rd.r.string_list(fields["groups"], f"{path}.groups") if "groups" in fields else ()
    gang = _gang(rd, fields["gang"], f"{path}.gang", nodes) if "gang" in fields else None
    tasks = []
    for j, task_node in enumerate(rd.r.sequence(fields["tasks"], f"{path}.tasks") or []):
        task = read_task(rd, task_node, f"{path}.tasks[{j}]", j, arrival, nodes)
        if task is not None:
            tasks.append(task)
            _check_task_group(rd, task, gang, f"{path}.tasks[{j}]", task_node)
    return AppSpec(
        app_id=app_id,
        queue=qualified,
        arrival=arrival,
        user=rd.r.string(fields["user"], f"{path}.user") or "nobody" if "user" in fields else "nobody",
        groups=groups or (),
        tags=rd.string_map(fields.get("tags"), f"{path}.tags"),
        restart=restart is not False,
        tasks=tuple(tasks),
        line=line_of(item),
        gang=gang,
    )


def _gang(rd: Reading, node: Node, path: str, nodes: list[NodeSpec]) -> GangSpec | None:
    """`gang: {style, timeout, taskGroups: [{name, minMember, resources}]}`."""
    fields = rd.r.mapping(node, path, _GANG)
    if fields is None:
        return None
    style = rd.r.string(fields["style"], f"{path}.style") if "style" in fields else "Soft"
    if style not in _GANG_STYLES:
        rd.r.error(f"{path}.style", fields.get("style", node), f"style is Soft or Hard, got {style!r}")
    timeout = rd.duration(fields["timeout"], f"{path}.timeout") if "timeout" in fields else None
    groups: list[GangGroup] = []
    if "taskGroups" not in fields:
        rd.r.error(f"{path}.taskGroups", node, "missing: a gang needs at least one task group")
    for i, item in enumerate(rd.r.sequence(fields.get("taskGroups", node), f"{path}.taskGroups") or []):
        group = _gang_group(rd, item, f"{path}.taskGroups[{i}]", nodes)
        if group is not None:
            if any(g.name == group.name for g in groups):
                rd.r.error(f"{path}.taskGroups[{i}].name", item, f"duplicate task group {group.name!r}")
            groups.append(group)
    if not groups or style not in _GANG_STYLES:
        return None
    return GangSpec(tuple(groups), style or "Soft", timeout)


def _gang_group(rd: Reading, item: Node, path: str, nodes: list[NodeSpec]) -> GangGroup | None:
    fields = rd.r.mapping(item, path, _GANG_GROUP)
    if fields is None:
        return None
    rd.missing(
        fields, ("name", "minMember", "resources"), item, path, "a task group"
    )  # read on: more to report
    name = rd.r.string(fields["name"], f"{path}.name") if "name" in fields else None
    members = rd.r.integer(fields["minMember"], f"{path}.minMember", 1) if "minMember" in fields else None
    resources = rd.resources(fields.get("resources"), f"{path}.resources", item)
    if resources is not None and nodes and not any(resources.fits_in(n.resources) for n in nodes):
        rd.r.error(f"{path}.resources", fields.get("resources", item), "a member of this size fits no node")
    if not name or members is None or resources is None:
        return None
    return GangGroup(name, members, resources)


def _check_task_group(rd: Reading, task: TaskGroup, gang: GangSpec | None, path: str, node: Node) -> None:
    if not task.task_group:
        return
    names = [g.name for g in gang.groups] if gang is not None else []
    if task.task_group not in names:
        where = f"the gang's task groups are {names}" if names else "the application declares no gang"
        rd.r.error(f"{path}.taskGroup", node, f"task group {task.task_group!r} is not declared: {where}")
