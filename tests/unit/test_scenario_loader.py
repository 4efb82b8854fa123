"""Scenario loading: the examples, every mistake reported with its YAML path and line, parsing details.

The invalid scenarios are written inline; the line numbers expected are counted by hand from the text
(line 1 is the first line after the opening quotes). HEADER, shared by many of them, is 12 lines.
"""

from __future__ import annotations

from pathlib import Path

import pytest

from core.config import load_config
from core.config.yaml_reader import Problem
from shim_fake.scenario import Scenario, ScenarioError, load_scenario, parse_scenario
from shim_fake.scenario.recording import queue_limits

REPO = Path(__file__).resolve().parents[2]
EXAMPLES = REPO / "examples"
GI = 2**30

# 12 lines: leaves root.a and root.p.c, parent root.p; one node n1 of 4Gi and 4 cores.
HEADER = """\
queues:
  partitions:
    - name: default
      queues:
        - name: root
          queues:
            - name: a
            - name: p
              queues:
                - name: c
nodes:
  - {id: n1, resources: {memory: 4Gi, vcore: 4}}
"""
assert len(HEADER.splitlines()) == 12

# 10 lines: the same queues, for scenarios that write their own nodes.
QUEUES = "\n".join(HEADER.splitlines()[:10]) + "\n"


def _after_header(body: str) -> str:
    return HEADER + body


def _after_queues(body: str) -> str:
    return QUEUES + body


def _problems(text: str, **kwargs: object) -> list[Problem]:
    with pytest.raises(ScenarioError) as info:
        parse_scenario(text, **kwargs)  # type: ignore[arg-type]
    assert info.value.problems, "a ScenarioError always lists its problems"
    return info.value.problems


def _at(problems: list[Problem], path: str, line: int) -> Problem:
    """The problem whose path contains `path` and that is on `line`; fails listing them all if none is."""
    matches = [p for p in problems if path in p.path and p.line == line]
    assert matches, f"no problem at {path!r} line {line}; got:\n" + "\n".join(str(p) for p in problems)
    return matches[0]


# The examples ----------------------------------------------------------------------------------

# name -> ({app id: (queue, arrival, [(group, count, duration)])}, node count, [(at, action, node ids)],
#          config change times, [expectation kinds], report resource)
EXPECTED_EXAMPLES: dict[str, tuple[dict[str, tuple[str, float, list[tuple[str, int, float | None]]]],
                                   int, list[tuple[float, str, list[str]]], list[float], list[str], str]] = {
    "demo.yaml": (
        {
            "system-agents": ("root.system", 0.0, [("agent", 4, None)]),
            "t1-batch": ("root.tenant1.batch", 0.0, [("worker", 36, 20.0)]),
            "t1-interactive": ("root.tenant1.interactive", 15.0, [("query", 10, 8.0)]),
            "t2-etl": ("root.tenant2.etl", 2.0, [("stage", 28, 25.0)]),
        },
        4, [], [30.0],
        ["every_task_ran", "no_rejections", "wait_p99_at_most", "preempted", "not_preempted", "preempted",
         "queue_usage_at_most"],
        "memory",
    ),
    "node-events.yaml": (
        {"pipeline": ("root.jobs", 0.0, [("step", 16, 12.0)])},
        2, [(5.0, "add", ["node-3"]), (10.0, "drain", ["node-1"]), (15.0, "decommission", ["node-2"])], [],
        ["every_task_finished", "queue_usage_at_most"],
        "vcore",
    ),
    "fair-share.yaml": (
        {"red-app": ("root.red", 0.0, [("t", 24, 8.0)]), "blue-app": ("root.blue", 0.0, [("t", 24, 8.0)])},
        4, [], [],
        ["every_task_finished", "queue_usage_at_least", "queue_usage_at_least"],
        "vcore",
    ),
}  # fmt: skip


def test_every_example_is_covered() -> None:
    assert sorted(p.name for p in EXAMPLES.glob("*.yaml")) == sorted(EXPECTED_EXAMPLES)


