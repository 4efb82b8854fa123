"""A scenario's queue configuration (`queues` inline or as text, or `queues_file`), checked by the core's
own reading with its line numbers mapped back into the scenario file, and the queues it names."""

from __future__ import annotations

import textwrap
from dataclasses import dataclass, field

from yaml.nodes import MappingNode, Node, ScalarNode

from shim_fake.scenario.core_formats import QueueReader
from shim_fake.scenario.loader.values import Reading, line_of


@dataclass
class KnownQueues:
    """Every queue of the configuration by full lower-case name, and the leaves among them; both empty
    when the configuration could not be read (nothing is checked against them then)."""

    names: set[str] = field(default_factory=set)
    leaves: set[str] = field(default_factory=set)


def known_queues(reader: QueueReader, config: str) -> KnownQueues:
    known = KnownQueues()
    for partition in reader.partitions(config):
        for name, queue in partition.items():
            known.names.add(name)
            if not queue.parent:
                known.leaves.add(name)
    return known


def read_queue_config(rd: Reading, fields: dict[str, Node], prefix: str) -> str | None:
    """The queues.yaml text of `queues` (inline mapping or block text) or `queues_file`."""
    if "queues_file" in fields:
        node = fields["queues_file"]
        path_text = rd.r.string(node, f"{prefix}queues_file")
        if path_text is None:
            return None
        path = (rd.base_dir / path_text).resolve()
        try:
            text = path.read_text()
        except OSError as exc:
            rd.r.error(f"{prefix}queues_file", node, f"cannot read {path}: {exc.strerror}")
            return None
        except UnicodeDecodeError as exc:
            rd.r.error(f"{prefix}queues_file", node, f"cannot read {path}: not UTF-8 text (byte {exc.start})")
            return None
        return _validated(rd, text, f"{prefix}queues_file({path_text}).", 0, node)
    node = fields["queues"]
    if isinstance(node, ScalarNode) and node.style in ("|", ">"):
        return _validated(rd, str(node.value), f"{prefix}queues.", line_of(node), node)
    if isinstance(node, MappingNode):
        start, end = node.start_mark, node.end_mark
        raw = " " * start.column + rd.text[start.index : end.index]
        return _validated(rd, textwrap.dedent(raw), f"{prefix}queues.", start.line, node)
    rd.r.error(f"{prefix}queues", node, "expected a queues.yaml mapping (partitions: ...) or a block of text")
    return None


def _validated(rd: Reading, text: str, path_prefix: str, line_offset: int, node: Node) -> str | None:
    problems = rd.formats.queue_config_problems(text)
    for problem in problems:
        line = problem.line + line_offset if problem.line else line_of(node)
        rd.r.error_at(path_prefix + problem.path, line, problem.message)
    return None if problems else text
