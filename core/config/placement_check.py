"""Placement rules held against YuniKorn's checks (configvalidator.go's checkPlacementRules and the rules'
own initialise), so a rule that could never work is refused when the configuration is read rather than
found out application by application.

Each rule, parents included:
- a filter whose single user (or group) entry is neither a valid name nor a regular expression Go
  compiles, with a regular expression's characters in it, is refused (a list of two or more keeps its
  valid names and drops the rest, with a warning here);
- a `fixed` rule's value is a queue path of valid names, and names a full path (`root.…`) only when no
  parent rule comes before it (below a parent rule the name is relative to the parent's queue).

Each top-level rule's chain, outermost parent first, has a static start: the queue path its leading
`fixed` rules spell (`root.users` for fixed root.users -> tag -> user). When that path starts at root it
is checked against the configured queues, as YuniKorn's checkQueueHierarchyForPlacement does:
- a path that ends at an existing queue: a leaf when nothing dynamic follows, a queue marked
  `parent: true` when a rule below it names the queue under it;
- a path that goes below a queue that is not marked `parent: true` can never be made;
- a path that does not exist is refused when the rule does not create queues.
As YuniKorn, the check reads a queue's `parent` flag as written: a queue with children but without
`parent: true` is not a parent to it (the message says so).
"""

from __future__ import annotations

from dataclasses import dataclass

from core.config.names import QUEUE_NAME_RULE, has_regexp_special, valid_group, valid_queue_name, valid_user
from core.config.schema import ROOT_QUEUE, Filter, PartitionConfig, PlacementRuleConfig, QueueConfig, RuleName
from core.config.yaml_reader import Problem, YamlReader
from core.go_regexp import GoRegexpError, compile_go


def check_placement(reader: YamlReader, part: PartitionConfig) -> None:
    for i, rule in enumerate(part.placement_rules):
        path = f"{part.path}.placementrules[{i}]"
        chain_ok = _check_chain_rules(reader, rule, path)
        if chain_ok:
            _check_static_path(reader, part.root, rule, i, path)


def _error(reader: YamlReader, path: str, rule: PlacementRuleConfig, message: str) -> None:
    reader.problems.append(Problem(path, rule.line, message))


def _check_chain_rules(reader: YamlReader, rule: PlacementRuleConfig, path: str) -> bool:
    """The checks of one rule and its parents on their own; False when one failed."""
    before = len(reader.problems)
    current: PlacementRuleConfig | None = rule
    current_path = path
    while current is not None:
        _check_filter(reader, current, current.filter, f"{current_path}.filter")
        if current.name == RuleName.FIXED and current.value:
            _check_fixed_value(reader, current, current_path)
        current, current_path = current.parent, f"{current_path}.parent"
    return len(reader.problems) == before


def _check_filter(reader: YamlReader, rule: PlacementRuleConfig, rule_filter: Filter, path: str) -> None:
    for kind, entries, valid in (
        ("users", rule_filter.users, valid_user),
        ("groups", rule_filter.groups, valid_group),
    ):
        if len(entries) == 1:
            entry = entries[0]
            if valid(entry) and not has_regexp_special(entry):
                continue
            if not has_regexp_special(entry):
                _error(
                    reader, f"{path}.{kind}", rule,
                    f"{entry!r} is not a valid {kind[:-1]} name nor a regular expression (a single entry "
                    "with one of ^ $ * + ? ( ) [ { } | is read as an expression)",
                )  # fmt: skip
                continue
            try:
                compile_go(entry)
            except GoRegexpError as exc:
                _error(reader, f"{path}.{kind}", rule, f"{entry!r} is not a valid regular expression: {exc}")
        elif len(entries) > 1:
            dropped = [e for e in entries if not valid(e)]
            if dropped:
                reader.warnings.append(
                    Problem(
                        f"{path}.{kind}", rule.line,
                        f"{', '.join(repr(d) for d in dropped)}: not valid {kind[:-1]} name(s), left out of "
                        "the list (in a list of two or more, each entry is a name, not an expression)",
                    )
                )  # fmt: skip


def _check_fixed_value(reader: YamlReader, rule: PlacementRuleConfig, path: str) -> None:
    value = rule.value.lower()
    bad = [part for part in value.split(".") if not valid_queue_name(part)]
    if bad:
        _error(
            reader,
            f"{path}.value",
            rule,
            f"fixed rule value {rule.value!r}: {bad[0]!r} is not a queue name ({QUEUE_NAME_RULE})",
        )
    elif _qualified(value) and rule.parent is not None:
        _error(
            reader, f"{path}.value", rule,
            f"fixed rule value {rule.value!r} is a full path, but a parent rule decides the queue above it: "
            "name the queue relative to the parent's, or drop the parent rule",
        )  # fmt: skip


def _qualified(value: str) -> bool:
    lowered = value.lower()
    return lowered == ROOT_QUEUE or lowered.startswith(ROOT_QUEUE + ".")


@dataclass(frozen=True)
class _StaticPath:
    path: str  # the queue path the chain's leading fixed rules spell; "" when it starts dynamic
    chain: str  # the rule names, outermost first: "fixed->tag->user"
    dynamic: bool  # a rule that is not fixed follows the static part


def _static_path(rule: PlacementRuleConfig) -> _StaticPath:
    chain: list[PlacementRuleConfig] = []
    current: PlacementRuleConfig | None = rule
    while current is not None:
        chain.insert(0, current)
        current = current.parent
    path = ""
    dynamic = False
    for link in chain:
        if link.name != RuleName.FIXED:
            dynamic = True
            break
        value = link.value.lower()
        path = value if _qualified(value) else f"{path or ROOT_QUEUE}.{value}"
    return _StaticPath(path, "->".join(r.name for r in chain), dynamic)


def _check_static_path(
    reader: YamlReader, root: QueueConfig, rule: PlacementRuleConfig, number: int, path: str
) -> None:
    static = _static_path(rule)
    if not static.path:
        return
    where = f"placement rule #{number} ({static.chain}) names {static.path}"

    def refuse(message: str) -> None:
        _error(reader, f"{path}.value", rule, f"{where}, {message}")

    parts = static.path.split(".")[1:]  # below root
    queue = root
    for name in parts:
        if not queue.queues and not queue.parent:
            refuse(
                f"which cannot be made: {queue.name} on its path is a leaf queue (mark it parent: true for "
                "queues to be created below it)"
            )
            return
        child = next((c for c in queue.queues if c.name == name), None)
        if child is None:
            if not rule.create:
                refuse(f"which does not exist, and create is false{_case_hint(queue, name)}")
            return
        queue = child
    if static.dynamic and not queue.parent:
        refuse(
            f"as the parent of the queues its other rules name, but {static.path} is not marked parent: true "
            "(YuniKorn reads the flag as written, whatever children the queue has)"
        )
    elif not static.dynamic and queue.parent:
        refuse("a parent queue: applications only go to leaf queues")
    elif not static.dynamic and queue.queues:
        reader.warnings.append(
            Problem(
                f"{path}.value",
                rule.line,
                f"{where}, which has child queues: applications only go to leaf queues, so this rule never "
                "places one",
            )
        )


def _case_hint(parent: QueueConfig, name: str) -> str:
    """A hint when the queue exists in another case: the check compares names as written, as YuniKorn's."""
    written = next((c.name for c in parent.queues if c.name.lower() == name), None)
    if written is None:
        return ""
    return (
        f" (the configuration writes it {written!r}: rule paths are compared with queue names in lower case)"
    )