@pytest.mark.parametrize("name", sorted(EXPECTED_EXAMPLES))
def test_every_example_loads_as_expected(name: str) -> None:
    apps, node_count, node_events, change_times, kinds, resource = EXPECTED_EXAMPLES[name]
    scenario = load_scenario(EXAMPLES / name)
    assert isinstance(scenario, Scenario)
    assert scenario.name == name.removesuffix(".yaml")
    got_apps = {a.app_id: (a.queue, a.arrival, [(g.name, g.count, g.duration) for g in a.tasks])
                for a in scenario.apps}  # fmt: skip
    assert got_apps == apps
    assert scenario.task_count() == sum(c for _, _, groups in apps.values() for _, c, _ in groups)
    assert len(scenario.nodes) == node_count
    assert [(e.at, e.action, [n.node_id for n in e.nodes]) for e in scenario.node_events] == node_events
    assert [c.at for c in scenario.config_changes] == change_times
    assert [e.kind for e in scenario.expectations] == kinds
    assert scenario.report_resource == resource
    # The configuration text (and every change's) is what the core's own loader accepts.
    load_config(scenario.config)
    for change in scenario.config_changes:
        load_config(change.config)
    # Every expectation carries its line in the file, and the lines are in file order.
    lines = [e.line for e in scenario.expectations]
    assert all(lines) and lines == sorted(lines)


def test_the_demo_in_detail() -> None:
    s = load_scenario(EXAMPLES / "demo.yaml")
    assert s.speed == 3.0 and s.end is None and s.sample_interval == 0.5
    assert [n.node_id for n in s.nodes] == ["node-1", "node-2", "node-3", "node-4"]
    for node in s.nodes:
        assert node.resources.as_dict() == {"memory": 16 * GI, "vcore": 8000}
    apps = {a.app_id: a for a in s.apps}
    assert all(a.queue.startswith("root.") for a in s.apps)
    agent = apps["system-agents"].tasks[0]
    assert agent.duration is None  # until stopped
    assert agent.resources.as_dict() == {"memory": GI, "vcore": 500}
    assert agent.priority == 2_000_000_000
    assert agent.line == 44
    worker = apps["t1-batch"].tasks[0]
    assert worker.resources.as_dict() == {"memory": 2 * GI, "vcore": 1000}
    assert worker.duration == 20.0
    assert apps["t1-batch"].line == 49
    # Tasks arrive with their application.
    assert apps["t1-interactive"].tasks[0].arrival == 15.0
    assert apps["t2-etl"].tasks[0].arrival == 2.0
    assert s.task_count() == 78
    # The inline configuration is dedented queues.yaml text.
    assert s.config.startswith("partitions:")
    before = queue_limits(s.config)
    assert before["root.tenant2"].max == {"memory": 40 * GI, "vcore": 20000}
    # At 30s tenant2's max goes from 40Gi to 16Gi.
    [change] = s.config_changes
    assert change.at == 30.0 and change.line == 74
    after = queue_limits(change.config)
    assert after["root.tenant2"].max == {"memory": 16 * GI, "vcore": 8000}
    assert after["root.tenant2"].guaranteed == {"memory": 8 * GI, "vcore": 4000}
    assert after["root.tenant1"].max == before["root.tenant1"].max
    assert s.last_event_time() == 30.0
    # Six expectations, parsed.
    assert len(s.expectations) == 7
    ran, rejections, wait, preempted, spared, quota_cut, usage = s.expectations
    assert (ran.kind, ran.params, ran.line) == ("every_task_ran", {}, 99)
    assert (rejections.kind, rejections.line) == ("no_rejections", 100)
    assert (quota_cut.kind, quota_cut.params) == ("preempted", {"app": "t2-etl", "at_least": 1})
    assert wait.params == {"queue": "root.system", "seconds": 3.0}
    assert (preempted.kind, preempted.params) == ("preempted", {"app": "t1-batch", "at_least": 1})
    assert (spared.kind, spared.params) == ("not_preempted", {"app": "system-agents"})
    assert usage.kind == "queue_usage_at_most" and usage.line == 107
    assert usage.params["queue"] == "root.tenant2"
    assert usage.params["value"] == 16 * GI
    assert usage.params["after"] == 41.0
    assert "before" not in usage.params
    assert "value=16.0Gi" in usage.describe() and "after=41s" in usage.describe()


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


def test_a_negative_event_time() -> None:
    text = _after_header("""\
applications: []
events:
  - at: -1s
    node: {action: drain, id: n1}
""")
    problem = _at(_problems(text), "events[0].at", 15)
    assert "cannot be negative" in problem.message


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


# Parsing details -------------------------------------------------------------------------------


