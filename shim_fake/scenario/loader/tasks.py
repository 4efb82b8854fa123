"""An application's tasks: a group of tasks of one shape (count, resources, priority, duration, arrival,
preemption policy, tags), and their Kubernetes pod fields (labels, namespace, nodeSelector, affinity,
topologySpreadConstraints) turned into the tags the Kubernetes shim would send."""

from __future__ import annotations

import json

from yaml.nodes import Node, ScalarNode

from shim_fake.scenario.loader.values import Reading, line_of, plain
from shim_fake.scenario.model import NodeSpec, TaskGroup
from si.v1.tags import (
    LABEL_PREFIX,
    TAG_NAMESPACE,
    TAG_NODE_AFFINITY,
    TAG_NODE_SELECTOR,
    TAG_POD_AFFINITY,
    TAG_POD_ANTI_AFFINITY,
    TAG_TOPOLOGY_SPREAD,
)

UNTIL_STOPPED = "until stopped"

_TASK = frozenset(
    {"name", "count", "resources", "priority", "duration", "arrival", "preemption", "originator", "tags",
     "taskGroup", "labels", "namespace", "nodeSelector", "affinity", "topologySpreadConstraints"}
)  # fmt: skip
# Kubernetes pod fields a task may carry, as the Kubernetes shim sends them (tag -> pod field).
_POD_FIELDS = {
    "nodeSelector": (TAG_NODE_SELECTOR, dict),
    "topologySpreadConstraints": (TAG_TOPOLOGY_SPREAD, list),
}
_AFFINITY_FIELDS = {
    "nodeAffinity": TAG_NODE_AFFINITY,
    "podAffinity": TAG_POD_AFFINITY,
    "podAntiAffinity": TAG_POD_ANTI_AFFINITY,
}
_PREEMPTION = frozenset({"allow_preempt_self", "allow_preempt_other"})


def read_task(
    rd: Reading, item: Node, path: str, index: int, app_arrival: float, nodes: list[NodeSpec]
) -> TaskGroup | None:
    fields = rd.r.mapping(item, path, _TASK)
    if fields is None:
        return None
    resources = rd.resources(fields.get("resources"), f"{path}.resources", item)
    count = rd.r.integer(fields["count"], f"{path}.count", minimum=1) if "count" in fields else 1
    priority = rd.r.integer(fields["priority"], f"{path}.priority") if "priority" in fields else 0
    if priority is not None and not -(2**31) <= priority < 2**31:
        rd.r.error(f"{path}.priority", fields["priority"], "priority must be a 32-bit integer")
    duration = _duration(rd, fields, item, path)
    arrival = app_arrival + (rd.time(fields.get("arrival"), f"{path}.arrival") or 0.0)
    preempt_self, preempt_other = _preemption(rd, fields, path)
    originator = (
        bool(rd.r.boolean(fields["originator"], f"{path}.originator")) if "originator" in fields else False
    )
    name = rd.r.string(fields["name"], f"{path}.name") if "name" in fields else f"task{index}"
    if resources is not None and nodes and not any(resources.fits_in(n.resources) for n in nodes):
        biggest = max(nodes, key=lambda n: n.resources.total())
        rd.r.error(
            f"{path}.resources", fields.get("resources", item),
            f"a task of {resources.as_dict()} fits no node (the largest is {biggest.node_id}: "
            f"{biggest.resources.as_dict()})",
        )  # fmt: skip
    if resources is None or count is None or priority is None:
        return None
    return TaskGroup(
        name=name or f"task{index}",
        count=count,
        resources=resources,
        priority=priority,
        duration=duration,
        arrival=arrival,
        allow_preempt_self=preempt_self,
        allow_preempt_other=preempt_other,
        originator=originator,
        tags=_pod_tags(rd, fields, path) + rd.string_map(fields.get("tags"), f"{path}.tags"),
        line=line_of(item),
        task_group=rd.r.string(fields["taskGroup"], f"{path}.taskGroup") or ""
        if "taskGroup" in fields
        else "",
    )


def _duration(rd: Reading, fields: dict[str, Node], item: Node, path: str) -> float | None:
    """Scenario seconds the task runs; None for `until stopped` (and for a mistake, reported)."""
    if "duration" not in fields:
        rd.r.error(f"{path}.duration", item, f"missing: give a duration (e.g. 30s) or '{UNTIL_STOPPED}'")
        return None
    raw = fields["duration"]
    if isinstance(raw, ScalarNode) and str(raw.value).strip().lower() == UNTIL_STOPPED:
        return None
    return rd.duration(raw, f"{path}.duration")


def _preemption(rd: Reading, fields: dict[str, Node], path: str) -> tuple[bool, bool]:
    """(allow_preempt_self, allow_preempt_other), both true unless the task says otherwise."""
    preempt_self, preempt_other = True, True
    if "preemption" in fields:
        policy = rd.r.mapping(fields["preemption"], f"{path}.preemption", _PREEMPTION) or {}
        if "allow_preempt_self" in policy:
            preempt_self = bool(
                rd.r.boolean(policy["allow_preempt_self"], f"{path}.preemption.allow_preempt_self")
            )
        if "allow_preempt_other" in policy:
            preempt_other = bool(
                rd.r.boolean(policy["allow_preempt_other"], f"{path}.preemption.allow_preempt_other")
            )
    return preempt_self, preempt_other


def _pod_tags(rd: Reading, fields: dict[str, Node], path: str) -> tuple[tuple[str, str], ...]:
    """A task's Kubernetes fields as the tags the Kubernetes shim would send, checked by the core's own
    parser so that a mistake is reported here, with its path."""
    tags = [(LABEL_PREFIX + k, v) for k, v in rd.string_map(fields.get("labels"), f"{path}.labels")]
    if "namespace" in fields:
        tags.append((TAG_NAMESPACE, rd.r.string(fields["namespace"], f"{path}.namespace") or "default"))
    for field, (tag, kind) in _POD_FIELDS.items():
        if field in fields:
            value = plain(fields[field])
            if not isinstance(value, kind):
                rd.r.error(
                    f"{path}.{field}", fields[field], f"must be a {'mapping' if kind is dict else 'list'}"
                )
                continue
            tags.append((tag, json.dumps(value, sort_keys=True)))
    if "affinity" in fields:
        affinity = plain(fields["affinity"])
        if not isinstance(affinity, dict) or not set(affinity) <= set(_AFFINITY_FIELDS):
            rd.r.error(
                f"{path}.affinity", fields["affinity"], f"must be a mapping of {sorted(_AFFINITY_FIELDS)}"
            )
        else:
            tags += [(_AFFINITY_FIELDS[k], json.dumps(v, sort_keys=True)) for k, v in affinity.items()]
    if tags:
        problem = rd.formats.ask_constraints_problem(dict(tags))
        if problem is not None:
            rd.r.error(path, fields.get("affinity") or next(iter(fields.values())), problem)
    return tuple(tags)
