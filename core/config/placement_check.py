"""Placement rules held against the configured queues, so a rule that could never place anything is
refused when the configuration is read rather than found out application by application.

As YuniKorn checks them: a `fixed` rule may name a full path (`root.…`) only when no parent rule comes
before it (below a parent rule the name is relative to the parent's queue); a `fixed` rule without a
parent rule names a queue that exists and is a leaf, or that `create: true` may make (below a
parent queue). A `fixed` rule used as a parent rule is left to placement time, where a missing queue
moves on to the next rule and a leaf rejects the application with the reason.
"""

from __future__ import annotations

from core.config.schema import ROOT_QUEUE, PartitionConfig, PlacementRuleConfig, QueueConfig, RuleName
from core.config.yaml_reader import Problem, YamlReader


def check_placement(reader: YamlReader, part: PartitionConfig) -> None:
    for i, rule in enumerate(part.placement_rules):
        _check_rule(reader, part.root, rule, f"{part.path}.placementrules[{i}]")


def _full(value: str) -> bool:
    lowered = value.lower()
    return lowered == ROOT_QUEUE or lowered.startswith(ROOT_QUEUE + ".")


def _check_rule(reader: YamlReader, root: QueueConfig, rule: PlacementRuleConfig, path: str) -> None:
    if rule.name != RuleName.FIXED or not rule.value:
        return
    if rule.parent is not None:
        if _full(rule.value):
            reader.problems.append(
                Problem(
                    f"{path}.value", rule.line,
                    f"fixed rule value {rule.value!r} is a full path, but a parent rule decides the queue "
                    "above it: name the queue relative to the parent's, or drop the parent rule",
                )
            )  # fmt: skip
        return
    name = rule.value if _full(rule.value) else f"{ROOT_QUEUE}.{rule.value}"
    found, deepest = _walk(root, name.lower().split(".")[1:])
    if found is not None:
        if found.is_parent:
            message = f"fixed rule names {name}, a parent queue: applications only go to leaf queues"
            reader.problems.append(Problem(f"{path}.value", rule.line, message))
        return
    if not rule.create:
        message = f"fixed rule names {name}, which does not exist, and create is false"
        reader.problems.append(Problem(f"{path}.value", rule.line, message))
    elif not deepest.is_parent:
        message = f"fixed rule names {name}, which cannot be created: {deepest.name} on its path is a leaf"
        reader.problems.append(Problem(f"{path}.value", rule.line, message))


def _walk(root: QueueConfig, parts: list[str]) -> tuple[QueueConfig | None, QueueConfig]:
    """The queue at the path below root (None when it is not configured), and the deepest configured
    queue on the way."""
    queue = root
    for part in parts:
        child = next((c for c in queue.queues if c.name.lower() == part), None)
        if child is None:
            return None, queue
        queue = child
    return queue, queue
