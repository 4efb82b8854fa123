"""Scenario parsing details: quantities, durations, arrivals, nodes, defaults, expectations, events."""

from __future__ import annotations

from pathlib import Path

import pytest

from shim_fake.scenario import Scenario, ScenarioError
from tests.fake_scenarios import parse_scenario
from tests.unit.scenario_helpers import GI, HEADER, QUEUES, _after_header, _after_queues, _at, _problems

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
        ("{vcore: '1500m'}", {"vcore": 1500}),
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
