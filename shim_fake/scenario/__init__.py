"""Scenarios for the fake resource manager: load, run against a core, report."""

from shim_fake.scenario.loader import ScenarioError, load_scenario, parse_scenario
from shim_fake.scenario.model import Scenario

__all__ = ["Scenario", "ScenarioError", "load_scenario", "parse_scenario"]
