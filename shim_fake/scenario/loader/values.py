"""One scenario being read, and the values its sections share: resources, durations and times, maps of
strings, Kubernetes objects passed on as they are written."""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path
from typing import Any

import yaml
from yaml.nodes import Node

from shim_fake.scenario.core_formats import CoreFormats, StrictYaml
from shim_fake.scenario.resource import Resource


def line_of(node: Node) -> int:
    """A node's 1-based line (PyYAML counts from 0)."""
    return node.start_mark.line + 1


def plain(node: Node) -> Any:
    """A YAML subtree as plain Python values (for Kubernetes objects passed on as JSON)."""
    return yaml.constructor.SafeConstructor().construct_object(node, deep=True)


@dataclass
class Reading:
    """The reader collecting the scenario's problems, the core's formats it is read in, the file's text
    (an inline queue configuration is cut from it) and the folder a queues_file is relative to."""

    r: StrictYaml
    formats: CoreFormats
    text: str
    base_dir: Path

    def missing(
        self, fields: dict[str, Node], required: tuple[str, ...], owner: Node, path: str, what: str
    ) -> bool:
        """Report each required key `fields` lacks (`what`: the entry, for the message); whether any."""
        absent = [key for key in required if key not in fields]
        for key in absent:
            self.r.error(f"{path}.{key}", owner, f"missing: {what} needs {key}")
        return bool(absent)

    def resources(self, node: Node | None, path: str, owner: Node) -> Resource | None:
        if node is None:
            self.r.error(path, owner, "missing: resources")
            return None
        fields = self.r.free_mapping(node, path)
        if fields is None:
            return None
        values = {}
        for name, value_node in fields.items():
            text = self.r.scalar_text(value_node, f"{path}.{name}")
            if text is None:
                continue
            try:
                values[name] = self.formats.quantity(name, text)
            except ValueError as exc:
                self.r.error(f"{path}.{name}", value_node, str(exc))
        if not values or not any(values.values()):
            self.r.error(path, node, "resources cannot be empty or zero")
            return None
        return Resource(values)

    def string_map(self, node: Node | None, path: str) -> tuple[tuple[str, str], ...]:
        if node is None:
            return ()
        fields = self.r.free_mapping(node, path) or {}
        out = []
        for key, value in fields.items():
            text = self.r.scalar_text(value, f"{path}.{key}")
            if text is not None:
                out.append((key, text))
        return tuple(out)

    def duration(self, node: Node, path: str) -> float | None:
        text = self.r.scalar_text(node, path)
        if text is None:
            return None
        seconds = self.formats.duration(text)
        if seconds is None:
            self.r.error(path, node, f"{text!r} is not a duration (examples: 30, 30s, 2m)")
            return None
        if seconds < 0:
            self.r.error(path, node, f"a duration cannot be negative, got {text!r}")
            return None
        return seconds

    def time(self, node: Node | None, path: str) -> float | None:
        return self.duration(node, path) if node is not None else None
