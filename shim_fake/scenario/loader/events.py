"""A scenario's events: configuration changes (a new queues.yaml at a time) and node events (add,
drain, undrain, decommission), and the check that every node event names a node there is then."""

from __future__ import annotations

from yaml.nodes import Node

from shim_fake.scenario.loader.nodes import node_specs
from shim_fake.scenario.loader.queues import read_queue_config
from shim_fake.scenario.loader.values import Reading, line_of
from shim_fake.scenario.model import ConfigChange, NodeEvent, NodeSpec
from shim_fake.scenario.resource import Resource

_EVENT = frozenset({"at", "queues", "queues_file", "node"})
_NODE_EVENT = frozenset({"action", "id", "ids", "count", "prefix", "resources", "attributes", "labels"})
_NODE_ACTIONS = frozenset({"add", "drain", "undrain", "decommission"})


def read_events(rd: Reading, node: Node | None) -> tuple[list[NodeEvent], list[ConfigChange]]:
    """The node events and the configuration changes, each in time order."""
    node_events: list[NodeEvent] = []
    changes: list[ConfigChange] = []
    for i, item in enumerate(rd.r.sequence(node, "events") or [] if node is not None else []):
        path = f"events[{i}]"
        fields = rd.r.mapping(item, path, _EVENT)
        if fields is None:
            continue
        if "at" not in fields:
            rd.r.error(f"{path}.at", item, "missing: every event needs a time (at: 30s)")
            continue
        at = rd.time(fields["at"], f"{path}.at")
        kinds = [k for k in ("queues", "queues_file", "node") if k in fields]
        if len(kinds) != 1:
            rd.r.error(path, item, "an event is exactly one of: queues, queues_file, node")
            continue
        if at is None:
            continue
        if kinds[0] == "node":
            event = _node_event(rd, fields["node"], f"{path}.node", at)
            if event is not None:
                node_events.append(event)
        else:
            config = read_queue_config(rd, fields, f"{path}.")
            if config is not None:
                changes.append(ConfigChange(at, config, line_of(item)))
    node_events.sort(key=lambda e: e.at)
    changes.sort(key=lambda c: c.at)
    return node_events, changes


def _node_event(rd: Reading, node: Node, path: str, at: float) -> NodeEvent | None:
    fields = rd.r.mapping(node, path, _NODE_EVENT)
    if fields is None:
        return None
    action = (rd.r.string(fields["action"], f"{path}.action") or "").lower() if "action" in fields else ""
    if action not in _NODE_ACTIONS:
        rd.r.error(
            f"{path}.action", fields.get("action", node), f"action must be one of {sorted(_NODE_ACTIONS)}"
        )
        return None
    if action != "add" and "labels" in fields:
        rd.r.error(f"{path}.labels", fields["labels"], f"labels are for nodes added, not for {action}")
    if action == "add":
        specs = node_specs(rd, fields, node, path)
        return NodeEvent(at, action, tuple(specs), line_of(node)) if specs else None
    ids: tuple[str, ...] = ()
    if "id" in fields:
        ids = (rd.r.string(fields["id"], f"{path}.id") or "",)
    elif "ids" in fields:
        ids = rd.r.string_list(fields["ids"], f"{path}.ids") or ()
    else:
        rd.r.error(f"{path}.id", node, f"a {action} event names its node: id or ids")
    return NodeEvent(at, action, tuple(NodeSpec(i, Resource()) for i in ids), line_of(node))


def check_node_events(rd: Reading, initial: list[NodeSpec], events: list[NodeEvent]) -> None:
    """Each event in time order against the nodes there are then: an added node is new, any other
    event names a node that exists."""
    known = {n.node_id for n in initial}
    for event in events:
        for spec in event.nodes:
            if event.action == "add":
                if spec.node_id in known:
                    rd.r.error_at(
                        f"events (node add at {event.at:g}s)",
                        event.line,
                        f"duplicate node id {spec.node_id!r}: that node already exists then",
                    )
                known.add(spec.node_id)
            elif spec.node_id not in known:
                rd.r.error_at(
                    f"events (node {event.action} at {event.at:g}s)",
                    event.line,
                    f"node {spec.node_id!r} does not exist at that time",
                )
            elif event.action == "decommission":
                known.discard(spec.node_id)  # gone: a later event cannot name it unless it is added again
