"""Readers of the pieces a partition's configuration is made of: placement rules and their filters, user
and group limits, the group resolver, preemption, the node sort policy, and a resource map. Each adds
what is wrong to the reader's problems, with its YAML path and line, and returns what it could read."""

from __future__ import annotations

import math

from yaml.nodes import Node

from core.config import resolver_names
from core.config.schema import (
    Filter,
    LimitConfig,
    NodeSortPolicyConfig,
    PlacementRuleConfig,
    PreemptionConfig,
    RuleName,
)
from core.config.yaml_reader import YamlReader, line_of
from core.resources import Resource, ResourceError, parse_quantity

_RESOLVER_KEYS = frozenset({"type"})
_RULE_KEYS = frozenset({"name", "create", "parent", "value", "filter"})
_FILTER_KEYS = frozenset({"type", "users", "groups"})
_LIMIT_KEYS = frozenset({"limit", "users", "groups", "maxresources", "maxapplications"})
_PREEMPTION_KEYS = frozenset({"enabled", "quotapreemptionenabled"})
_NODESORT_KEYS = frozenset({"type", "resourceweights"})
_RULE_NAMES = {rule.value: rule for rule in RuleName}
_NODESORT_TYPES = frozenset({"fair", "binpacking"})


def read_resource(reader: YamlReader, node: Node, path: str) -> Resource | None:
    return read_written_resource(reader, node, path)[0]


def read_written_resource(
    reader: YamlReader, node: Node, path: str
) -> tuple[Resource | None, tuple[tuple[str, str], ...]]:
    """A resource map, and its quantities as written."""
    fields = reader.free_mapping(node, path)
    if fields is None:
        return None, ()
    values: dict[str, int] = {}
    written: list[tuple[str, str]] = []
    for name, value_node in fields.items():
        text = reader.scalar_text(value_node, f"{path}.{name}")
        if text is None:
            continue
        written.append((name, text))
        try:
            values[name] = parse_quantity(name, text)
        except ResourceError as exc:
            reader.error(f"{path}.{name}", value_node, str(exc))
    return (Resource(values) if values else None), tuple(sorted(written))


def read_rule(reader: YamlReader, node: Node, path: str) -> PlacementRuleConfig | None:
    fields = reader.mapping(node, path, _RULE_KEYS)
    if fields is None:
        return None
    if "name" not in fields:
        reader.error(f"{path}.name", node, "missing: every placement rule needs a name")
        return None
    text = (reader.string(fields["name"], f"{path}.name") or "").lower()
    name = _RULE_NAMES.get(text)
    if name is None:
        reader.error(
            f"{path}.name", fields["name"], f"unknown rule {text!r}; expected one of {sorted(_RULE_NAMES)}"
        )
        return None
    create = bool(reader.boolean(fields["create"], f"{path}.create")) if "create" in fields else False
    # Lower-cased, as YuniKorn's rules take their value (a tag's name, a fixed queue path).
    value = (reader.string(fields["value"], f"{path}.value") or "").lower() if "value" in fields else ""
    if name in (RuleName.TAG, RuleName.FIXED) and not value:
        reader.error(f"{path}.value", fields.get("value", node), f"the {name} rule needs a value")
    parent = read_rule(reader, fields["parent"], f"{path}.parent") if "parent" in fields else None
    rule_filter = Filter()
    if "filter" in fields:
        rule_filter = read_filter(reader, fields["filter"], f"{path}.filter") or Filter()
    return PlacementRuleConfig(
        name=name, create=create, value=value, parent=parent, filter=rule_filter, line=line_of(node)
    )


def read_filter(reader: YamlReader, node: Node, path: str) -> Filter | None:
    fields = reader.mapping(node, path, _FILTER_KEYS)
    if fields is None:
        return None
    kind = (reader.string(fields["type"], f"{path}.type") or "allow").lower() if "type" in fields else "allow"
    if kind not in ("allow", "deny"):
        reader.error(f"{path}.type", fields["type"], f"expected allow or deny, got {kind!r}")
    users = reader.string_list(fields["users"], f"{path}.users") or () if "users" in fields else ()
    groups = reader.string_list(fields["groups"], f"{path}.groups") or () if "groups" in fields else ()
    return Filter(type=kind, users=users, groups=groups)


