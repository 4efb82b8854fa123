"""The rules: provided, user, tag, fixed; each with `create`, an optional parent rule and a filter.

A rule answers a queue name, "" for "no match, try the next rule" (with a note saying why), or
raises PlacementError, which rejects the application outright, as YuniKorn does for a generated
name that is not a valid queue name or a parent rule that names a leaf queue.
"""

from __future__ import annotations

import functools
import re
from abc import ABC, abstractmethod
from collections.abc import Callable
from dataclasses import dataclass, field

from core.config.schema import Filter, PlacementRuleConfig, RuleName
from core.config.validation import QUEUE_NAME
from core.objects.queue_tree import QueueTree

DOT_REPLACEMENT = "_dot_"
_REGEX_CHARS = re.compile(r"[\^$*+?()\[{}|]")


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


class RuleFilter:
    def __init__(self, cfg: Filter) -> None:
        self.allow = cfg.type.lower() != "deny"
        self._users = _matcher(cfg.users)
        self._groups = _matcher(cfg.groups)
        self._empty = not cfg.users and not cfg.groups

    def admits(self, user: str, groups: tuple[str, ...]) -> bool:
        if self._empty:
            return self.allow
        if self._users(user) or any(self._groups(g) for g in groups):
            return self.allow
        return not self.allow


def _matcher(names: tuple[str, ...]) -> Callable[[str], bool]:
    # One entry with regex characters is a pattern (searched, as Go's MatchString does); otherwise
    # entries are exact names.
    if len(names) == 1 and _REGEX_CHARS.search(names[0]):
        pattern = re.compile(names[0])
        return lambda name: bool(pattern.search(name))
    exact = frozenset(names)
    return lambda name: name in exact


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
        if not parent.startswith("root"):
            parent = f"root.{parent}"
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
    return all(QUEUE_NAME.match(part) for part in name.split("."))


def make_rule(cfg: PlacementRuleConfig) -> Rule:
    return _RULES[cfg.name](cfg)
