"""Checks of the user and group `limits` of a partition's queues, as YuniKorn's configuration check
makes them (pkg/common/configs/configvalidator.go), each with the limit's path and line.

On one queue: every limit names at least one user or group, and names them validly and once; the
wildcard `*` comes after the names it stands beside (a name after it would never apply) and a
wildcard group never stands alone; each limit limits something (maxapplications or maxresources
above zero) and stays within the queue's own max and maxapplications. Down the tree: a user's or
group's limit on a child is not above its limit on an ancestor (its own, or the ancestor's wildcard
when it is not named there), for resources and for maxapplications.
"""

from __future__ import annotations

from dataclasses import dataclass, field

from core.config.names import valid_group, valid_user
from core.config.schema import LimitConfig, QueueConfig
from core.config.yaml_reader import Problem, YamlReader
from core.quantity_text import resource_text
from core.resources import Resource

WILDCARD = "*"


@dataclass
class _Inherited:
    """The tightest limit each user and group has above a queue (named, and the wildcard's)."""

    resources: dict[str, Resource] = field(default_factory=dict)  # by name, "*" the wildcard
    applications: dict[str, int] = field(default_factory=dict)


def check_limits(reader: YamlReader, root: QueueConfig) -> None:
    _check_queue(reader, root, {"user": _Inherited(), "group": _Inherited()})


def _check_queue(reader: YamlReader, queue: QueueConfig, above: dict[str, _Inherited]) -> None:
    seen: dict[str, set[str]] = {"user": set(), "group": set()}
    below = {kind: _Inherited(dict(inh.resources), dict(inh.applications)) for kind, inh in above.items()}
    for i, limit in enumerate(queue.limits):
        path = f"{queue.path}.limits[{i}]"
        _check_limit(reader, queue, limit, path, seen)
        for kind, names in (("user", limit.users), ("group", limit.groups)):
            for name in names:
                _check_against_ancestors(reader, queue, limit, path, kind, name, above[kind])
                _narrow(below[kind], name, limit)
    for child in queue.queues:
        _check_queue(reader, child, below)


def _problem(reader: YamlReader, path: str, limit: LimitConfig, message: str) -> None:
    reader.problems.append(Problem(path, limit.line, message))


def _check_limit(
    reader: YamlReader, queue: QueueConfig, limit: LimitConfig, path: str, seen: dict[str, set[str]]
) -> None:
    label = f"limit {limit.limit!r}" if limit.limit else "this limit"
    if not limit.users and not limit.groups:
        _problem(reader, path, limit, f"{label} names no users and no groups: list whom it limits")
    for kind, names, valid in (("user", limit.users, valid_user), ("group", limit.groups, valid_group)):
        for name in names:
            if name != WILDCARD and not valid(name):
                _problem(reader, f"{path}.{kind}s", limit, f"invalid {kind} name {name!r}")
            elif name in seen[kind]:
                _problem(
                    reader, f"{path}.{kind}s", limit, f"{kind} {name!r} has a limit already on this queue"
                )
            elif WILDCARD in seen[kind] and name != WILDCARD:
                _problem(
                    reader, f"{path}.{kind}s", limit,
                    f"{kind} {name!r} comes after the wildcard '*' {kind} limit of this queue, which already "
                    f"applies to every {kind} not named before it: name {name!r} first",
                )  # fmt: skip
            seen[kind].add(name)
    if seen["group"] == {WILDCARD} and limit.groups:
        _problem(
            reader, f"{path}.groups", limit,
            "a wildcard group limit needs at least one named group limit on the same queue: an "
            "application is tracked under the first named group it belongs to, else under '*'",
        )  # fmt: skip
    if limit.max_resources is not None and not _greater_than_zero(limit.max_resources):
        _problem(
            reader, f"{path}.maxresources", limit,
            f"maxresources must be above zero in at least one type and negative in none, got "
            f"{resource_text(limit.max_resources)}",
        )  # fmt: skip
    if limit.max_applications == 0 and limit.max_resources is None:
        _problem(
            reader,
            path,
            limit,
            f"{label} limits nothing: set maxapplications (above 0), maxresources or both",
        )
    if queue.max_applications and limit.max_applications > queue.max_applications:
        _problem(
            reader, f"{path}.maxapplications", limit,
            f"maxapplications {limit.max_applications} is above the queue's own maxapplications "
            f"{queue.max_applications}",
        )  # fmt: skip
    if limit.max_resources is not None and queue.max is not None and queue.name != "root":
        over = {k: v for k, v in limit.max_resources.items() if k in queue.max and v > queue.max[k]}
        if over:
            _problem(
                reader, f"{path}.maxresources", limit,
                f"maxresources {resource_text(over)} is above the queue's own max {resource_text(queue.max)}",
            )  # fmt: skip


def _greater_than_zero(res: Resource) -> bool:
    return all(v >= 0 for v in res.values()) and any(v > 0 for v in res.values())


def _check_against_ancestors(
    reader: YamlReader,
    queue: QueueConfig,
    limit: LimitConfig,
    path: str,
    kind: str,
    name: str,
    above: _Inherited,
) -> None:
    """A child's limit for `name` is not above the limit it has higher up: its own there, or (when not
    named there) the wildcard's."""
    key = name if name in above.resources or name in above.applications else WILDCARD
    whose = f"{kind} {name!r}" if key == name else f"the wildcard '*' {kind} limit"
    ceiling = above.resources.get(key)
    if ceiling is not None and limit.max_resources is not None:
        over = {k: v for k, v in limit.max_resources.items() if k in ceiling and v > ceiling[k]}
        if over:
            _problem(
                reader, f"{path}.maxresources", limit,
                f"{kind} {name!r}: maxresources {resource_text(over)} in queue {queue.name!r} is above the "
                f"limit of {whose} on a parent queue, {resource_text(ceiling)}",
            )  # fmt: skip
    most = above.applications.get(key, 0)
    if most and (limit.max_applications == 0 or limit.max_applications > most):
        shown = limit.max_applications or "unlimited (0)"
        _problem(
            reader, f"{path}.maxapplications", limit,
            f"{kind} {name!r}: maxapplications {shown} in queue {queue.name!r} is above the limit of {whose} "
            f"on a parent queue, {most}",
        )  # fmt: skip


def _narrow(inherited: _Inherited, name: str, limit: LimitConfig) -> None:
    """What `name` may use below this queue: the tighter of this limit and what it had above."""
    if limit.max_resources is not None:
        before = inherited.resources.get(name) or inherited.resources.get(WILDCARD)
        merged = dict(limit.max_resources.items())
        for k, v in (before or Resource()).items():
            merged[k] = min(merged[k], v) if k in merged else v
        inherited.resources[name] = Resource(merged)
    if limit.max_applications:
        before_apps = inherited.applications.get(name) or inherited.applications.get(WILDCARD) or 0
        inherited.applications[name] = (
            min(before_apps, limit.max_applications) if before_apps else limit.max_applications
        )
