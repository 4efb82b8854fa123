"""What a scenario borrows from the core's formats, as the fake shim asks for it (Protocols only).

A scenario file writes its queue configuration as a queues.yaml, its quantities and durations as the
core's configuration does, its tasks' Kubernetes rules as the tags the core parses, and reports its
mistakes as the core's strict YAML reader does (path, line, the same words). Checking all that before
a run means reading it exactly as the core will. The shim does not import the core for it, so that
renaming a core module cannot break a shim: `pykorn fake run` (pykorn_cli, the composition root)
passes in an object that does these reads with the core's own code, and the tests' helpers do the
same.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Protocol

from yaml.nodes import Node


class Problem(Protocol):
    """One mistake: where (a YAML path, a 1-based line or 0 when unknown) and what; `str()` says all."""

    @property
    def path(self) -> str: ...

    @property
    def line(self) -> int: ...

    @property
    def message(self) -> str: ...


class StrictYaml(Protocol):
    """Typed reads of a composed YAML node tree: a read that fails records a Problem, with the node's
    path and line, and returns None; every problem of a document is collected, in the order found."""

    @property
    def problems(self) -> Sequence[Problem]: ...

    def error(self, path: str, node: Node | None, message: str) -> None: ...

    def error_at(self, path: str, line: int, message: str) -> None:
        """A problem found outside the node tree (another file, a check across sections)."""

    def mapping(self, node: Node, path: str, allowed: frozenset[str]) -> dict[str, Node] | None: ...

    def free_mapping(self, node: Node, path: str) -> dict[str, Node] | None: ...

    def sequence(self, node: Node, path: str) -> list[Node] | None: ...

    def string(self, node: Node, path: str) -> str | None: ...

    def scalar_text(self, node: Node, path: str) -> str | None: ...

    def boolean(self, node: Node, path: str) -> bool | None: ...

    def integer(self, node: Node, path: str, minimum: int | None = None) -> int | None: ...

    def number(self, node: Node, path: str) -> float | None: ...

    def string_list(self, node: Node, path: str) -> tuple[str, ...] | None: ...


class ConfiguredQueue(Protocol):
    """One queue of a queues.yaml as the core reads it."""

    @property
    def parent(self) -> bool:
        """Configured as a parent, or having children: applications go to leaves only."""

    @property
    def guaranteed(self) -> Mapping[str, int]: ...

    @property
    def max(self) -> Mapping[str, int]: ...


class QueueReader(Protocol):
    def partitions(self, config: str) -> Sequence[Mapping[str, ConfiguredQueue]]:
        """Each partition's queues by full lower-case name (root, root.a, ...), parents before their
        children; `config` is valid (checked with `queue_config_problems`)."""


class CoreFormats(QueueReader, Protocol):
    def yaml_reader(self) -> StrictYaml:
        """A fresh reader for one document."""

    def queue_config_problems(self, config: str) -> Sequence[Problem]:
        """Every mistake in a queues.yaml text, with paths and lines of that text; none when the core
        would take it."""

    def quantity(self, resource: str, text: str) -> int:
        """A quantity of `resource` in the wire's unit (memory in bytes, vcore in milli-cores); raises
        ValueError, with words fit for the user, when it is not one."""

    def duration(self, text: str) -> float | None:
        """Seconds from `30`, `30s`, `1m30s`, ...; None when it is not a duration."""

    def ask_constraints_problem(self, tags: Mapping[str, str]) -> str | None:
        """Why the core would refuse an ask carrying these tags (its Kubernetes rules), or None."""
