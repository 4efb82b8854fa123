"""Semantic checks on a structurally valid partition: names and resource consistency."""

from __future__ import annotations

from core.config import properties
from core.config.acl import ACL, ACLError
from core.config.limits_check import check_limits
from core.config.names import QUEUE_NAME_RULE, valid_queue_name
from core.config.placement_check import check_placement
from core.config.schema import PartitionConfig, QueueConfig
from core.config.yaml_reader import Problem, YamlReader
from core.quantity_text import quantity_text
from core.resources import Resource, min_limit

# YuniKorn's recovery queue: where an application recovered with allocations that no placement rule
# places runs on (core.placement); made by the core, never configured.
RECOVERY_QUEUE = "root.@recovery@"


def validate_partition(reader: YamlReader, part: PartitionConfig) -> None:
    root = part.root
    if root.guaranteed is not None or root.max is not None:
        _error(reader, root, "resources", "resources cannot be set on the root queue: its max is the cluster")
    _validate_children(reader, root, inherited_max=None)
    _check_properties(reader, root, None, is_root=True)
    _check_acls(reader, root)
    _check_structure(reader, root)
    check_limits(reader, root)
    check_placement(reader, part)
    if not _any_acl(root):
        reader.warnings.append(
            Problem(
                f"{root.path}.submitacl",
                root.line,
                "no queue has a submitacl or adminacl, so every application will be rejected; "
                "set submitacl: '*' on root to let everyone submit",
            )
        )


def _check_acls(reader: YamlReader, queue: QueueConfig) -> None:
    for key, text in (("submitacl", queue.submit_acl), ("adminacl", queue.admin_acl)):
        if text:
            try:
                ACL.parse(text)
            except ACLError as exc:
                _error(reader, queue, key, str(exc))
    for child in queue.queues:
        _check_acls(reader, child)


def _any_acl(queue: QueueConfig) -> bool:
    return bool(queue.submit_acl or queue.admin_acl) or any(_any_acl(c) for c in queue.queues)


def _check_properties(
    reader: YamlReader, queue: QueueConfig, parent_effective: dict[str, str] | None, is_root: bool
) -> None:
    """Report property values that will fall back to their defaults; they warn, they do not fail."""
    effective = properties.inherit(parent_effective, queue.property_map())
    own = queue.property_map()

    def warn(key: str, message: str) -> None:
        if key not in own:
            return  # an inherited value is reported where it is written
        path = f"properties.{key}"
        reader.warnings.append(Problem(f"{queue.path}.{path}", queue.line_of(path), f"{key}: {message}"))

    for key in own:
        if key in properties.NOT_IMPLEMENTED:
            warn(key, properties.NOT_IMPLEMENTED[key])
        elif key not in properties.KNOWN:
            warn(
                key, "unknown property; it has no effect (known: " + ", ".join(sorted(properties.KNOWN)) + ")"
            )

    # Parsed as a leaf even on a parent: a leaf-only value written there is inherited by the leaves
    # below, and is reported here, where it is written, rather than nowhere.
    props = properties.parse(effective, is_leaf=True, is_root=is_root, warn=warn)
    if props.quota_preemption_delay > 0 and queue.max is not None and queue.guaranteed is not None:
        # Quota preemption never takes a queue below its guarantee, so a max at or under it could
        # never be reached: such a configuration is refused.
        for name, guaranteed in queue.guaranteed.items():
            if name in queue.max and queue.max[name] <= guaranteed:
                most, least = quantity_text(name, queue.max[name]), quantity_text(name, guaranteed)
                _error(
                    reader, queue, f"resources.max.{name}",
                    f"with quota.preemption.delay set ({props.quota_preemption_delay:g}s), the max of "
                    f"queue {queue.name!r} must be greater than its guaranteed: max {most} <= guaranteed "
                    f"{least} {name}",
                )  # fmt: skip
    for child in queue.queues:
        _check_properties(reader, child, effective, is_root=False)


