"""Load a scenario file strictly: every mistake is found before anything starts, with path and line.

Besides the shape (unknown keys, wrong types) it checks what would only show up minutes into a run:
a task bigger than every node, a negative duration, an application or expectation naming a queue the
configuration does not have, a node event naming an unknown node, an invalid queue configuration
(the core's own loader runs on it, and its line numbers are mapped back into the scenario file).
"""

from __future__ import annotations

import json
import textwrap
from pathlib import Path
from typing import Any

import yaml
from yaml.nodes import MappingNode, Node, ScalarNode

from core.config import ConfigError, load_config
from core.config.properties import parse_duration
from core.config.schema import QueueConfig
from core.config.yaml_reader import Problem, YamlReader, line_of
from core.constraints.ask import ConstraintError, parse_ask_constraints
from core.resources import Resource, ResourceError, parse_quantity
from shim_fake.scenario.model import (
    AppSpec,
    ConfigChange,
    Expectation,
    ExpectKind,
    ExpectParam,
    GangGroup,
    GangSpec,
    NodeEvent,
    NodeSpec,
    Scenario,
    TaskGroup,
)
from si.v1.tags import (
    LABEL_PREFIX,
    TAG_NAMESPACE,
    TAG_NODE_AFFINITY,
    TAG_NODE_SELECTOR,
    TAG_POD_AFFINITY,
    TAG_POD_ANTI_AFFINITY,
    TAG_REQUIRED_NODE,
    TAG_TOPOLOGY_SPREAD,
)

_TOP = frozenset(
    {"name", "description", "speed", "end", "report", "queues", "queues_file", "nodes", "applications",
     "events", "expect"}
)  # fmt: skip
_REPORT = frozenset({"resource", "sample_interval"})
_NODE = frozenset({"id", "count", "prefix", "resources", "attributes", "labels"})
_APP = frozenset({"id", "queue", "arrival", "user", "groups", "tags", "restart", "tasks", "gang"})
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
_GANG = frozenset({"style", "timeout", "taskGroups"})
_GANG_GROUP = frozenset({"name", "minMember", "resources"})
_GANG_STYLES = ("Soft", "Hard")
_PREEMPTION = frozenset({"allow_preempt_self", "allow_preempt_other"})
_EVENT = frozenset({"at", "queues", "queues_file", "node"})
_NODE_EVENT = frozenset({"action", "id", "ids", "count", "prefix", "resources", "attributes", "labels"})
_NODE_ACTIONS = frozenset({"add", "drain", "undrain", "decommission"})
UNTIL_STOPPED = "until stopped"

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


class ScenarioError(ValueError):
    def __init__(self, source: str, problems: list[Problem]) -> None:
        self.source = source
        self.problems = problems
        lines = "\n".join(f"  {p}" for p in problems)
        super().__init__(f"{source}: invalid scenario ({len(problems)} problem(s))\n{lines}")


def load_scenario(path: Path) -> Scenario:
    return parse_scenario(path.read_text(), source=str(path), base_dir=path.parent)


def parse_scenario(text: str, source: str = "<scenario>", base_dir: Path | None = None) -> Scenario:
    try:
        document = yaml.compose(text, Loader=yaml.SafeLoader)
    except yaml.YAMLError as exc:
        mark = getattr(exc, "problem_mark", None)
        problem = getattr(exc, "problem", None) or str(exc)
        raise ScenarioError(
            source, [Problem("", mark.line + 1 if mark else 0, f"not valid YAML: {problem}")]
        ) from None
    reader = YamlReader()
    builder = _Builder(reader, text, base_dir or Path("."))
    scenario = builder.build(document)
    if reader.problems or scenario is None:
        raise ScenarioError(source, reader.problems)
    return scenario


