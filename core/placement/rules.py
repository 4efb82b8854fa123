"""The rules: provided, user, tag, fixed; each with `create`, an optional parent rule and a filter.

A rule answers a queue name, "" for "no match, try the next rule" (with a note saying why), or
raises PlacementError, which rejects the application outright, as YuniKorn does for a generated
name that is not a valid queue name or a parent rule that names a leaf queue.
"""

from __future__ import annotations

import contextlib
import functools
from abc import ABC, abstractmethod
from collections.abc import Callable
from dataclasses import dataclass, field

from core.config.names import has_regexp_special, valid_group, valid_queue_path, valid_user
from core.config.schema import Filter, PlacementRuleConfig, RuleName
from core.go_regexp import GoRegexp, GoRegexpError, compile_go
from core.objects.queue_tree import QueueTree

DOT_REPLACEMENT = "_dot_"


class PlacementError(ValueError):
    pass


@dataclass(slots=True)  # not frozen: a frozen dataclass's __init__ costs 3x, and one is made per change
class PlacementRequest:
    app_id: str
    queue_name: str = ""
    user: str = ""
    groups: tuple[str, ...] = ()
    tags: dict[str, str] = field(default_factory=dict)

    def tag(self, name: str) -> str:
        lowered = name.lower()
        value = self.tags.get(lowered)  # the usual spelling (YuniKorn's tags are lower case)
        if value is not None:
            return value
        for key, value in self.tags.items():
            if key.lower() == lowered:
                return value
        return ""


class NameMatcher:
    """One side of a filter (its users or its groups), as YuniKorn's newFilter builds it: a single entry
    with a regular expression's characters is an expression (Go's syntax); otherwise the entries that are
    valid names form a list and the others are dropped (the configuration check refuses a single entry
    that is neither)."""

    def __init__(self, entries: tuple[str, ...], valid: Callable[[str], bool]) -> None:
        self.expression: GoRegexp | None = None
        names: dict[str, None] = {}  # ordered, without repeats
        if len(entries) == 1 and has_regexp_special(entries[0]):
            # One that does not compile is refused by the configuration check before a rule is built.
            with contextlib.suppress(GoRegexpError):
                self.expression = compile_go(entries[0])
        else:
            names.update((entry, None) for entry in entries if valid(entry))
        self.names: tuple[str, ...] = tuple(names)
        self._names = frozenset(names)

    def matches(self, name: str) -> bool:
        if self.expression is not None:
            return self.expression.matches(name)
        return name in self._names


class RuleFilter:
    """Who a rule applies to. Empty (no users and no groups): everyone for allow, no one for deny;
    otherwise the type's answer for a user the lists or expressions match (by name, or by any of the
    user's groups), the opposite for everyone else."""

    def __init__(self, cfg: Filter) -> None:
        self.allow = cfg.type.lower() != "deny"
        self.users = NameMatcher(cfg.users, valid_user)
        self.groups = NameMatcher(cfg.groups, valid_group)
        self.empty = not cfg.users and not cfg.groups

    def admits(self, user: str, groups: tuple[str, ...]) -> bool:
        if self.empty:
            return self.allow
        if self.users.matches(user) or any(self.groups.matches(g) for g in groups):
            return self.allow
        return not self.allow


class Rule(ABC):
    """A placement rule: the name it makes for an application (its base name, under its parent rule's
    queue, root by default), if the filter lets the user through and the queue exists or may be made.
    Each kind of rule says only how it finds its base name (see the subclasses)."""

    name: RuleName

    def __init__(self, cfg: PlacementRuleConfig) -> None:
        self.create = cfg.create
        self.value = cfg.value
        self.filter = RuleFilter(cfg.filter)
        self.parent = make_rule(cfg.parent) if cfg.parent is not None else None

    def place(self, req: PlacementRequest, tree: QueueTree, notes: list[str]) -> str:
        base = self.base_name(req)
        if not base:
            notes.append(f"{self.name}: {self.missing_reason()}")
            return ""
        if not self.filter.admits(req.user, req.groups):
            notes.append(f"{self.name}: the filter excludes user {req.user!r}")
            return ""
        lowered = base.lower()
        if lowered == "root" or lowered.startswith("root."):
            name = lowered
        else:
            parent = self._parent_name(req, tree, notes)
            if not parent:
                return ""
            name = f"{parent}.{self.leaf_part(base)}".lower()
        if not _valid_queue_name(name):
            raise PlacementError(f"rule {self.name} made the invalid queue name {name!r}")
        if not self.create and tree.find(name) is None:
            notes.append(f"{self.name}: queue {name} does not exist and the rule does not create queues")
            return ""
        return name

    @abstractmethod
    def base_name(self, req: PlacementRequest) -> str: ...

    @abstractmethod
    def missing_reason(self) -> str:
        """Why the base name is empty, for the application's rejection."""

    def leaf_part(self, base: str) -> str:
        """The base name as one level under the parent: its dots replaced."""
        return base.replace(".", DOT_REPLACEMENT)

    def _parent_name(self, req: PlacementRequest, tree: QueueTree, notes: list[str]) -> str:
        if self.parent is None:
            return "root"
        parent = self.parent.place(req, tree, notes)
        if not parent:
            return ""
        if not parent.startswith("root."):
            parent = f"root.{parent}"  # as YuniKorn: a parent rule's bare "root" is root.root
        existing = tree.find(parent)
        if existing is not None and existing.is_leaf:
            raise PlacementError(f"parent rule returned a leaf queue: {existing.full_name}")
        return parent


class ProvidedRule(Rule):
    name = RuleName.PROVIDED

    def base_name(self, req: PlacementRequest) -> str:
        return req.queue_name

    def missing_reason(self) -> str:
        return "the application names no queue"


class UserRule(Rule):
    name = RuleName.USER

    def base_name(self, req: PlacementRequest) -> str:
        return req.user.replace(".", DOT_REPLACEMENT)

    def missing_reason(self) -> str:
        return "the application has no user"


class TagRule(Rule):
    name = RuleName.TAG

    def base_name(self, req: PlacementRequest) -> str:
        return req.tag(self.value)

    def missing_reason(self) -> str:
        return f"the application has no tag {self.value!r}"


class FixedRule(Rule):
    name = RuleName.FIXED

    def base_name(self, req: PlacementRequest) -> str:
        return self.value

    def missing_reason(self) -> str:
        return "the rule names no queue"  # the configuration check refuses a fixed rule without a value

    def leaf_part(self, base: str) -> str:
        return base  # a fixed value's dots are levels


_RULES: dict[RuleName, type[Rule]] = {
    rule.name: rule for rule in (ProvidedRule, UserRule, TagRule, FixedRule)
}


@functools.lru_cache(maxsize=4096)  # an application's queue name is most often one seen before
def _valid_queue_name(name: str) -> bool:
    return valid_queue_path(name)


def make_rule(cfg: PlacementRuleConfig) -> Rule:
    return _RULES[cfg.name](cfg)
