"""The core's own reading of what a fake-RM scenario borrows from it, for `pykorn fake run`.

The fake shim imports nothing of the core, so that renaming a core module cannot break it; it asks
for these reads through a Protocol (CoreFormats, in shim_fake/scenario/core_formats.py) and the
command hands it this class, which does them with the core's code: the strict YAML reader (the
scenario's mistakes read like the configuration's), the queues.yaml loader, quantities, durations and
the parser of an ask's Kubernetes rules. This module does not import the shim: it matches the
Protocol by shape, which mypy checks where the command passes it in.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass

from core.config import ConfigError, QueueConfig, load_config
from core.config.properties import parse_duration
from core.config.yaml_reader import Problem, YamlReader
from core.constraints.ask import ConstraintError, parse_ask_constraints
from core.resources import parse_quantity
from si.v1.tags import TAG_REQUIRED_NODE


@dataclass(frozen=True)
class ConfiguredQueue:
    parent: bool
    guaranteed: dict[str, int]
    max: dict[str, int]


class ScenarioYamlReader(YamlReader):
    """The core's reader, plus problems at a known line: a queue configuration's own mistakes mapped
    into the scenario file, and checks across a scenario's sections."""

    def error_at(self, path: str, line: int, message: str) -> None:
        self.problems.append(Problem(path, line, message))


class CoreFormatReader:
    def yaml_reader(self) -> ScenarioYamlReader:
        return ScenarioYamlReader()

    def queue_config_problems(self, config: str) -> list[Problem]:
        try:
            load_config(config)
        except ConfigError as exc:
            return exc.problems
        return []

    def partitions(self, config: str) -> list[dict[str, ConfiguredQueue]]:
        return [_queues(partition.root) for partition in load_config(config).config.partitions]

    def quantity(self, resource: str, text: str) -> int:
        return parse_quantity(resource, text)  # its ResourceError is a ValueError

    def duration(self, text: str) -> float | None:
        return parse_duration(text)

    def ask_constraints_problem(self, tags: Mapping[str, str]) -> str | None:
        try:
            parse_ask_constraints(tags, TAG_REQUIRED_NODE)
        except ConstraintError as exc:
            return str(exc)
        return None


def _queues(root: QueueConfig) -> dict[str, ConfiguredQueue]:
    """Every queue under `root` by full lower-case name, each before its children."""
    out: dict[str, ConfiguredQueue] = {}

    def walk(queue: QueueConfig, name: str) -> None:
        guaranteed, most = queue.guaranteed, queue.max
        out[name.lower()] = ConfiguredQueue(
            queue.is_parent,
            dict(guaranteed.items()) if guaranteed else {},
            dict(most.items()) if most else {},
        )
        for child in queue.queues:
            walk(child, f"{name}.{child.name}")

    walk(root, "root")
    return out