def _one_task(task_fields: str, app_fields: str = "", top: str = "") -> Scenario:
    return parse_scenario(
        HEADER.replace("{memory: 4Gi, vcore: 4}", "{memory: 64Gi, vcore: 16}")
        + top
        + f"""\
applications:
  - id: app1
    queue: a
{app_fields}    tasks:
      - {{name: t, {task_fields}}}
"""
    )


@pytest.mark.parametrize(
    ("resources", "expected"),
    [
        ("{memory: 2Gi}", {"memory": 2 * 2**30}),
        ("{memory: 512Mi}", {"memory": 512 * 2**20}),
        ("{memory: 1000}", {"memory": 1000}),
        ("{memory: 1G}", {"memory": 10**9}),
        ("{vcore: 500m}", {"vcore": 500}),
        ("{vcore: 1}", {"vcore": 1000}),
        ("{vcore: '1.5'}", {"vcore": 1500}),
        ("{memory: 1Gi, vcore: 2, nvidia.com/gpu: 1}", {"memory": 2**30, "vcore": 2000, "nvidia.com/gpu": 1}),
    ],
)
def test_quantities(resources: str, expected: dict[str, int]) -> None:
    node = "{memory: 64Gi, vcore: 16, nvidia.com/gpu: 4}"
    text = _after_queues(f"""\
nodes:
  - {{id: n1, resources: {node}}}
applications:
  - id: app1
    queue: a
    tasks:
      - {{name: t, duration: 1, resources: {resources}}}
""")
    assert parse_scenario(text).apps[0].tasks[0].resources.as_dict() == expected


@pytest.mark.parametrize(
    ("resources", "path", "words"),
    [
        ("{memory: lots}", "resources.memory", "not a quantity"),
        ("{vcore: 1m5}", "resources.vcore", "not a quantity"),
        ("{memory: 0}", "resources", "cannot be empty or zero"),
        ("{}", "resources", "cannot be empty or zero"),
    ],
)
def test_bad_quantities(resources: str, path: str, words: str) -> None:
    text = _after_header(f"""\
applications:
  - id: app1
    queue: a
    tasks:
      - {{name: t, duration: 1, resources: {resources}}}
""")
    problem = _at(_problems(text), f"applications[0].tasks[0].{path}", 17)
    assert words in problem.message


@pytest.mark.parametrize(
    ("duration", "seconds"),
    [("30", 30.0), ("30s", 30.0), ("'30s'", 30.0), ("1m30s", 90.0), ("500ms", 0.5), ("1.5", 1.5), ("0", 0.0),
     ("until stopped", None), ("Until Stopped", None)],
)  # fmt: skip
def test_durations(duration: str, seconds: float | None) -> None:
    task = _one_task(f"resources: {{memory: 1Gi}}, duration: {duration}").apps[0].tasks[0]
    assert task.duration == seconds


def test_task_arrival_is_relative_to_the_application_arrival() -> None:
    text = _after_header("""\
applications:
  - id: early
    queue: a
    tasks:
      - {name: now, duration: 1, resources: {memory: 1Gi}}
      - {name: later, duration: 1, resources: {memory: 1Gi}, arrival: 5s}
  - id: late
    queue: a
    arrival: 1m
    tasks:
      - {name: now, duration: 1, resources: {memory: 1Gi}}
      - {name: later, duration: 1, resources: {memory: 1Gi}, arrival: 5s}
""")
    s = parse_scenario(text)
    early, late = s.apps
    assert early.arrival == 0.0 and [g.arrival for g in early.tasks] == [0.0, 5.0]
    assert late.arrival == 60.0 and [g.arrival for g in late.tasks] == [60.0, 65.0]
    assert s.last_event_time() == 65.0
    assert [g.line for g in early.tasks] == [17, 18] and late.line == 19


def test_node_count_and_prefix_expand() -> None:
    text = _after_queues("""\
nodes:
  - count: 3
    prefix: worker
    resources: {memory: 8Gi, vcore: 4}
    attributes: {zone: a}
  - count: 2
    resources: {memory: 2Gi}
  - id: gpu-1
    resources: {memory: 64Gi, vcore: 16, nvidia.com/gpu: 4}
applications: []
""")
    s = parse_scenario(text)
    assert [n.node_id for n in s.nodes] == ["worker-1", "worker-2", "worker-3", "node-1", "node-2", "gpu-1"]
    assert s.nodes[0].resources.as_dict() == {"memory": 8 * GI, "vcore": 4000}
    assert s.nodes[0].attributes == (("zone", "a"),) and s.nodes[3].attributes == ()
    assert s.nodes[5].resources.as_dict() == {"memory": 64 * GI, "vcore": 16000, "nvidia.com/gpu": 4}


