"""Invalid scenarios, each mistake reported with its YAML path and line: the file as a whole,
applications, tasks and expectations.

The invalid scenarios are written inline; the line numbers expected are counted by hand from the text
(line 1 is the first line after the opening quotes). HEADER, shared by many of them, is 12 lines.
"""

from __future__ import annotations

import pytest

from shim_fake.scenario import ScenarioError
from tests.fake_scenarios import parse_scenario
from tests.unit.scenario_helpers import GI, HEADER, _after_header, _at, _problems

# Invalid scenarios -----------------------------------------------------------------------------


def test_an_unknown_top_level_key() -> None:
    text = HEADER + "applications: []\nbogus: 1\n"  # bogus is line 14
    problems = _problems(text)
    problem = _at(problems, "bogus", 14)
    assert "unknown key 'bogus'" in problem.message and "applications" in problem.message


def test_the_error_names_the_source_and_counts_the_problems() -> None:
    with pytest.raises(ScenarioError) as info:
        parse_scenario(HEADER + "applications: []\nbogus: 1\n", source="my.yaml")
    message = str(info.value)
    assert message.startswith("my.yaml: invalid scenario (1 problem(s))")
    assert "bogus (line 14)" in message
    assert info.value.source == "my.yaml"


def test_an_unknown_key_inside_a_task() -> None:
    text = _after_header("""\
applications:
  - id: app1
    queue: a
    tasks:
      - name: t
        duration: 5s
        resources: {memory: 1Gi}
        colour: red
""")
    problem = _at(_problems(text), "applications[0].tasks[0].colour", 20)
    assert "unknown key 'colour'" in problem.message


def test_a_task_bigger_than_every_node() -> None:
    text = _after_header("""\
applications:
  - id: app1
    queue: a
    tasks:
      - name: fits
        duration: 5s
        resources: {memory: 4Gi, vcore: 4}
      - name: big
        duration: 5s
        resources: {memory: 8Gi, vcore: 1}
""")
    problems = _problems(text)
    assert len(problems) == 1
    problem = _at(problems, "applications[0].tasks[1].resources", 22)
    assert "fits no node" in problem.message and "n1" in problem.message


def test_a_task_bigger_than_every_node_including_those_added_later() -> None:
    text = _after_header("""\
applications:
  - id: app1
    queue: a
    tasks:
      - name: big
        duration: 5s
        resources: {memory: 16Gi}
events:
  - at: 10s
    node: {action: add, id: n2, resources: {memory: 8Gi, vcore: 8}}
""")
    problem = _at(_problems(text), "applications[0].tasks[0].resources", 19)
    assert "fits no node" in problem.message and "the largest is n2" in problem.message


def test_a_task_that_fits_only_a_node_added_by_an_event_is_valid() -> None:
    text = _after_header("""\
applications:
  - id: app1
    queue: root.p.c
    tasks:
      - {name: big, duration: 5s, resources: {memory: 6Gi, vcore: 6}}
events:
  - at: 10s
    node: {action: add, count: 2, prefix: extra, resources: {memory: 8Gi, vcore: 8}}
""")
    scenario = parse_scenario(text)
    assert scenario.apps[0].tasks[0].resources.as_dict() == {"memory": 6 * GI, "vcore": 6000}
    [event] = scenario.node_events
    assert [n.node_id for n in event.nodes] == ["extra-1", "extra-2"]
    assert event.line == 20


@pytest.mark.parametrize(
    ("duration", "words"),
    [
        ("-5s", "cannot be negative"),
        ("-5", "cannot be negative"),
        ("soon", "is not a duration"),
        ("5 parsecs", "is not a duration"),
        ("{seconds: 5}", "expected a scalar"),
    ],
)
def test_a_bad_duration(duration: str, words: str) -> None:
    text = _after_header(f"""\
applications:
  - id: app1
    queue: a
    tasks:
      - name: t
        resources: {{memory: 1Gi}}
        duration: {duration}
""")
    problem = _at(_problems(text), "applications[0].tasks[0].duration", 19)
    assert words in problem.message


def test_a_missing_duration() -> None:
    text = _after_header("""\
applications:
  - id: app1
    queue: a
    tasks:
      - name: t
        resources: {memory: 1Gi}
""")
    problem = _at(_problems(text), "applications[0].tasks[0].duration", 17)  # the task's first line
    assert "missing" in problem.message and "until stopped" in problem.message