def _check_structure(reader: YamlReader, queue: QueueConfig) -> None:
    """`parent: false` on a queue with children, and a child's maxapplications above its parent's."""
    if queue.queues and dict(queue.lines).get("parent") is not None and not queue.parent:
        _error(reader, queue, "parent", f"queue {queue.name!r} has child queues but says parent: false")
    for child in queue.queues:
        if queue.max_applications and not child.max_applications:
            _error(
                reader, child, "maxapplications",
                f"queue {child.name!r} sets no maxapplications (or 0) under {queue.name!r}, which sets "
                f"{queue.max_applications}: when a parent sets maxapplications every child must set one, "
                "at most the parent's (YuniKorn refuses an unlimited child there)",
            )  # fmt: skip
        if queue.max_applications and child.max_applications > queue.max_applications:
            _error(
                reader, child, "maxapplications",
                f"maxapplications {child.max_applications} of queue {child.name!r} is above its parent's "
                f"{queue.max_applications}",
            )  # fmt: skip
        _check_structure(reader, child)


def _validate_children(reader: YamlReader, queue: QueueConfig, inherited_max: Resource | None) -> Resource:
    """Names and resources of the queues below `queue`; returns `queue`'s guarantee as its parent counts
    it (YuniKorn's checkQueueResource): its own when it sets one above zero, else what its children
    guarantee together, so a guarantee two levels down still counts against an ancestor's."""
    seen: dict[str, QueueConfig] = {}
    children_guarantee: dict[str, int] = {}
    for child in queue.queues:
        if not valid_queue_name(child.name):
            _error(
                reader,
                child,
                "name",
                f"invalid queue name {child.name!r}: {QUEUE_NAME_RULE}",
            )
        lowered = child.name.lower()
        if queue.name.lower() == "root" and f"root.{lowered}" == RECOVERY_QUEUE:
            _error(
                reader,
                child,
                "name",
                f"{RECOVERY_QUEUE} is the core's recovery queue: it cannot be configured",
            )
        if lowered in seen:
            _error(
                reader,
                child,
                "name",
                f"duplicate queue name {child.name!r} under {queue.name!r} (compared ignoring case)",
            )
        seen[lowered] = child
        _validate_own_resources(reader, child, inherited_max)
        effective_max = min_limit(inherited_max, child.max)
        for name, value in _validate_children(reader, child, effective_max).items():
            children_guarantee[name] = children_guarantee.get(name, 0) + value
    _validate_guaranteed_sum(reader, queue, inherited_max, children_guarantee)
    own = queue.guaranteed
    return own if own is not None and any(own.values()) else Resource(children_guarantee)


def _validate_own_resources(reader: YamlReader, queue: QueueConfig, parent_max: Resource | None) -> None:
    if queue.guaranteed is not None and queue.max is not None:
        for name, value in queue.guaranteed.items():
            if name in queue.max and value > queue.max[name]:
                most = quantity_text(name, queue.max[name])
                _error(
                    reader,
                    queue,
                    f"resources.guaranteed.{name}",
                    f"guaranteed {quantity_text(name, value)} is above max {most} in queue {queue.name!r}",
                )
    if queue.max is not None and parent_max is not None:
        for name, value in queue.max.items():
            if name in parent_max and value > parent_max[name]:
                _error(
                    reader,
                    queue,
                    f"resources.max.{name}",
                    f"max {quantity_text(name, value)} of queue {queue.name!r} is above its parent's max "
                    f"{quantity_text(name, parent_max[name])}",
                )


def _validate_guaranteed_sum(
    reader: YamlReader, queue: QueueConfig, inherited_max: Resource | None, total: dict[str, int]
) -> None:
    if not queue.queues:
        return
    limits = (("guaranteed", queue.guaranteed), ("max", min_limit(inherited_max, queue.max)))
    for label, limit in limits:
        if limit is None:
            continue
        for name, value in total.items():
            if name in limit and value > limit[name]:
                total_text, limit_text = quantity_text(name, value), quantity_text(name, limit[name])
                _error(
                    reader,
                    queue,
                    "queues",
                    f"the queues below {queue.name!r} guarantee {total_text} {name} in total, above its "
                    f"{label} {limit_text} (a queue without a guarantee counts its children's)",
                )


def _error(reader: YamlReader, queue: QueueConfig, relative_path: str, message: str) -> None:
    """A problem at an entry of `queue`, named by its path relative to the queue, with that entry's line."""
    reader.problems.append(Problem(f"{queue.path}.{relative_path}", queue.line_of(relative_path), message))
