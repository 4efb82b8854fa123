"""A scenario file as a whole: its top-level keys and report settings, each section read in turn, and
every problem found raised together as one ScenarioError."""

from __future__ import annotations

from collections.abc import Sequence
from pathlib import Path

import yaml
from yaml.nodes import Node

from shim_fake.scenario.core_formats import CoreFormats, Problem
from shim_fake.scenario.loader.applications import read_applications
from shim_fake.scenario.loader.events import check_node_events, read_events
from shim_fake.scenario.loader.expectations import read_expectations
from shim_fake.scenario.loader.nodes import read_nodes
from shim_fake.scenario.loader.queues import KnownQueues, known_queues, read_queue_config
from shim_fake.scenario.loader.values import Reading
from shim_fake.scenario.model import Scenario

_TOP = frozenset(
    {"name", "description", "speed", "end", "report", "queues", "queues_file", "nodes", "applications",
     "events", "expect"}
)  # fmt: skip
_REPORT = frozenset({"resource", "sample_interval"})


class ScenarioError(ValueError):
    def __init__(self, source: str, problems: Sequence[Problem]) -> None:
        self.source = source
        self.problems = list(problems)
        lines = "\n".join(f"  {p}" for p in problems)
        super().__init__(f"{source}: invalid scenario ({len(problems)} problem(s))\n{lines}")


def load_scenario(path: Path, formats: CoreFormats) -> Scenario:
    return parse_scenario(path.read_text(), formats, source=str(path), base_dir=path.parent)


def parse_scenario(
    text: str, formats: CoreFormats, source: str = "<scenario>", base_dir: Path | None = None
) -> Scenario:
    """`formats`: the core's reading of what the scenario borrows from it (see core_formats)."""
    reader = formats.yaml_reader()
    try:
        document = yaml.compose(text, Loader=yaml.SafeLoader)
    except yaml.YAMLError as exc:
        mark = getattr(exc, "problem_mark", None)
        problem = getattr(exc, "problem", None) or str(exc)
        reader.error_at("", mark.line + 1 if mark else 0, f"not valid YAML: {problem}")
        raise ScenarioError(source, reader.problems) from None
    scenario = _read(Reading(reader, formats, text, base_dir or Path(".")), document)
    if reader.problems or scenario is None:
        raise ScenarioError(source, reader.problems)
    return scenario


def _read(rd: Reading, document: Node | None) -> Scenario | None:
    if document is None:
        rd.r.error("", None, "the scenario is empty")
        return None
    top = rd.r.mapping(document, "", _TOP)
    if top is None:
        return None
    for required in ("nodes", "applications"):
        if required not in top:
            rd.r.error(required, document, f"missing: a scenario needs {required}")
    if ("queues" in top) == ("queues_file" in top):
        rd.r.error("queues", document, "give the queue configuration as exactly one of queues or queues_file")
        return None
    config = read_queue_config(rd, top, "")
    queues = known_queues(rd.formats, config) if config is not None else KnownQueues()
    nodes = read_nodes(rd, top.get("nodes"), "nodes")
    events, changes = read_events(rd, top.get("events"))
    all_nodes = list(nodes) + [n for e in events if e.action == "add" for n in e.nodes]
    check_node_events(rd, nodes, events)
    apps = read_applications(rd, top.get("applications"), "applications", all_nodes, queues)
    report = rd.r.mapping(top["report"], "report", _REPORT) if "report" in top else {}
    report = report or {}
    resource = rd.r.string(report["resource"], "report.resource") if "resource" in report else None
    expectations = read_expectations(rd, top.get("expect"), apps, resource or "memory", queues)
    sample = (
        rd.duration(report["sample_interval"], "report.sample_interval")
        if "sample_interval" in report
        else None
    )
    name = rd.r.string(top["name"], "name") if "name" in top else None
    description = rd.r.string(top["description"], "description") if "description" in top else None
    speed = rd.r.number(top["speed"], "speed") if "speed" in top else None
    if speed is not None and speed <= 0:
        rd.r.error("speed", top["speed"], f"speed must be positive, got {speed}")
    end = rd.duration(top["end"], "end") if "end" in top else None
    if config is None:
        return None
    return Scenario(
        name=name or "scenario",
        description=description or "",
        config=config,
        nodes=tuple(nodes),
        apps=tuple(apps),
        queue_reader=rd.formats,
        config_changes=tuple(changes),
        node_events=tuple(events),
        expectations=tuple(expectations),
        end=end,
        speed=speed or 1.0,
        report_resource=resource or "memory",
        sample_interval=sample or 0.5,
    )