def test_an_application_naming_a_queue_not_in_the_configuration() -> None:
    text = _after_header("""\
applications:
  - id: app1
    queue: root.nowhere
    tasks: []
""")
    problem = _at(_problems(text), "applications[0].queue", 15)
    assert "not in the queue configuration" in problem.message


def test_an_application_naming_a_parent_queue() -> None:
    text = _after_header("""\
applications:
  - id: app1
    queue: p
    tasks: []
""")
    problem = _at(_problems(text), "applications[0].queue", 15)
    assert "a parent queue" in problem.message and "leaf" in problem.message


@pytest.mark.parametrize(
    ("expectation", "path", "words"),
    [
        ("not_preempted: {app: nope}", "expect[0].not_preempted.app", "no application 'nope'"),
        ("preempted: {task: nope/t-000}", "expect[0].preempted.task", "app/group-N"),
        ("wait_p99_at_most: {queue: root.zz, seconds: 1}", "expect[0].wait_p99_at_most.queue",
         "'root.zz' is not in the queue configuration"),
        ("queue_usage_at_most: {queue: zz, value: 1Gi}", "expect[0].queue_usage_at_most.queue",
         "'root.zz' is not in the queue configuration"),
        ("queue_usage_at_least: {queue: root, value: 1Gi}", "expect[0].queue_usage_at_least.queue",
         "below root"),
        ("finished_quickly: true", "expect[0].finished_quickly", "unknown key 'finished_quickly'"),
        ("queue_usage_at_most: {queue: a}", "expect[0].queue_usage_at_most", "missing value"),
        ("queue_usage_at_most: {queue: a, value: 1Gi, soon: 1}", "expect[0].queue_usage_at_most.soon",
         "unknown key 'soon'"),
        ("queue_usage_at_most: {queue: a, value: lots}", "expect[0].queue_usage_at_most.value",
         "not a quantity"),
        ("wait_p99_at_most: {queue: a, seconds: -1}", "expect[0].wait_p99_at_most.seconds", "negative"),
    ],
)  # fmt: skip
def test_an_invalid_expectation(expectation: str, path: str, words: str) -> None:
    text = _after_header(f"""\
applications:
  - id: app1
    queue: a
    tasks: []
expect:
  - {expectation}
""")
    problem = _at(_problems(text), path, 18)
    assert words in problem.message


def test_an_expectation_with_two_kinds() -> None:
    text = _after_header("""\
applications: []
expect:
  - every_task_ran: true
    no_rejections: true
""")
    problem = _at(_problems(text), "expect[0]", 15)
    assert "a single kind" in problem.message


def test_duplicate_application_ids() -> None:
    text = _after_header("""\
applications:
  - id: app1
    queue: a
    tasks: []
  - id: app1
    queue: root.p.c
    tasks: []
""")
    problem = _at(_problems(text), "applications[1].id", 17)
    assert "duplicate application id 'app1'" in problem.message


def test_an_application_missing_its_queue() -> None:
    text = HEADER + "applications:\n  - id: app1\n    tasks: []\n"
    problem = _at(_problems(text), "applications[0].queue", 14)
    assert "missing" in problem.message


def test_several_problems_are_reported_together() -> None:
    text = _after_header("""\
speed: 0
applications:
  - id: app1
    queue: nowhere
    tasks:
      - name: t
        resources: {memory: 1Gi}
        duration: -5s
      - name: u
        resources: {memory: 1Pi}
        duration: 1m
  - id: app1
    queue: a
    tasks: []
events:
  - at: 5s
    node: {action: drain, id: ghost}
expect:
  - queue_usage_at_most: {queue: ghost, value: 1Gi}
  - bogus: true
""")
    problems = _problems(text)
    expected = [
        ("speed", 13),
        ("applications[0].queue", 16),
        ("applications[0].tasks[0].duration", 20),
        ("applications[0].tasks[1].resources", 22),
        ("applications[1].id", 24),
        ("events", 29),
        ("expect[0].queue_usage_at_most.queue", 31),
        ("expect[1].bogus", 32),
    ]
    for path, line in expected:
        _at(problems, path, line)
    assert len(problems) == len(expected), "\n".join(str(p) for p in problems)


def test_not_yaml_at_all() -> None:
    problem = _at(_problems("nodes: [\napplications: {\n"), "", 3)
    assert "not valid YAML" in problem.message


def test_an_empty_scenario() -> None:
    problem = _problems("")[0]
    assert "empty" in problem.message