def read_limits(reader: YamlReader, node: Node | None, path: str) -> tuple[LimitConfig, ...]:
    if node is None:
        return ()
    out = []
    for i, item in enumerate(reader.sequence(node, path) or []):
        item_path = f"{path}[{i}]"
        fields = reader.mapping(item, item_path, _LIMIT_KEYS)
        if fields is None:
            continue
        max_resources: Resource | None = None
        written: tuple[tuple[str, str], ...] = ()
        if "maxresources" in fields:
            max_resources, written = read_written_resource(
                reader, fields["maxresources"], f"{item_path}.maxresources"
            )
        out.append(
            LimitConfig(
                limit=reader.string(fields["limit"], f"{item_path}.limit") or "" if "limit" in fields else "",
                users=reader.string_list(fields["users"], f"{item_path}.users") or ()
                if "users" in fields
                else (),
                groups=reader.string_list(fields["groups"], f"{item_path}.groups") or ()
                if "groups" in fields
                else (),
                max_resources=max_resources,
                written=written,
                max_applications=reader.integer(fields["maxapplications"], f"{item_path}.maxapplications", 0)
                or 0
                if "maxapplications" in fields
                else 0,
                line=line_of(item),
            )
        )
    return tuple(out)


def read_resolver(reader: YamlReader, node: Node | None, path: str) -> str:
    """usergroupresolver: {type: ...}: how the groups of a user whose RM sent none are found."""
    if node is None:
        return resolver_names.DEFAULT
    fields = reader.mapping(node, path, _RESOLVER_KEYS) or {}
    if "type" not in fields:
        return resolver_names.DEFAULT
    kind = (reader.string(fields["type"], f"{path}.type") or "").strip().lower()
    if kind in resolver_names.UNSUPPORTED:
        reader.error(
            f"{path}.type",
            fields["type"],
            f"type {kind!r} is not supported: {resolver_names.UNSUPPORTED[kind]}",
        )
    elif kind not in resolver_names.SUPPORTED:
        reader.error(
            f"{path}.type", fields["type"],
            f"unknown type {kind!r}: expected default (the user's group is its name) or os (this host's "
            "user database)",
        )  # fmt: skip
    return resolver_names.OS if kind == resolver_names.OS else resolver_names.DEFAULT


def read_preemption(reader: YamlReader, node: Node | None, path: str) -> PreemptionConfig:
    if node is None:
        return PreemptionConfig()
    fields = reader.mapping(node, path, _PREEMPTION_KEYS) or {}
    enabled = reader.boolean(fields["enabled"], f"{path}.enabled") if "enabled" in fields else True
    quota = (
        reader.boolean(fields["quotapreemptionenabled"], f"{path}.quotapreemptionenabled")
        if "quotapreemptionenabled" in fields
        else False
    )
    return PreemptionConfig(enabled=enabled is not False, quota_preemption_enabled=bool(quota))


def read_nodesort(reader: YamlReader, node: Node | None, path: str) -> NodeSortPolicyConfig:
    if node is None:
        return NodeSortPolicyConfig()
    fields = reader.mapping(node, path, _NODESORT_KEYS) or {}
    kind = "fair"
    if "type" in fields:
        # Compared as written, as YuniKorn's SortingPolicyFromString does: "Fair" is no policy there.
        kind = reader.string(fields["type"], f"{path}.type") or "fair"
        if kind not in _NODESORT_TYPES:
            reader.error(
                f"{path}.type", fields["type"], f"expected fair or binpacking (in lower case), got {kind!r}"
            )
            kind = "fair"
    weights: list[tuple[str, float]] = []
    if "resourceweights" in fields:
        for name, value_node in (
            reader.free_mapping(fields["resourceweights"], f"{path}.resourceweights") or {}
        ).items():
            weight = reader.number(value_node, f"{path}.resourceweights.{name}")
            if weight is None:
                continue
            if not math.isfinite(weight) or weight < 0:
                reader.error(
                    f"{path}.resourceweights.{name}",
                    value_node,
                    f"a weight must be a finite number of at least 0, got {weight}",
                )
                continue
            weights.append((name, weight))
    return NodeSortPolicyConfig(type=kind, resource_weights=tuple(weights))
