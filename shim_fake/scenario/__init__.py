"""Scenarios for the fake resource manager: load, run against a core, report.

- `model`: a scenario and its parts, and a task as it runs; `resource`: the resources of a node or task;
- `core_formats`: what a scenario borrows from the core's formats, asked for through Protocols (the
  command passes in the core's reading: this package imports nothing of the core);
- `loader`: the scenario file read strictly, every mistake with its path and line;
- `runner`: the loop that runs it against a core; `simulated_cluster`: what the fake RM has;
  `core_answers`: the core's answers carried out; `si_messages`: what is sent;
- `recording`, `expectations`, `report`, `plot`, `units`: what happened, checked and shown;
- `command`: `pykorn fake run`.
"""

from shim_fake.scenario.loader import ScenarioError, load_scenario, parse_scenario
from shim_fake.scenario.model import Scenario

__all__ = ["Scenario", "ScenarioError", "load_scenario", "parse_scenario"]
