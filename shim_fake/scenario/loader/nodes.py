"""A scenario's nodes: one by id, or a count of the same shape, with their resources, raw attributes and
Kubernetes labels (a node added by an event is read the same way)."""

from __future__ import annotations

from yaml.nodes import Node

from shim_fake.scenario.loader.values import Reading
from shim_fake.scenario.model import NodeSpec
from si.v1.tags import LABEL_PREFIX

NODE_KEYS = frozenset({"id", "count", "prefix", "resources", "attributes", "labels"})


def read_nodes(rd: Reading, node: Node | None, path: str) -> list[NodeSpec]:
    out: list[NodeSpec] = []
    seen: set[str] = set()
    for i, item in enumerate(rd.r.sequence(node, path) or [] if node is not None else []):
        fields = rd.r.mapping(item, f"{path}[{i}]", NODE_KEYS)
        for spec in node_specs(rd, fields, item, f"{path}[{i}]") if fields is not None else []:
            if spec.node_id in seen:
                rd.r.error(f"{path}[{i}]", item, f"duplicate node id {spec.node_id!r}")
            seen.add(spec.node_id)
            out.append(spec)
    return out


def node_specs(rd: Reading, fields: dict[str, Node], item: Node, path: str) -> list[NodeSpec]:
    """The nodes one entry describes: itself (`id`), or `count` of them named prefix-1, prefix-2, ..."""
    resources = rd.resources(fields.get("resources"), f"{path}.resources", item)
    if resources is None:
        return []
    attributes = rd.string_map(fields.get("attributes"), f"{path}.attributes")
    labels = tuple((LABEL_PREFIX + k, v) for k, v in rd.string_map(fields.get("labels"), f"{path}.labels"))
    attributes = labels + attributes
    if "id" in fields:
        node_id = rd.r.string(fields["id"], f"{path}.id")
        return [NodeSpec(node_id, resources, attributes)] if node_id else []
    count = rd.r.integer(fields["count"], f"{path}.count", minimum=1) if "count" in fields else None
    if count is None:
        if "count" not in fields:
            rd.r.error(f"{path}", item, "a node entry needs an id, or a count with a shape")
        return []
    prefix = rd.r.string(fields["prefix"], f"{path}.prefix") if "prefix" in fields else "node"
    return [NodeSpec(f"{prefix}-{n}", resources, attributes) for n in range(1, count + 1)]