def test_a_node_entry_needs_an_id_or_a_count() -> None:
    text = QUEUES + "nodes:\n  - {prefix: x, resources: {memory: 1Gi}}\napplications: []\n"
    problem = _at(_problems(text), "nodes[0]", 12)
    assert "needs an id, or a count" in problem.message


def test_restart_defaults_to_true() -> None:
    assert _one_task("resources: {memory: 1Gi}, duration: 1").apps[0].restart is True
    assert _one_task("resources: {memory: 1Gi}, duration: 1", "    restart: false\n").apps[0].restart is False
    assert _one_task("resources: {memory: 1Gi}, duration: 1", "    restart: true\n").apps[0].restart is True


def test_restart_must_be_a_boolean() -> None:
    text = HEADER + "applications:\n  - id: app1\n    queue: a\n    restart: maybe\n    tasks: []\n"
    problem = _at(_problems(text), "applications[0].restart", 16)
    assert "true or false" in problem.message


def test_preemption_flags() -> None:
    default = _one_task("resources: {memory: 1Gi}, duration: 1").apps[0].tasks[0]
    assert default.allow_preempt_self and default.allow_preempt_other and not default.originator
    task = (
        _one_task(
            "resources: {memory: 1Gi}, duration: 1, originator: true, "
            "preemption: {allow_preempt_self: false, allow_preempt_other: true}"
        )
        .apps[0]
        .tasks[0]
    )
    assert task.allow_preempt_self is False and task.allow_preempt_other is True and task.originator is True
    task = (
        _one_task("resources: {memory: 1Gi}, duration: 1, preemption: {allow_preempt_other: false}")
        .apps[0]
        .tasks[0]
    )
    assert task.allow_preempt_self is True and task.allow_preempt_other is False


def test_an_unknown_preemption_flag() -> None:
    text = _after_header("""\
applications:
  - id: app1
    queue: a
    tasks:
      - name: t
        duration: 1
        resources: {memory: 1Gi}
        preemption: {allow_preempt_everyone: true}
""")
    problem = _at(_problems(text), "applications[0].tasks[0].preemption.allow_preempt_everyone", 20)
    assert "unknown key" in problem.message


def test_application_and_task_details() -> None:
    s = _one_task(
        "count: 3, priority: -5, resources: {memory: 1Gi}, duration: 1, tags: {kind: batch}",
        "    user: alice\n    groups: [analysts, dev]\n    tags: {namespace: team-a}\n",
        top="name: details\ndescription: some words\nend: 2m\n"
        "report: {resource: vcore, sample_interval: 250ms}\n",
    )
    assert (s.name, s.description, s.end, s.report_resource, s.sample_interval) == (
        "details", "some words", 120.0, "vcore", 0.25
    )  # fmt: skip
    app = s.apps[0]
    assert (app.user, app.groups, app.tags) == ("alice", ("analysts", "dev"), (("namespace", "team-a"),))
    group = app.tasks[0]
    assert (group.name, group.count, group.priority, group.tags) == ("t", 3, -5, (("kind", "batch"),))
    assert s.task_count() == 3


def test_defaults() -> None:
    s = _one_task("resources: {memory: 1Gi}, duration: 1")
    assert (s.name, s.description, s.end, s.speed, s.report_resource, s.sample_interval) == (
        "scenario", "", None, 1.0, "memory", 0.5
    )  # fmt: skip
    app = s.apps[0]
    assert (app.user, app.groups, app.arrival) == ("nobody", (), 0.0)
    task = app.tasks[0]
    assert (task.count, task.priority, task.arrival) == (1, 0, 0.0)


def test_task_names_default_to_their_index() -> None:
    text = _after_header("""\
applications:
  - id: app1
    queue: a
    tasks:
      - {duration: 1, resources: {memory: 1Gi}}
      - {duration: 1, resources: {memory: 1Gi}}
""")
    assert [g.name for g in parse_scenario(text).apps[0].tasks] == ["task0", "task1"]


def test_a_priority_beyond_int32() -> None:
    text = _after_header("""\
applications:
  - id: app1
    queue: a
    tasks:
      - {duration: 1, resources: {memory: 1Gi}, priority: 2147483648}
""")
    problem = _at(_problems(text), "applications[0].tasks[0].priority", 17)
    assert "32-bit" in problem.message


