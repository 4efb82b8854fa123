"""A scenario's expectations (`expect`): each one kind with its parameters, checked against the queues,
applications and report resource of the scenario, so a run is never spent on one that cannot hold."""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

from yaml.nodes import Node

from shim_fake.scenario.loader.queues import KnownQueues
from shim_fake.scenario.loader.values import Reading, line_of
from shim_fake.scenario.model import AppSpec, Expectation, ExpectKind, ExpectParam

_USAGE_WINDOW = frozenset({"resource", "after", "before"})
# expectation kind -> (required params, optional params)
EXPECTATIONS: dict[ExpectKind, tuple[frozenset[str], frozenset[str]]] = {
    ExpectKind.EVERY_TASK_RAN: (frozenset(), frozenset()),
    ExpectKind.EVERY_TASK_FINISHED: (frozenset(), frozenset()),
    ExpectKind.QUEUE_USAGE_AT_MOST: (frozenset({"queue", "value"}), _USAGE_WINDOW),
    ExpectKind.QUEUE_USAGE_AT_LEAST: (frozenset({"queue", "value"}), _USAGE_WINDOW),
    ExpectKind.PREEMPTED: (frozenset(), frozenset({"task", "app", "at_least"})),
    ExpectKind.NOT_PREEMPTED: (frozenset(), frozenset({"task", "app"})),
    ExpectKind.WAIT_P99_AT_MOST: (frozenset({"queue", "seconds"}), frozenset()),
    ExpectKind.NO_REJECTIONS: (frozenset(), frozenset()),
    ExpectKind.GANG_RAN_WHOLE: (frozenset({"app"}), frozenset()),
}


def read_expectations(
    rd: Reading, node: Node | None, apps: list[AppSpec], resource: str, queues: KnownQueues
) -> list[Expectation]:
    """`resource`: the report's resource, the only one usage is recorded for."""
    out = []
    app_ids = {a.app_id for a in apps}
    for i, item in enumerate(rd.r.sequence(node, "expect") or [] if node is not None else []):
        path = f"expect[{i}]"
        fields = rd.r.mapping(item, path, frozenset(k.value for k in EXPECTATIONS))
        if not fields:
            continue
        if len(fields) != 1:
            rd.r.error(path, item, "each expectation is a single kind: {kind: parameters}")
            continue
        name, value = next(iter(fields.items()))
        kind = ExpectKind(name)
        params = _params(rd, kind, value, f"{path}.{kind}", _Known(app_ids, queues), resource)
        if params is not None:
            out.append(Expectation(kind, params, line_of(item)))
    return out


@dataclass(frozen=True)
class _Known:
    """What an expectation's names are checked against: the scenario's applications and queues."""

    app_ids: set[str]
    queues: KnownQueues


def _params(
    rd: Reading, kind: ExpectKind, node: Node, path: str, known: _Known, report_resource: str
) -> dict[str, ExpectParam] | None:
    required, optional = EXPECTATIONS[kind]
    if not required and not optional:
        return {} if rd.r.boolean(node, path) else None
    fields = rd.r.mapping(node, path, required | optional)
    if fields is None:
        return None
    missing = required - set(fields)
    if missing:
        rd.r.error(path, node, f"missing {', '.join(sorted(missing))}")
        return None
    params: dict[str, Any] = {}  # checked below; a None left by an error is reported there
    for key, value in fields.items():
        params[key] = _param(rd, key, value, f"{path}.{key}", known)
    if "value" in params and params["value"] is not None:
        # Usage is recorded for the report's resource only: another one could never be checked.
        resource = str(params.get("resource") or report_resource)
        if resource != report_resource:
            rd.r.error(
                f"{path}.resource", fields.get("resource", node),
                f"usage is recorded for {report_resource}; set report.resource: {resource} to check it",
            )  # fmt: skip
            return None
        params["resource"] = resource
        try:
            params["value"] = rd.formats.quantity(resource, params["value"])
        except ValueError as exc:
            rd.r.error(f"{path}.value", fields["value"], str(exc))
            return None
    return params


def _param(rd: Reading, key: str, value: Node, path: str, known: _Known) -> ExpectParam | None:
    """One parameter, read by its kind; None (with a problem recorded) when it is wrong."""
    if key == "queue":
        return _queue(rd, value, path, known.queues)
    if key == "app":
        app = rd.r.string(value, path) or ""
        if app not in known.app_ids:
            rd.r.error(path, value, f"no application {app!r} in this scenario")
        return app
    if key == "task":
        task = rd.r.string(value, path) or ""
        if "/" not in task or task.split("/", 1)[0] not in known.app_ids:
            rd.r.error(path, value, f"a task is named app/group-N, got {task!r}")
        return task
    if key in ("after", "before", "seconds"):
        return rd.duration(value, path)
    if key == "at_least":
        return rd.r.integer(value, path, minimum=0)
    if key == "resource":
        return rd.r.string(value, path)
    return rd.r.scalar_text(value, path)  # `value`, the one key left: a quantity of the resource, read later


def _queue(rd: Reading, value: Node, path: str, queues: KnownQueues) -> str:
    queue = (rd.r.string(value, path) or "").lower()
    queue = queue if queue == "root" or queue.startswith("root.") else f"root.{queue}"
    if queue == "root":
        rd.r.error(path, value, "usage and waits are recorded below root; name a queue there")
    elif queues.names and queue not in queues.names:
        rd.r.error(path, value, f"queue {queue!r} is not in the queue configuration")
    return queue
