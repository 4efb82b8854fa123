"""The refusal of one request by a partition (the text goes back to the RM as the reason), and the
reading of an ask's or a node's Kubernetes rules, whose faults are refusals of that one ask or node."""

from __future__ import annotations

from core.constraints.ask import (
    AskConstraints,
    ConstraintError,
    NodeTraits,
    parse_ask_constraints,
    parse_node_traits,
)
from core.objects.allocation import Allocation
from core.objects.pod_group import PodGroupError, read_pod_group
from si.v1.tags import TAG_REQUIRED_NODE


class Rejection(Exception):
    """A request the partition refuses; str(rejection) is the reason sent to the RM."""


def unknown_application(app_id: str, partition: str) -> str:
    return f"application {app_id} is not known in partition {partition}; add it first"


def ask_constraints(alloc: Allocation) -> AskConstraints:
    try:
        return parse_ask_constraints(alloc.tags, TAG_REQUIRED_NODE)
    except ConstraintError as exc:
        raise Rejection(f"allocation {alloc.key}: {exc}") from None


def node_traits(node_id: str, attributes: dict[str, str]) -> NodeTraits:
    try:
        return parse_node_traits(attributes)
    except ConstraintError as exc:
        raise Rejection(f"node {node_id}: {exc}") from None


def pod_group_of(alloc: Allocation) -> tuple[str, int] | None:
    """The pod group (name, minimum) the ask's tags name, if any; a malformed one refuses the ask, and
    so does a group named together with a task group (a YuniKorn gang's member or placeholder)."""
    try:
        found = read_pod_group(alloc.tags)
    except PodGroupError as exc:
        raise Rejection(f"allocation {alloc.key}: {exc}") from None
    if found is not None and (alloc.task_group or alloc.placeholder):
        raise Rejection(
            f"allocation {alloc.key}: names pod group {found[0]!r} and task group {alloc.task_group!r}: "
            "a pod starts with one gang, a pod group's or its application's task group"
        )
    return found