def test_application_queues_are_qualified_and_case_insensitive() -> None:
    text = _after_header("""\
applications:
  - {id: one, queue: a, tasks: []}
  - {id: two, queue: root.A, tasks: []}
  - {id: three, queue: P.C, tasks: []}
""")
    assert [a.queue for a in parse_scenario(text).apps] == ["root.a", "root.a", "root.p.c"]


def test_expectation_parameters() -> None:
    text = _after_header("""\
applications:
  - id: app1
    queue: p.c
    tasks: []
report: {resource: vcore}
expect:
  - every_task_ran: true
  - every_task_finished: false
  - queue_usage_at_most: {queue: p, value: 2, after: 1m, before: 90}
  - queue_usage_at_least: {queue: root.p.c, resource: vcore, value: 500m}
  - preempted: {app: app1, at_least: 2}
  - not_preempted: {task: app1/t-000}
  - wait_p99_at_most: {queue: p.c, seconds: 1500ms}
  - no_rejections: true
""")
    s = parse_scenario(text)
    got = [(e.kind, e.params, e.line) for e in s.expectations]
    assert got == [
        ("every_task_ran", {}, 19),
        # every_task_finished: false turns the expectation off
        ("queue_usage_at_most",
         {"queue": "root.p", "value": 2000, "after": 60.0, "before": 90.0, "resource": "vcore"}, 21),
        ("queue_usage_at_least", {"queue": "root.p.c", "resource": "vcore", "value": 500}, 22),
        ("preempted", {"app": "app1", "at_least": 2}, 23),
        ("not_preempted", {"task": "app1/t-000"}, 24),
        ("wait_p99_at_most", {"queue": "root.p.c", "seconds": 1.5}, 25),
        ("no_rejections", {}, 26),
    ]  # fmt: skip
    assert s.expectations[1].describe() == (
        "queue_usage_at_most(queue=root.p, value=2, after=60s, before=90s, resource=vcore)"
    )
    described = s.expectations[2].describe()
    assert described == "queue_usage_at_least(queue=root.p.c, resource=vcore, value=0.5)"


def test_a_usage_expectation_in_another_resource_than_the_report_is_refused() -> None:
    text = _after_header("""\
applications:
  - id: app1
    queue: p.c
    tasks: []
report: {resource: vcore}
expect:
  - queue_usage_at_least: {queue: root.p.c, resource: memory, value: 1Gi}
""")
    with pytest.raises(ScenarioError) as err:
        parse_scenario(text)
    [problem] = err.value.problems
    assert problem.path == "expect[0].queue_usage_at_least.resource"
    assert "usage is recorded for vcore; set report.resource: memory" in problem.message


def test_a_usage_value_without_a_resource_is_in_the_report_resource() -> None:
    """`value: 4` in a vcore scenario means 4 cores, as the check compares it with vcore usage."""
    text = _after_header("""\
report: {resource: vcore}
applications: []
expect:
  - queue_usage_at_most: {queue: a, value: 4}
""")
    [e] = parse_scenario(text).expectations
    assert e.params["value"] == 4000 and e.params["resource"] == "vcore"
    assert "value=4," in e.describe()


def test_config_changes_and_node_events_are_sorted_by_time(tmp_path: Path) -> None:
    (tmp_path / "q.yaml").write_text("partitions:\n  - name: default\n    queues:\n      - name: root\n")
    text = _after_header("""\
applications: []
events:
  - at: 20s
    node: {action: undrain, id: n1}
  - at: 10s
    node: {action: drain, ids: [n1]}
  - at: 30s
    queues_file: q.yaml
  - at: 15s
    queues: |
      partitions:
        - name: default
          queues:
            - name: root
""")
    s = parse_scenario(text, base_dir=tmp_path)
    assert [(e.at, e.action) for e in s.node_events] == [(10.0, "drain"), (20.0, "undrain")]
    assert [(c.at, c.line) for c in s.config_changes] == [(15.0, 21), (30.0, 19)]  # the "- at:" lines
    assert s.node_events[0].nodes[0].node_id == "n1"


def test_an_event_is_exactly_one_thing() -> None:
    text = _after_header("""\
applications: []
events:
  - at: 5s
    node: {action: drain, id: n1}
    queues_file: q.yaml
  - node: {action: drain, id: n1}
""")
    problems = _problems(text)
    assert "exactly one of" in _at(problems, "events[0]", 15).message
    assert "needs a time" in _at(problems, "events[1].at", 18).message