class _Builder:
    def __init__(self, reader: YamlReader, text: str, base_dir: Path) -> None:
        self.r = reader
        self.text = text
        self.base_dir = base_dir
        self.leaves: set[str] = set()
        self.queues: set[str] = set()

    # Top level --------------------------------------------------------------------------------
    def build(self, document: Node | None) -> Scenario | None:
        if document is None:
            self.r.error("", None, "the scenario is empty")
            return None
        top = self.r.mapping(document, "", _TOP)
        if top is None:
            return None
        for required in ("nodes", "applications"):
            if required not in top:
                self.r.error(required, document, f"missing: a scenario needs {required}")
        if ("queues" in top) == ("queues_file" in top):
            self.r.error(
                "queues", document, "give the queue configuration as exactly one of queues or queues_file"
            )
            return None
        config = self._config(top, "")
        if config is not None:
            self._learn_queues(config)
        nodes = self._nodes(top.get("nodes"), "nodes")
        events, changes = self._events(top.get("events"))
        all_nodes = list(nodes) + [n for e in events if e.action == "add" for n in e.nodes]
        self._check_node_events(nodes, events)
        apps = self._apps(top.get("applications"), "applications", all_nodes)
        report = self.r.mapping(top["report"], "report", _REPORT) if "report" in top else {}
        report = report or {}
        resource = self.r.string(report["resource"], "report.resource") if "resource" in report else None
        expectations = self._expectations(top.get("expect"), apps, resource or "memory")
        sample = (
            self._duration(report["sample_interval"], "report.sample_interval")
            if "sample_interval" in report
            else None
        )
        name = self.r.string(top["name"], "name") if "name" in top else None
        description = self.r.string(top["description"], "description") if "description" in top else None
        speed = self.r.number(top["speed"], "speed") if "speed" in top else None
        if speed is not None and speed <= 0:
            self.r.error("speed", top["speed"], f"speed must be positive, got {speed}")
        end = self._duration(top["end"], "end") if "end" in top else None
        if config is None:
            return None
        return Scenario(
            name=name or "scenario",
            description=description or "",
            config=config,
            nodes=tuple(nodes),
            apps=tuple(apps),
            config_changes=tuple(changes),
            node_events=tuple(events),
            expectations=tuple(expectations),
            end=end,
            speed=speed or 1.0,
            report_resource=resource or "memory",
            sample_interval=sample or 0.5,
        )

    # Queue configuration ----------------------------------------------------------------------
    def _config(self, fields: dict[str, Node], prefix: str) -> str | None:
        """The queues.yaml text of `queues` (inline mapping or block text) or `queues_file`."""
        if "queues_file" in fields:
            node = fields["queues_file"]
            path_text = self.r.string(node, f"{prefix}queues_file")
            if path_text is None:
                return None
            path = (self.base_dir / path_text).resolve()
            try:
                text = path.read_text()
            except OSError as exc:
                self.r.error(f"{prefix}queues_file", node, f"cannot read {path}: {exc.strerror}")
                return None
            return self._validated_config(text, f"{prefix}queues_file({path_text}).", 0, node)
        node = fields["queues"]
        if isinstance(node, ScalarNode) and node.style in ("|", ">"):
            return self._validated_config(str(node.value), f"{prefix}queues.", line_of(node), node)
        if isinstance(node, MappingNode):
            start, end = node.start_mark, node.end_mark
            raw = " " * start.column + self.text[start.index : end.index]
            return self._validated_config(textwrap.dedent(raw), f"{prefix}queues.", start.line, node)
        self.r.error(
            f"{prefix}queues", node, "expected a queues.yaml mapping (partitions: ...) or a block of text"
        )
        return None

    def _validated_config(self, text: str, path_prefix: str, line_offset: int, node: Node) -> str | None:
        try:
            load_config(text)
        except ConfigError as exc:
            for problem in exc.problems:
                line = problem.line + line_offset if problem.line else line_of(node)
                self.r.problems.append(Problem(path_prefix + problem.path, line, problem.message))
            return None
        return text

    def _learn_queues(self, config: str) -> None:
        for part in load_config(config).config.partitions:
            self._walk(part.root, "root")

    def _walk(self, queue: QueueConfig, name: str) -> None:
        self.queues.add(name.lower())
        if not queue.is_parent:
            self.leaves.add(name.lower())
        for child in queue.queues:
            self._walk(child, f"{name}.{child.name}")

    # Nodes ------------------------------------------------------------------------------------
    def _nodes(self, node: Node | None, path: str) -> list[NodeSpec]:
        out: list[NodeSpec] = []
        seen: set[str] = set()
        for i, item in enumerate(self.r.sequence(node, path) or [] if node is not None else []):
            for spec in self._node_specs(item, f"{path}[{i}]", _NODE):
                if spec.node_id in seen:
                    self.r.error(f"{path}[{i}]", item, f"duplicate node id {spec.node_id!r}")
                seen.add(spec.node_id)
                out.append(spec)
        return out

    def _node_specs(self, item: Node, path: str, allowed: frozenset[str]) -> list[NodeSpec]:
        fields = self.r.mapping(item, path, allowed)
        return self._node_specs_from(fields, item, path) if fields is not None else []

    def _node_specs_from(self, fields: dict[str, Node], item: Node, path: str) -> list[NodeSpec]:
        resources = self._resources(fields.get("resources"), f"{path}.resources", item)
        if resources is None:
            return []
        attributes = self._string_map(fields.get("attributes"), f"{path}.attributes")
        labels = tuple(
            (LABEL_PREFIX + k, v) for k, v in self._string_map(fields.get("labels"), f"{path}.labels")
        )
        attributes = labels + attributes
        if "id" in fields:
            node_id = self.r.string(fields["id"], f"{path}.id")
            return [NodeSpec(node_id, resources, attributes)] if node_id else []
        count = self.r.integer(fields["count"], f"{path}.count", minimum=1) if "count" in fields else None
        if count is None:
            if "count" not in fields:
                self.r.error(f"{path}", item, "a node entry needs an id, or a count with a shape")
            return []
        prefix = self.r.string(fields["prefix"], f"{path}.prefix") if "prefix" in fields else "node"
        return [NodeSpec(f"{prefix}-{n}", resources, attributes) for n in range(1, count + 1)]

    # Applications -----------------------------------------------------------------------------
    def _apps(self, node: Node | None, path: str, nodes: list[NodeSpec]) -> list[AppSpec]:
        out: list[AppSpec] = []
        seen: set[str] = set()
        for i, item in enumerate(self.r.sequence(node, path) or [] if node is not None else []):
            app = self._app(item, f"{path}[{i}]", nodes)
            if app is None:
                continue
            if app.app_id in seen:
                self.r.error(f"{path}[{i}].id", item, f"duplicate application id {app.app_id!r}")
            seen.add(app.app_id)
            out.append(app)
        return out

    def _app(self, item: Node, path: str, nodes: list[NodeSpec]) -> AppSpec | None:
        fields = self.r.mapping(item, path, _APP)
        if fields is None:
            return None
        for required in ("id", "queue", "tasks"):
            if required not in fields:
                self.r.error(f"{path}.{required}", item, f"missing: an application needs {required}")
        if "id" not in fields or "queue" not in fields or "tasks" not in fields:
            return None
        app_id = self.r.string(fields["id"], f"{path}.id") or ""
        queue = self.r.string(fields["queue"], f"{path}.queue") or ""
        qualified = queue.lower() if queue.lower().startswith("root.") else f"root.{queue.lower()}"
        if self.leaves and qualified not in self.leaves:
            hint = "a parent queue" if qualified in self.queues else "not in the queue configuration"
            self.r.error(f"{path}.queue", fields["queue"], f"queue {queue!r} is {hint}; name a leaf queue")
        arrival = self._time(fields.get("arrival"), f"{path}.arrival") or 0.0
        restart = self.r.boolean(fields["restart"], f"{path}.restart") if "restart" in fields else True
        groups = self.r.string_list(fields["groups"], f"{path}.groups") if "groups" in fields else ()
        gang = self._gang(fields["gang"], f"{path}.gang", nodes) if "gang" in fields else None
        tasks = []
        for j, task_node in enumerate(self.r.sequence(fields["tasks"], f"{path}.tasks") or []):
            task = self._task(task_node, f"{path}.tasks[{j}]", j, arrival, nodes)
            if task is not None:
                tasks.append(task)
                self._check_task_group(task, gang, f"{path}.tasks[{j}]", task_node)
        return AppSpec(
            app_id=app_id,
            queue=qualified,
            arrival=arrival,
            user=self.r.string(fields["user"], f"{path}.user") or "nobody" if "user" in fields else "nobody",
            groups=groups or (),
            tags=self._string_map(fields.get("tags"), f"{path}.tags"),
            restart=restart is not False,
            tasks=tuple(tasks),
            line=line_of(item),
            gang=gang,
        )

    def _gang(self, node: Node, path: str, nodes: list[NodeSpec]) -> GangSpec | None:
        """`gang: {style, timeout, taskGroups: [{name, minMember, resources}]}`."""
        fields = self.r.mapping(node, path, _GANG)
        if fields is None:
            return None
        style = self.r.string(fields["style"], f"{path}.style") if "style" in fields else "Soft"
        if style not in _GANG_STYLES:
            self.r.error(f"{path}.style", fields.get("style", node), f"style is Soft or Hard, got {style!r}")
        timeout = self._duration(fields["timeout"], f"{path}.timeout") if "timeout" in fields else None
        groups: list[GangGroup] = []
        if "taskGroups" not in fields:
            self.r.error(f"{path}.taskGroups", node, "missing: a gang needs at least one task group")
        for i, item in enumerate(self.r.sequence(fields.get("taskGroups", node), f"{path}.taskGroups") or []):
            group = self._gang_group(item, f"{path}.taskGroups[{i}]", nodes)
            if group is not None:
                if any(g.name == group.name for g in groups):
                    self.r.error(f"{path}.taskGroups[{i}].name", item, f"duplicate task group {group.name!r}")
                groups.append(group)
        if not groups or style not in _GANG_STYLES:
            return None
        return GangSpec(tuple(groups), style or "Soft", timeout)

    def _gang_group(self, item: Node, path: str, nodes: list[NodeSpec]) -> GangGroup | None:
        fields = self.r.mapping(item, path, _GANG_GROUP)
        if fields is None:
            return None
        for required in ("name", "minMember", "resources"):
            if required not in fields:
                self.r.error(f"{path}.{required}", item, f"missing: a task group needs {required}")
        name = self.r.string(fields["name"], f"{path}.name") if "name" in fields else None
        members = (
            self.r.integer(fields["minMember"], f"{path}.minMember", 1) if "minMember" in fields else None
        )
        resources = self._resources(fields.get("resources"), f"{path}.resources", item)
        if resources is not None and nodes and not any(resources.fits_in(n.resources) for n in nodes):
            self.r.error(
                f"{path}.resources", fields.get("resources", item), "a member of this size fits no node"
            )
        if not name or members is None or resources is None:
            return None
        return GangGroup(name, members, resources)

    def _check_task_group(self, task: TaskGroup, gang: GangSpec | None, path: str, node: Node) -> None:
        if not task.task_group:
            return
        names = [g.name for g in gang.groups] if gang is not None else []
        if task.task_group not in names:
            where = f"the gang's task groups are {names}" if names else "the application declares no gang"
            self.r.error(
                f"{path}.taskGroup", node, f"task group {task.task_group!r} is not declared: {where}"
            )

    def _task(
        self, item: Node, path: str, index: int, app_arrival: float, nodes: list[NodeSpec]
    ) -> TaskGroup | None:
        fields = self.r.mapping(item, path, _TASK)
        if fields is None:
            return None
        resources = self._resources(fields.get("resources"), f"{path}.resources", item)
        count = self.r.integer(fields["count"], f"{path}.count", minimum=1) if "count" in fields else 1
        priority = self.r.integer(fields["priority"], f"{path}.priority") if "priority" in fields else 0
        if priority is not None and not -(2**31) <= priority < 2**31:
            self.r.error(f"{path}.priority", fields["priority"], "priority must be a 32-bit integer")
        duration: float | None = None
        if "duration" in fields:
            raw = fields["duration"]
            if isinstance(raw, ScalarNode) and str(raw.value).strip().lower() == UNTIL_STOPPED:
                duration = None
            else:
                duration = self._duration(raw, f"{path}.duration")
        else:
            self.r.error(
                f"{path}.duration", item, f"missing: give a duration (e.g. 30s) or '{UNTIL_STOPPED}'"
            )
        arrival = app_arrival + (self._time(fields.get("arrival"), f"{path}.arrival") or 0.0)
        preempt_self, preempt_other = True, True
        if "preemption" in fields:
            policy = self.r.mapping(fields["preemption"], f"{path}.preemption", _PREEMPTION) or {}
            if "allow_preempt_self" in policy:
                preempt_self = bool(
                    self.r.boolean(policy["allow_preempt_self"], f"{path}.preemption.allow_preempt_self")
                )
            if "allow_preempt_other" in policy:
                preempt_other = bool(
                    self.r.boolean(policy["allow_preempt_other"], f"{path}.preemption.allow_preempt_other")
                )
        originator = (
            bool(self.r.boolean(fields["originator"], f"{path}.originator"))
            if "originator" in fields
            else False
        )
        name = self.r.string(fields["name"], f"{path}.name") if "name" in fields else f"task{index}"
        if resources is not None and nodes and not any(resources.fits_in(n.resources) for n in nodes):
            biggest = max(nodes, key=lambda n: sum(n.resources.values()))
            self.r.error(
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
            tags=self._pod_tags(fields, path) + self._string_map(fields.get("tags"), f"{path}.tags"),
            line=line_of(item),
            task_group=self.r.string(fields["taskGroup"], f"{path}.taskGroup") or ""
            if "taskGroup" in fields
            else "",
        )

    # Events -----------------------------------------------------------------------------------
    def _events(self, node: Node | None) -> tuple[list[NodeEvent], list[ConfigChange]]:
        node_events: list[NodeEvent] = []
        changes: list[ConfigChange] = []
        for i, item in enumerate(self.r.sequence(node, "events") or [] if node is not None else []):
            path = f"events[{i}]"
            fields = self.r.mapping(item, path, _EVENT)
            if fields is None:
                continue
            if "at" not in fields:
                self.r.error(f"{path}.at", item, "missing: every event needs a time (at: 30s)")
                continue
            at = self._time(fields["at"], f"{path}.at")
            kinds = [k for k in ("queues", "queues_file", "node") if k in fields]
            if len(kinds) != 1:
                self.r.error(path, item, "an event is exactly one of: queues, queues_file, node")
                continue
            if at is None:
                continue
            if kinds[0] == "node":
                event = self._node_event(fields["node"], f"{path}.node", at)
                if event is not None:
                    node_events.append(event)
            else:
                config = self._config(fields, f"{path}.")
                if config is not None:
                    changes.append(ConfigChange(at, config, line_of(item)))
        node_events.sort(key=lambda e: e.at)
        changes.sort(key=lambda c: c.at)
        return node_events, changes

    def _node_event(self, node: Node, path: str, at: float) -> NodeEvent | None:
        fields = self.r.mapping(node, path, _NODE_EVENT)
        if fields is None:
            return None
        action = (
            (self.r.string(fields["action"], f"{path}.action") or "").lower() if "action" in fields else ""
        )
        if action not in _NODE_ACTIONS:
            self.r.error(
                f"{path}.action", fields.get("action", node), f"action must be one of {sorted(_NODE_ACTIONS)}"
            )
            return None
        if action != "add" and "labels" in fields:
            self.r.error(f"{path}.labels", fields["labels"], f"labels are for nodes added, not for {action}")
        if action == "add":
            specs = self._node_specs_from(fields, node, path)
            return NodeEvent(at, action, tuple(specs), line_of(node)) if specs else None
        ids: tuple[str, ...] = ()
        if "id" in fields:
            ids = (self.r.string(fields["id"], f"{path}.id") or "",)
        elif "ids" in fields:
            ids = self.r.string_list(fields["ids"], f"{path}.ids") or ()
        else:
            self.r.error(f"{path}.id", node, f"a {action} event names its node: id or ids")
        return NodeEvent(at, action, tuple(NodeSpec(i, Resource()) for i in ids), line_of(node))

    def _check_node_events(self, initial: list[NodeSpec], events: list[NodeEvent]) -> None:
        known = {n.node_id for n in initial}
        for event in events:
            for spec in event.nodes:
                if event.action == "add":
                    if spec.node_id in known:
                        self.r.problems.append(
                            Problem(f"events (node add at {event.at:g}s)", event.line,
                                    f"duplicate node id {spec.node_id!r}: that node already exists then")
                        )  # fmt: skip
                    known.add(spec.node_id)
                elif spec.node_id not in known:
                    self.r.problems.append(
                        Problem(f"events (node {event.action} at {event.at:g}s)", event.line,
                                f"node {spec.node_id!r} does not exist at that time")
                    )  # fmt: skip
                elif event.action == "decommission":
                    known.discard(spec.node_id)  # gone: a later event cannot name it unless it is added again

    # Expectations -----------------------------------------------------------------------------
    def _expectations(self, node: Node | None, apps: list[AppSpec], resource: str) -> list[Expectation]:
        out = []
        app_ids = {a.app_id for a in apps}
        for i, item in enumerate(self.r.sequence(node, "expect") or [] if node is not None else []):
            path = f"expect[{i}]"
            fields = self.r.mapping(item, path, frozenset(k.value for k in EXPECTATIONS))
            if not fields:
                continue
            if len(fields) != 1:
                self.r.error(path, item, "each expectation is a single kind: {kind: parameters}")
                continue
            name, value = next(iter(fields.items()))
            kind = ExpectKind(name)
            params = self._expectation_params(kind, value, f"{path}.{kind}", app_ids, resource)
            if params is not None:
                out.append(Expectation(kind, params, line_of(item)))
        return out

    def _expectation_params(
        self, kind: ExpectKind, node: Node, path: str, app_ids: set[str], report_resource: str
    ) -> dict[str, ExpectParam] | None:
        required, optional = EXPECTATIONS[kind]
        if not required and not optional:
            return {} if self.r.boolean(node, path) else None
        fields = self.r.mapping(node, path, required | optional)
        if fields is None:
            return None
        missing = required - set(fields)
        if missing:
            self.r.error(path, node, f"missing {', '.join(sorted(missing))}")
            return None
        params: dict[str, Any] = {}  # checked below; a None left by an error is reported there
        for key, value in fields.items():
            if key == "queue":
                queue = (self.r.string(value, f"{path}.queue") or "").lower()
                queue = queue if queue == "root" or queue.startswith("root.") else f"root.{queue}"
                if queue == "root":
                    self.r.error(
                        f"{path}.queue", value, "usage and waits are recorded below root; name a queue there"
                    )
                elif self.queues and queue not in self.queues:
                    self.r.error(f"{path}.queue", value, f"queue {queue!r} is not in the queue configuration")
                params["queue"] = queue
            elif key == "app":
                app = self.r.string(value, f"{path}.app") or ""
                if app not in app_ids:
                    self.r.error(f"{path}.app", value, f"no application {app!r} in this scenario")
                params["app"] = app
            elif key == "task":
                task = self.r.string(value, f"{path}.task") or ""
                if "/" not in task or task.split("/", 1)[0] not in app_ids:
                    self.r.error(f"{path}.task", value, f"a task is named app/group-N, got {task!r}")
                params["task"] = task
            elif key in ("after", "before", "seconds"):
                params[key] = self._duration(value, f"{path}.{key}")
            elif key == "at_least":
                params[key] = self.r.integer(value, f"{path}.at_least", minimum=0)
            elif key == "resource":
                params[key] = self.r.string(value, f"{path}.resource")
            elif key == "value":
                params[key] = self.r.scalar_text(value, f"{path}.value")
        if "value" in params and params["value"] is not None:
            # Usage is recorded for the report's resource only: another one could never be checked.
            resource = str(params.get("resource") or report_resource)
            if resource != report_resource:
                self.r.error(
                    f"{path}.resource", fields.get("resource", node),
                    f"usage is recorded for {report_resource}; set report.resource: {resource} to check it",
                )  # fmt: skip
                return None
            params["resource"] = resource
            try:
                params["value"] = parse_quantity(resource, params["value"])
            except ResourceError as exc:
                self.r.error(f"{path}.value", fields["value"], str(exc))
                return None
        return params

    # Values -----------------------------------------------------------------------------------
    def _resources(self, node: Node | None, path: str, owner: Node) -> Resource | None:
        if node is None:
            self.r.error(path, owner, "missing: resources")
            return None
        fields = self.r.free_mapping(node, path)
        if fields is None:
            return None
        values = {}
        for name, value_node in fields.items():
            text = self.r.scalar_text(value_node, f"{path}.{name}")
            if text is None:
                continue
            try:
                values[name] = parse_quantity(name, text)
            except ResourceError as exc:
                self.r.error(f"{path}.{name}", value_node, str(exc))
        if not values or not any(values.values()):
            self.r.error(path, node, "resources cannot be empty or zero")
            return None
        return Resource(values)

    def _pod_tags(self, fields: dict[str, Node], path: str) -> tuple[tuple[str, str], ...]:
        """A task's Kubernetes fields (labels, namespace, nodeSelector, affinity,
        topologySpreadConstraints) as the tags the Kubernetes shim would send, checked by the core's
        own parser so that a mistake is reported here, with its path."""
        tags = [(LABEL_PREFIX + k, v) for k, v in self._string_map(fields.get("labels"), f"{path}.labels")]
        if "namespace" in fields:
            tags.append((TAG_NAMESPACE, self.r.string(fields["namespace"], f"{path}.namespace") or "default"))
        for field, (tag, kind) in _POD_FIELDS.items():
            if field in fields:
                value = _plain(fields[field])
                if not isinstance(value, kind):
                    self.r.error(
                        f"{path}.{field}", fields[field], f"must be a {'mapping' if kind is dict else 'list'}"
                    )
                    continue
                tags.append((tag, json.dumps(value, sort_keys=True)))
        if "affinity" in fields:
            affinity = _plain(fields["affinity"])
            if not isinstance(affinity, dict) or not set(affinity) <= set(_AFFINITY_FIELDS):
                self.r.error(
                    f"{path}.affinity", fields["affinity"], f"must be a mapping of {sorted(_AFFINITY_FIELDS)}"
                )
            else:
                tags += [(_AFFINITY_FIELDS[k], json.dumps(v, sort_keys=True)) for k, v in affinity.items()]
        if tags:
            try:
                parse_ask_constraints(dict(tags), TAG_REQUIRED_NODE)
            except ConstraintError as exc:
                self.r.error(path, fields.get("affinity") or next(iter(fields.values())), str(exc))
        return tuple(tags)

    def _string_map(self, node: Node | None, path: str) -> tuple[tuple[str, str], ...]:
        if node is None:
            return ()
        fields = self.r.free_mapping(node, path) or {}
        out = []
        for key, value in fields.items():
            text = self.r.scalar_text(value, f"{path}.{key}")
            if text is not None:
                out.append((key, text))
        return tuple(out)

    def _duration(self, node: Node, path: str) -> float | None:
        text = self.r.scalar_text(node, path)
        if text is None:
            return None
        seconds = parse_duration(text)
        if seconds is None:
            self.r.error(path, node, f"{text!r} is not a duration (examples: 30, 30s, 2m)")
            return None
        if seconds < 0:
            self.r.error(path, node, f"a duration cannot be negative, got {text!r}")
            return None
        return seconds

    def _time(self, node: Node | None, path: str) -> float | None:
        return self._duration(node, path) if node is not None else None


def _plain(node: Node) -> Any:
    """A YAML subtree as plain Python values (for Kubernetes objects passed on as JSON)."""
    return yaml.constructor.SafeConstructor().construct_object(node, deep=True)
