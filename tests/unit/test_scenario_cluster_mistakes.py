"""Invalid scenarios, each mistake reported with its YAML path and line: the queue configuration
(inline, in a file, in a change event), the nodes and the node events.

The invalid scenarios are written inline; the line numbers expected are counted by hand from the text
(line 1 is the first line after the opening quotes). HEADER, shared by many of them, is 12 lines.
"""

from __future__ import annotations

from pathlib import Path

import pytest

from tests.fake_scenarios import load_scenario, queue_limits
from tests.unit.scenario_helpers import HEADER, _after_header, _after_queues, _at, _problems


def test_a_negative_event_time() -> None:
    text = _after_header("""\
applications: []
events:
  - at: -1s
    node: {action: drain, id: n1}
""")
    problem = _at(_problems(text), "events[0].at", 15)
    assert "cannot be negative" in problem.message


INLINE_BAD_QUEUES = """\
name: bad-queues
queues:
  partitions:
    - name: default
      bogus: 1
      queues:
        - name: root
nodes:
  - {id: n1, resources: {memory: 4Gi}}
applications: []
"""

BLOCK_BAD_QUEUES = INLINE_BAD_QUEUES.replace("queues:\n  partitions:", "queues: |\n  partitions:", 1)


@pytest.mark.parametrize("text", [INLINE_BAD_QUEUES, BLOCK_BAD_QUEUES], ids=["inline-mapping", "block-text"])
def test_an_invalid_inline_queue_configuration(text: str) -> None:
    problems = _problems(text)
    assert len(problems) == 1
    problem = _at(problems, "queues.partitions[0].bogus", 5)  # the line in the scenario file
    assert problem.path == "queues.partitions[0].bogus"
    assert "unknown key 'bogus'" in problem.message


def test_an_invalid_queue_value_deep_in_the_configuration_points_into_the_scenario() -> None:
    text = """\
queues:
  partitions:
    # a comment inside the configuration
    - name: default
      queues:
        - name: root
          queues:
            - name: a
              resources: {max: {memory: 1Gi}, guaranteed: {memory: 2Gi}}
nodes:
  - {id: n1, resources: {memory: 4Gi}}
applications: []
"""
    problem = _at(_problems(text), "queues.partitions[0].queues[0].queues[0].resources", 9)
    assert "above max" in problem.message


@pytest.mark.parametrize("block", [False, True], ids=["inline-mapping", "block-text"])
def test_an_invalid_configuration_in_a_change_event(block: bool) -> None:
    text = _after_header(f"""\
applications: []
events:
  - at: 10s
    queues:{" |" if block else ""}
      partitions:
        - name: default
          queues:
            - name: root
              bogus: 2
""")
    problem = _at(_problems(text), "events[0].queues.partitions[0].queues[0].bogus", 21)
    assert "unknown key 'bogus'" in problem.message


def test_queues_must_be_a_mapping_or_text() -> None:
    text = "queues: [partitions]\nnodes: []\napplications: []\n"
    problem = _at(_problems(text), "queues", 1)
    assert "block of text" in problem.message


def test_a_queues_file_that_does_not_exist(tmp_path: Path) -> None:
    text = """\
name: missing-file
nodes:
  - {id: n1, resources: {memory: 4Gi}}
queues_file: nowhere.yaml
applications: []
"""
    problem = _at(_problems(text, base_dir=tmp_path), "queues_file", 4)
    assert "cannot read" in problem.message and "nowhere.yaml" in problem.message


def test_a_queues_file_is_read_relative_to_the_scenario(tmp_path: Path) -> None:
    (tmp_path / "q.yaml").write_text(
        "partitions:\n  - name: default\n    queues:\n      - name: root\n"
        "        queues:\n          - name: p\n            queues:\n              - name: c\n"
    )
    scenario_path = tmp_path / "s.yaml"
    scenario_path.write_text("queues_file: q.yaml\nnodes: []\napplications:\n"
                             "  - {id: app1, queue: p.c, tasks: []}\n")  # fmt: skip
    scenario = load_scenario(scenario_path)
    assert scenario.apps[0].queue == "root.p.c"
    assert "root.p.c" in queue_limits(scenario.config)


def test_an_invalid_queues_file_names_the_file_and_its_own_line(tmp_path: Path) -> None:
    (tmp_path / "q.yaml").write_text("partitions:\n  - name: default\n    bogus: 1\n")
    problems = _problems("queues_file: q.yaml\nnodes: []\napplications: []\n", base_dir=tmp_path)
    problem = _at(problems, "queues_file(q.yaml).partitions[0].bogus", 3)  # line 3 of q.yaml
    assert "unknown key" in problem.message


def test_both_queues_and_queues_file() -> None:
    text = HEADER + "queues_file: q.yaml\napplications: []\n"
    problem = _at(_problems(text), "queues", 1)
    assert "exactly one of queues or queues_file" in problem.message


def test_neither_queues_nor_queues_file() -> None:
    problem = _at(_problems("nodes: []\napplications: []\n"), "queues", 1)
    assert "exactly one of queues or queues_file" in problem.message


def test_a_node_event_naming_a_node_that_does_not_exist_yet() -> None:
    text = _after_header("""\
applications: []
events:
  - at: 20s
    node: {action: add, id: n2, resources: {memory: 4Gi}}
  - at: 10s
    node: {action: drain, id: n2}
  - at: 30s
    node: {action: undrain, id: n2}
  - at: 40s
    node:
      action: decommission
      ids: [n1, n9]
""")
    problems = _problems(text)
    assert len(problems) == 2, problems
    early = _at(problems, "events", 18)
    assert "'n2' does not exist at that time" in early.message and "drain at 10s" in early.path
    unknown = _at(problems, "events", 23)  # a block mapping starts at its first key
    assert "'n9' does not exist" in unknown.message


def test_a_node_event_naming_a_decommissioned_node() -> None:
    text = _after_header("""\
applications: []
events:
  - at: 5s
    node: {action: decommission, id: n1}
  - at: 10s
    node: {action: undrain, id: n1}
  - at: 15s
    node: {action: add, id: n1, resources: {memory: 4Gi}}
  - at: 20s
    node: {action: drain, id: n1}
""")
    problems = _problems(text)
    assert len(problems) == 1, problems
    problem = _at(problems, "events", 18)
    assert "'n1' does not exist at that time" in problem.message


def test_a_node_event_adding_a_node_that_already_exists() -> None:
    text = _after_header("""\
applications: []
events:
  - at: 5s
    node: {action: add, id: n1, resources: {memory: 4Gi}}
""")
    problem = _at(_problems(text), "events", 16)
    assert "duplicate node id 'n1'" in problem.message


def test_a_node_event_with_an_unknown_action() -> None:
    text = _after_header("""\
applications: []
events:
  - at: 5s
    node: {action: reboot, id: n1}
""")
    problem = _at(_problems(text), "events[0].node.action", 16)
    assert "action must be one of" in problem.message


def test_duplicate_node_ids() -> None:
    text = _after_queues("""\
nodes:
  - {count: 2, prefix: n, resources: {memory: 4Gi}}
  - {id: n-2, resources: {memory: 4Gi}}
applications: []
""")
    problem = _at(_problems(text), "nodes[1]", 13)
    assert "duplicate node id 'n-2'" in problem.message
