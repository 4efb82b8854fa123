"""Typed, strict access to a composed YAML node tree, collecting problems with path and line.

PyYAML's `compose` keeps each node's position, which plain `safe_load` throws away; reading the node
tree directly lets every error name where it is (`partitions[0].queues[1].resources.max.memory`,
line 14) and lets duplicate keys, which `safe_load` silently merges, be reported.
"""

from __future__ import annotations

from dataclasses import dataclass

import yaml
from yaml.nodes import MappingNode, Node, ScalarNode, SequenceNode

_STR = "tag:yaml.org,2002:str"
_INT = "tag:yaml.org,2002:int"
_BOOL = "tag:yaml.org,2002:bool"
_FLOAT = "tag:yaml.org,2002:float"
_NULL = "tag:yaml.org,2002:null"

_constructor = yaml.constructor.SafeConstructor()
INT64_MAX = 2**63 - 1
_SHOWN = 60  # characters of a bad value quoted in a problem


@dataclass(frozen=True)
class Problem:
    path: str
    line: int  # 1-based; 0 when unknown
    message: str

    def __str__(self) -> str:
        where = self.path or "<document>"
        return f"{where} (line {self.line}): {self.message}" if self.line else f"{where}: {self.message}"


def line_of(node: Node) -> int:
    return node.start_mark.line + 1


class YamlReader:
    """Reads nodes with type checks; every failed check records a Problem and returns None."""

    def __init__(self) -> None:
        self.problems: list[Problem] = []
        self.warnings: list[Problem] = []

    def error(self, path: str, node: Node | None, message: str) -> None:
        self.problems.append(Problem(path, line_of(node) if node is not None else 0, message))

    def warn(self, path: str, node: Node | None, message: str) -> None:
        self.warnings.append(Problem(path, line_of(node) if node is not None else 0, message))

    def mapping(self, node: Node, path: str, allowed: frozenset[str]) -> dict[str, Node] | None:
        """A mapping's values by key; unknown and duplicate keys are problems."""
        if isinstance(node, ScalarNode) and node.tag == _NULL:
            return {}
        if not isinstance(node, MappingNode):
            self.error(path, node, f"expected a mapping, got {_kind(node)}")
            return None
        out: dict[str, Node] = {}
        for key_node, value_node in node.value:
            key = self._key(key_node, path)
            if key is None:
                continue
            child = f"{path}.{key}" if path else key
            if key in out:
                self.error(child, key_node, f"duplicate key {key!r}")
                continue
            if allowed and key not in allowed:
                self.error(
                    child, key_node, f"unknown key {key!r}; expected one of {', '.join(sorted(allowed))}"
                )
                continue
            out[key] = value_node
        return out

    def free_mapping(self, node: Node, path: str) -> dict[str, Node] | None:
        """A mapping with arbitrary keys (properties, resources); duplicates are still problems."""
        return self.mapping(node, path, frozenset())

    def sequence(self, node: Node, path: str) -> list[Node] | None:
        if isinstance(node, ScalarNode) and node.tag == _NULL:
            return []
        if not isinstance(node, SequenceNode):
            self.error(path, node, f"expected a list, got {_kind(node)}")
            return None
        return list(node.value)

    def string(self, node: Node, path: str) -> str | None:
        if isinstance(node, ScalarNode) and node.tag == _NULL:
            return ""
        if not isinstance(node, ScalarNode):
            self.error(path, node, f"expected a string, got {_kind(node)}")
            return None
        return str(node.value)

    def scalar_text(self, node: Node, path: str) -> str | None:
        """Any scalar as text: property values and quantities may be written as numbers."""
        if not isinstance(node, ScalarNode) or node.tag == _NULL:
            self.error(path, node, f"expected a scalar value, got {_kind(node)}")
            return None
        return str(node.value)

    def boolean(self, node: Node, path: str) -> bool | None:
        if isinstance(node, ScalarNode) and node.tag == _BOOL:
            return bool(_constructor.construct_yaml_bool(node))
        self.error(path, node, f"expected true or false, got {_describe(node)}")
        return None

    def integer(self, node: Node, path: str, minimum: int | None = None) -> int | None:
        if not (isinstance(node, ScalarNode) and node.tag == _INT):
            self.error(path, node, f"expected an integer, got {_describe(node)}")
            return None
        if not _plain_integer(node.value):
            self.error(path, node, f"must be a plain integer of at most {INT64_MAX}, got {_describe(node)}")
            return None
        try:
            value = int(_constructor.construct_yaml_int(node))
        except ValueError:  # more digits than Python converts (4,300)
            self.error(path, node, f"must be at most {INT64_MAX}, got {_describe(node)}")
            return None
        if minimum is not None and value < minimum:
            self.error(path, node, f"must be at least {minimum}, got {value}")
            return None
        if value > INT64_MAX:
            self.error(path, node, f"must be at most {INT64_MAX}, got {_describe(node)}")
            return None
        return value

    def number(self, node: Node, path: str) -> float | None:
        if isinstance(node, ScalarNode) and node.tag in (_INT, _FLOAT) and ":" in node.value:
            self.error(path, node, f"expected a plain number, not base 60: {_describe(node)}")
            return None
        try:
            if isinstance(node, ScalarNode) and node.tag == _INT:
                if not _plain_integer(node.value):
                    raise ValueError(node.value)
                return float(_constructor.construct_yaml_int(node))
            if isinstance(node, ScalarNode) and node.tag == _FLOAT:
                return float(_constructor.construct_yaml_float(node))
        except (ValueError, OverflowError):  # too many digits, or too large for a float
            self.error(path, node, f"the number {_describe(node)} is too large")
            return None
        self.error(path, node, f"expected a number, got {_describe(node)}")
        return None

    def string_list(self, node: Node, path: str) -> tuple[str, ...] | None:
        items = self.sequence(node, path)
        if items is None:
            return None
        out = []
        for i, item in enumerate(items):
            value = self.string(item, f"{path}[{i}]")
            if value is not None:
                out.append(value)
        return tuple(out)

    def _key(self, node: Node, path: str) -> str | None:
        if not isinstance(node, ScalarNode):
            self.error(path, node, f"a key must be a plain string, got {_kind(node)}")
            return None
        return str(node.value)


def _kind(node: Node) -> str:
    if isinstance(node, MappingNode):
        return "a mapping"
    if isinstance(node, SequenceNode):
        return "a list"
    return _describe(node)


def _describe(node: Node) -> str:
    if isinstance(node, ScalarNode):
        if node.tag == _NULL:
            return "nothing (null)"
        value = str(node.value)
        return (
            repr(value) if len(value) <= _SHOWN else repr(value[:_SHOWN]) + f"... ({len(value):,} characters)"
        )
    return _kind(node)


# An int64 written in binary with its sign, prefix and separators stays well under this; anything
# longer is not an int64, and YAML 1.1's base-60 form (1:30:00) takes PyYAML quadratic time to build.
_MAX_INT_TEXT = 80


def _plain_integer(text: str) -> bool:
    """Cheap to construct: not base 60, and not longer than any int64 can be written."""
    return ":" not in text and len(text) <= _MAX_INT_TEXT
