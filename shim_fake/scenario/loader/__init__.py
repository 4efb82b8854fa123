"""Load a scenario file strictly: every mistake is found before anything starts, with path and line.

Besides the shape (unknown keys, wrong types) it checks what would only show up minutes into a run:
a task bigger than every node, a negative duration, an application or expectation naming a queue the
configuration does not have, a node event naming an unknown node, an invalid queue configuration
(the core's own reading runs on it, and its line numbers are mapped back into the scenario file).

- `document`: the file as a whole, `parse_scenario` and `load_scenario`, ScenarioError;
- `queues`: the queue configuration; `nodes`; `events` (configuration changes, node events);
  `applications` (and their gangs); `tasks` (and their Kubernetes pod fields); `expectations`;
- `values`: the scenario being read, and the values every section reads (resources, durations).
"""

from shim_fake.scenario.loader.document import ScenarioError, load_scenario, parse_scenario

__all__ = ["ScenarioError", "load_scenario", "parse_scenario"]
