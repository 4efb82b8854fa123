"""Recording, expectations and the report, on a recording built by hand (no core, no clock).

The scenario has leaves root.a and root.p.c (under root.p); usage is sampled at t=0..3:

    t   running                       root.a   root.p / root.p.c
    0   -                             0        0
    1   app-a/t-000, t-001, app-c/u   4Gi      4Gi
    2   app-a/t-000                   2Gi      0
    3   -                             0        0
"""

from __future__ import annotations

import io
import json
from typing import Any

import pytest

from shim_fake.scenario import Scenario
from shim_fake.scenario.expectations import Outcome, check
from shim_fake.scenario.loader.expectations import EXPECTATIONS
from shim_fake.scenario.model import Expectation, ExpectKind, ExpectParam, Task, TaskGroup, TaskState
from shim_fake.scenario.recording import Recording, percentile
from shim_fake.scenario.report import build_report, write_summary
from shim_fake.scenario.resource import Resource
from shim_fake.scenario.units import GiB, MiB, fmt_quantity
from tests.fake_scenarios import parse_scenario, queue_limits

GI = 2**30

CONFIG = """\
partitions:
  - name: default
    queues:
      - name: root
        queues:
          - name: a
            resources: {guaranteed: {memory: 2Gi, vcore: 2}, max: {memory: 8Gi, vcore: 8}}
          - name: p
            resources: {max: {memory: 40Gi, vcore: 20}}
            queues:
              - name: c
"""

# The same, with root.p's max lowered to 16Gi and a guarantee for it.
P_BEFORE, P_AFTER = "{max: {memory: 40Gi, vcore: 20}}", "{guaranteed: {memory: 4Gi}, max: {memory: 16Gi}}"
LOWERED = CONFIG.replace(P_BEFORE, P_AFTER)

SCENARIO = f"""\
name: hand-made
description: built by hand for the report tests
queues: |
{"".join("  " + line + chr(10) for line in CONFIG.splitlines())}\
nodes:
  - {{count: 2, resources: {{memory: 16Gi, vcore: 8}}}}
applications:
  - id: app-a
    queue: a
    tasks:
      - {{name: t, count: 2, resources: {{memory: 2Gi, vcore: 1}}, duration: 10s}}
  - id: app-c
    queue: p.c
    tasks:
      - {{name: u, count: 1, resources: {{memory: 4Gi, vcore: 2}}, duration: 5s}}
"""


@pytest.fixture
def scenario() -> Scenario:
    return parse_scenario(SCENARIO)


def _tasks(scenario: Scenario) -> dict[str, Task]:
    out = {}
    for app in scenario.apps:
        for group in app.tasks:
            for i in range(group.count):
                task = Task(app, group, f"{group.name}-{i:03d}")
                out[task.ident] = task
    return out


def _run(task: Task, wait: float) -> None:
    """What the runner does when the core allocates a task."""
    task.state = TaskState.RUNNING
    task.ran = True
    task.waits.append(wait)


def _recording(scenario: Scenario) -> tuple[Recording, dict[str, Task]]:
    """The run in the module docstring: every task runs and finishes; app-a/t-001 was preempted once."""
    rec = Recording(scenario)
    tasks = _tasks(scenario)
    a0, a1, c0 = tasks["app-a/t-000"], tasks["app-a/t-001"], tasks["app-c/u-000"]
    rec.sample(0.0, [])
    for task, wait in ((a0, 0.5), (a1, 1.0), (c0, 2.0)):
        _run(task, wait)
        rec.allocated(1.0, task)
    rec.sample(1.0, [a0, a1, c0])
    a1.state = TaskState.STOPPED
    a1.preemptions += 1
    rec.preempted(1.5, a1, "preempted to make room")
    c0.state = TaskState.DONE
    rec.sample(2.0, [a0])
    _run(a1, 0.25)  # restarted
    rec.allocated(2.5, a1)
    for task in (a0, a1):
        task.state = TaskState.DONE
    rec.sample(3.0, [])
    rec.finish(3.0, list(tasks.values()))
    return rec, tasks


# The recording ---------------------------------------------------------------------------------


def test_the_recorded_queues_are_the_apps_queues_and_their_parents_below_root(scenario: Scenario) -> None:
    rec = Recording(scenario)
    assert rec.queues == ["root.a", "root.p", "root.p.c"]
    assert rec.resource == "memory"


def test_usage_is_summed_up_the_queue_path(scenario: Scenario) -> None:
    rec, _ = _recording(scenario)
    assert [t for t, _ in rec.samples] == [0.0, 1.0, 2.0, 3.0]
    assert rec.usage_of("root.a") == [0, 4 * GI, 2 * GI, 0]
    assert rec.usage_of("root.p") == rec.usage_of("root.p.c") == [0, 4 * GI, 0, 0]
    assert rec.usage_of("root.a", after=1.0, before=2.0) == [4 * GI, 2 * GI]
    assert rec.usage_of("root.a", after=2.5) == [0]


def test_queue_summary(scenario: Scenario) -> None:
    rec, _ = _recording(scenario)
    a = rec.queue_summary("root.a")
    assert a["usage"] == {"resource": "memory", "min": 0, "mean": 1.5 * GI, "max": 4 * GI}
    assert a["guaranteed"] == {"memory": 2 * GI, "vcore": 2000}
    assert a["max"] == {"memory": 8 * GI, "vcore": 8000}
    assert a["allocations"] == 3 and a["preemptions"] == 1
    assert a["wait_p50"] == 0.5 and a["wait_p99"] == 1.0  # waits 0.5, 1.0, 0.25
    p = rec.queue_summary("root.p")
    assert p["usage"] == {"resource": "memory", "min": 0, "mean": 1 * GI, "max": 4 * GI}
    assert p["guaranteed"] == {} and p["max"] == {"memory": 40 * GI, "vcore": 20000}
    assert p["allocations"] == 1 and p["preemptions"] == 0
    assert p["wait_p50"] == p["wait_p99"] == 2.0
    assert rec.queue_summary("root.p.c")["max"] == {}


def test_queue_summary_without_samples_or_waits(scenario: Scenario) -> None:
    summary = Recording(scenario).queue_summary("root.a")
    assert summary["usage"] == {"resource": "memory", "min": 0, "mean": 0, "max": 0}
    assert summary["wait_p50"] is None and summary["wait_p99"] is None
    assert summary["allocations"] == 0


def test_the_wait_percentiles_over_many_waits(scenario: Scenario) -> None:
    rec = Recording(scenario)
    rec.waits["root.a"] = [float(w) for w in range(100, 0, -1)]  # 1..100, in any order
    summary = rec.queue_summary("root.a")
    assert summary["wait_p99"] == 99.0
    assert summary["wait_p50"] in (50.0, 51.0)  # a middle value


@pytest.mark.parametrize(
    ("values", "fraction", "expected"),
    [
        ([], 0.5, None),
        ([7.0], 0.99, 7.0),
        ([3.0, 1.0, 2.0], 0.5, 2.0),
        ([3.0, 1.0, 2.0], 0.0, 1.0),
        ([3.0, 1.0, 2.0], 1.0, 3.0),
        ([float(v) for v in range(1, 11)], 0.99, 10.0),
        ([float(v) for v in range(1, 101)], 0.99, 99.0),
        ([float(v) for v in range(1, 102)], 0.5, 51.0),
        ([5.0, 5.0, 1.0], 0.99, 5.0),
    ],
)
def test_percentile(values: list[float], fraction: float, expected: float | None) -> None:
    assert percentile(values, fraction) == expected


def test_percentile_does_not_reorder_its_input() -> None:
    values = [3.0, 1.0, 2.0]
    percentile(values, 0.5)
    assert values == [3.0, 1.0, 2.0]


def test_queue_limits_reads_every_queue() -> None:
    limits = queue_limits(CONFIG)
    assert set(limits) == {"root", "root.a", "root.p", "root.p.c"}
    assert limits["root.a"].guaranteed == {"memory": 2 * GI, "vcore": 2000}
    assert limits["root"].max == {}


def test_limit_history_after_an_accepted_config_change(scenario: Scenario) -> None:
    rec = Recording(scenario)
    rec.config_change(2.0, LOWERED, accepted=True, errors=[])
    rec.finish(5.0, [])
    assert [at for at, _ in rec.limits_timeline] == [0.0, 2.0]
    assert rec.limits_at(1.9)["root.p"].max == {"memory": 40 * GI, "vcore": 20000}
    assert rec.limits_at(2.0)["root.p"].max == {"memory": 16 * GI}
    summary = rec.queue_summary("root.p")
    assert summary["max_history"] == [{"memory": 40 * GI, "vcore": 20000}, {"memory": 16 * GI}]
    assert summary["guaranteed_history"] == [{}, {"memory": 4 * GI}]
    assert summary["max"] == {"memory": 16 * GI}  # as at the end
    assert rec.queue_summary("root.a")["max_history"] == [{"memory": 8 * GI, "vcore": 8000}] * 2
    assert rec.events == [{"t": 2.0, "kind": "config", "accepted": True, "errors": []}]


def test_no_limit_history_after_a_rejected_config_change(scenario: Scenario) -> None:
    rec = Recording(scenario)
    rec.config_change(2.0, LOWERED, accepted=False, errors=["no, thanks"])
    rec.finish(5.0, [])
    assert len(rec.limits_timeline) == 1
    summary = rec.queue_summary("root.p")
    assert summary["max_history"] == [{"memory": 40 * GI, "vcore": 20000}]
    assert summary["max"] == {"memory": 40 * GI, "vcore": 20000}
    assert rec.events == [{"t": 2.0, "kind": "config", "accepted": False, "errors": ["no, thanks"]}]


def test_events(scenario: Scenario) -> None:
    rec, tasks = _recording(scenario)
    rec.lost(2.7, tasks["app-c/u-000"], "Node node-2 Removed")
    rec.node_event(2.6, "decommission", ["node-2"])
    rec.rejection(2.8, "allocation app-a/t-009", "too big")
    assert rec.events == [
        {"t": 1.5, "kind": "preempted", "task": "app-a/t-001", "queue": "root.a",
         "message": "preempted to make room"},
        {"t": 2.7, "kind": "lost", "task": "app-c/u-000", "message": "Node node-2 Removed"},
        {"t": 2.6, "kind": "node decommission", "nodes": ["node-2"]},
    ]  # fmt: skip
    assert rec.rejections == [{"t": 2.8, "what": "allocation app-a/t-009", "reason": "too big"}]


def test_task_summary(scenario: Scenario) -> None:
    rec, tasks = _recording(scenario)
    assert rec.task_summary() == {"total": 3, "ran": 3, "finished": 3, "preempted": 1, "lost_with_node": 0,
                                  "never_ran": 0}  # fmt: skip
    tasks["app-c/u-000"].lost = 1
    tasks["app-c/u-000"].state = TaskState.STOPPED
    tasks["app-a/t-001"].ran = False
    assert rec.task_summary() == {"total": 3, "ran": 2, "finished": 2, "preempted": 1, "lost_with_node": 1,
                                  "never_ran": 1}  # fmt: skip


# Expectations ----------------------------------------------------------------------------------


def _one(rec: Recording, kind: str, **params: ExpectParam) -> Outcome:
    [outcome] = check((Expectation(ExpectKind(kind), params, line=7),), rec)
    assert outcome.detail and "\n" not in outcome.detail
    return outcome


# kind -> (params, met?, words in the detail), each kind both met and unmet, on the recording above.
CASES: list[tuple[str, dict[str, ExpectParam], bool, str]] = [
    ("every_task_ran", {}, True, "all 3 tasks ran"),
    ("every_task_finished", {}, True, "all finished"),
    ("queue_usage_at_most", {"queue": "root.a", "value": 4 * GI}, True,
     "root.a peaked at 4.0Gi after 0s (limit 4.0Gi)"),
    ("queue_usage_at_most", {"queue": "root.a", "value": 3 * GI}, False,
     "root.a peaked at 4.0Gi after 0s (limit 3.0Gi)"),
    ("queue_usage_at_most", {"queue": "root.a", "value": 2 * GI, "after": 2.0}, True,
     "peaked at 2.0Gi after 2s (limit 2.0Gi)"),
    ("queue_usage_at_most", {"queue": "root.a", "value": 2 * GI, "before": 1.0}, False,
     "peaked at 4.0Gi after 0s and before 1s (limit 2.0Gi)"),
    ("queue_usage_at_most", {"queue": "root.a", "value": 0, "before": 0.5}, True,
     "peaked at 0.0Gi after 0s and before 0.5s"),
    ("queue_usage_at_least", {"queue": "root.a", "value": 2 * GI, "after": 1.0, "before": 2.0}, True,
     "root.a dropped to 2.0Gi after 1s and before 2s (floor 2.0Gi)"),
    ("queue_usage_at_least", {"queue": "root.a", "value": 2 * GI, "after": 1.0, "before": 3.0}, False,
     "root.a dropped to 0.0Gi after 1s and before 3s (floor 2.0Gi)"),
    ("queue_usage_at_least", {"queue": "root.p", "value": 4 * GI, "after": 0.5, "before": 1.5}, True,
     "root.p dropped to 4.0Gi"),
    ("queue_usage_at_least", {"queue": "root.p", "value": 1, "after": 10.0}, False,
     "no samples of root.p after 10s"),
    ("queue_usage_at_most", {"queue": "root.a", "value": 8000, "resource": "vcore"}, False,
     "usage is recorded for memory; set report.resource: vcore"),
    ("preempted", {}, True, "1 preemption(s) of any task"),
    ("preempted", {"app": "app-a"}, True, "1 preemption(s) of app-a"),
    ("preempted", {"task": "app-a/t-001"}, True, "1 preemption(s) of app-a/t-001"),
    ("preempted", {"task": "app-a/t-000"}, False, "0 preemption(s) of app-a/t-000"),
    ("preempted", {"app": "app-a", "at_least": 2}, False, "1 preemption(s) of app-a"),
    ("preempted", {"app": "app-c", "at_least": 0}, True, "0 preemption(s) of app-c"),
    ("not_preempted", {"app": "app-c"}, True, "0 preemption(s) of app-c"),
    ("not_preempted", {"task": "app-a/t-001"}, False, "1 preemption(s) of app-a/t-001"),
    ("not_preempted", {}, False, "1 preemption(s) of any task"),
    ("wait_p99_at_most", {"queue": "root.a", "seconds": 1.0}, True,
     "wait p99 in root.a was 1.00s (limit 1s)"),
    ("wait_p99_at_most", {"queue": "root.p.c", "seconds": 1.5}, False,
     "wait p99 in root.p.c was 2.00s (limit 1.5s)"),
    ("wait_p99_at_most", {"queue": "root.x", "seconds": 1.0}, False, "no allocation in root.x"),
    ("no_rejections", {}, True, "0 rejection(s)"),
]  # fmt: skip


def _gang_recording(scenario: Scenario, replaced: bool) -> Recording:
    """The run above, with two placeholders of app-a that were (or were not) replaced."""
    rec, tasks = _recording(scenario)
    app = tasks["app-a/t-000"].app
    group = TaskGroup("ph-workers", 2, Resource({"memory": GI}), duration=None, task_group="workers",
                      placeholder=True)  # fmt: skip
    placeholders = [Task(app, group, f"ph-workers-{i:03d}", ran=True, replaced=replaced) for i in range(2)]
    rec.finish(3.0, list(tasks.values()) + placeholders)
    return rec


# gang_ran_whole of app-a: (placeholders replaced?, met?, words in the detail)
GANG_CASES = [
    (True, True, "2 of 2 placeholders replaced, 2 of 2 real tasks ran"),
    (False, False, "0 of 2 placeholders replaced, 2 of 2 real tasks ran"),
]


@pytest.mark.parametrize(("replaced", "met", "words"), GANG_CASES)
def test_gang_ran_whole(scenario: Scenario, replaced: bool, met: bool, words: str) -> None:
    rec = _gang_recording(scenario, replaced)
    outcome = _one(rec, "gang_ran_whole", app="app-a")
    assert (outcome.met, outcome.detail) == (met, words)
    assert rec.task_summary()["total"] == 3  # placeholders are not the scenario's tasks
    assert rec.gang_summary() == {"app-a": {"placeholders": 2, "allocated": 2, "replaced": 2 * replaced}}
    assert not _one(rec, "gang_ran_whole", app="app-c").met  # no gang at all


def test_every_kind_is_checked_both_met_and_unmet() -> None:
    covered = {(kind, met) for kind, _, met, _ in CASES}
    covered |= {(kind, met) for kind, met, _ in UNMET_AFTER_CHANGES}
    covered |= {("gang_ran_whole", met) for _, met, _ in GANG_CASES}
    assert covered == {(kind, met) for kind in EXPECTATIONS for met in (True, False)}


@pytest.mark.parametrize(("kind", "params", "met", "words"), CASES)
def test_expectation(
    scenario: Scenario, kind: str, params: dict[str, ExpectParam], met: bool, words: str
) -> None:
    rec, _ = _recording(scenario)
    outcome = _one(rec, kind, **params)
    assert outcome.met is met, outcome.detail
    assert words in outcome.detail


def _changed(rec: Recording, tasks: dict[str, Task]) -> None:
    """Spoil the run: one task never ran, one did not finish, the core rejected something."""
    tasks["app-c/u-000"].ran = False
    tasks["app-c/u-000"].state = TaskState.REJECTED
    tasks["app-a/t-000"].state = TaskState.STOPPED
    rec.rejection(2.0, "allocation app-c/u-000", "queue full")


# kind, met, words: on the spoiled recording
UNMET_AFTER_CHANGES = [
    ("every_task_ran", False, "1 task(s) never ran: app-c/u-000"),
    ("every_task_finished", False, "2 task(s) did not finish"),
    ("no_rejections", False, "1 rejection(s)"),
]


@pytest.mark.parametrize(("kind", "met", "words"), UNMET_AFTER_CHANGES)
def test_expectation_unmet_on_a_spoiled_run(scenario: Scenario, kind: str, met: bool, words: str) -> None:
    rec, tasks = _recording(scenario)
    _changed(rec, tasks)
    outcome = _one(rec, kind)
    assert outcome.met is met and words in outcome.detail


def test_never_ran_lists_at_most_five(scenario: Scenario) -> None:
    rec = Recording(scenario)
    app = scenario.apps[0]
    rec.finish(0.0, [Task(app, app.tasks[0], f"t-{i:03d}") for i in range(7)])
    outcome = _one(rec, "every_task_ran")
    assert not outcome.met
    assert outcome.detail == "7 task(s) never ran: " + ", ".join(f"app-a/t-{i:03d}" for i in range(5))


def test_an_unknown_kind_cannot_be_expected() -> None:
    """Kinds are an enum: an unknown one is refused when named (the loader reports it with its line,
    see test_scenario_mistakes), so no expectation goes unchecked."""
    with pytest.raises(ValueError, match="'finished_quickly' is not a valid ExpectKind"):
        ExpectKind("finished_quickly")


def test_usage_expectations_in_another_resource() -> None:
    rec = Recording(parse_scenario(SCENARIO + "report: {resource: vcore}\n"))
    tasks = _tasks(rec.scenario)
    rec.sample(1.0, [tasks["app-a/t-000"], tasks["app-c/u-000"]])
    assert rec.usage_of("root.a") == [1000] and rec.usage_of("root.p") == [2000]
    assert _one(rec, "queue_usage_at_most", queue="root.p", value=2000, resource="vcore").met
    outcome = _one(rec, "queue_usage_at_least", queue="root.a", value=1500)  # resource from the report
    assert not outcome.met and outcome.detail == "root.a dropped to 1 after 0s (floor 1.5)"


EXPECT = """\
expect:
  - queue_usage_at_most: {queue: a, value: 4Gi, after: 1s, before: 2s}
  - queue_usage_at_least: {queue: a, value: 2Gi, after: 1s, before: 2s}
  - preempted: {app: app-a, at_least: 1}
  - wait_p99_at_most: {queue: p.c, seconds: 2s}
  - every_task_finished: true
"""


def test_expectations_as_loaded_are_checked(scenario: Scenario) -> None:
    """From the file to the outcome: the loader's params are what the checks read."""
    loaded = parse_scenario(SCENARIO + EXPECT)
    rec, _ = _recording(scenario)
    outcomes = check(loaded.expectations, rec)
    assert [o.met for o in outcomes] == [True] * 5, [o.detail for o in outcomes]
    assert outcomes[0].as_dict() == {
        "expect": "queue_usage_at_most(queue=root.a, value=4.0Gi, after=1s, before=2s, resource=memory)",
        "met": True,
        "detail": "root.a peaked at 4.0Gi after 1s and before 2s (limit 4.0Gi)",
        "line": loaded.expectations[0].line,
    }


# The report ------------------------------------------------------------------------------------

REPORT_KEYS = {
    "scenario", "description", "speed", "scenario_seconds", "real_seconds", "resource", "tasks", "queues",
    "expectations", "all_expectations_met", "events", "rejections", "timeline", "gangs", "placements",
}  # fmt: skip
QUEUE_KEYS = {"guaranteed", "max", "guaranteed_history", "max_history", "usage", "allocations", "preemptions",
              "wait_p50", "wait_p99"}  # fmt: skip


def _report(scenario: Scenario, expectations: tuple[Expectation, ...]) -> tuple[dict[str, Any], str]:
    rec, _ = _recording(scenario)
    rec.config_change(2.0, LOWERED, accepted=True, errors=[])
    rec.rejection(2.2, "allocation app-a/t-009", "too big")
    outcomes = check(expectations, rec)
    report = build_report(rec, outcomes, speed=4.0, real_seconds=0.87654)
    out = io.StringIO()
    write_summary(report, out)
    return report, out.getvalue()


EXPECTED_OUTCOMES = (
    Expectation(ExpectKind.EVERY_TASK_RAN, {}, line=30),
    Expectation(
        ExpectKind.QUEUE_USAGE_AT_MOST, {"queue": "root.p", "value": 2 * GI, "resource": "memory"}, line=31
    ),
    Expectation(ExpectKind.NO_REJECTIONS, {}, line=32),
)


def test_build_report(scenario: Scenario) -> None:
    report, _ = _report(scenario, EXPECTED_OUTCOMES)
    assert set(report) == REPORT_KEYS
    json.loads(json.dumps(report))  # plain JSON all the way down
    assert report["scenario"] == "hand-made" and report["description"] == "built by hand for the report tests"
    assert report["speed"] == 4.0 and report["scenario_seconds"] == 3.0 and report["real_seconds"] == 0.877
    assert report["resource"] == "memory"
    assert report["tasks"]["total"] == 3
    assert list(report["queues"]) == ["root.a", "root.p", "root.p.c"]
    for summary in report["queues"].values():
        assert set(summary) == QUEUE_KEYS
    assert report["queues"]["root.p"]["max_history"] == [
        {"memory": 40 * GI, "vcore": 20000},
        {"memory": 16 * GI},
    ]
    assert report["expectations"] == [
        {"expect": "every_task_ran", "met": True, "detail": "all 3 tasks ran", "line": 30},
        {"expect": "queue_usage_at_most(queue=root.p, value=2.0Gi, resource=memory)", "met": False,
         "detail": "root.p peaked at 4.0Gi after 0s (limit 2.0Gi)", "line": 31},
        {"expect": "no_rejections", "met": False, "detail": "1 rejection(s)", "line": 32},
    ]  # fmt: skip
    assert report["all_expectations_met"] is False
    assert [e["kind"] for e in report["events"]] == ["preempted", "config"]
    assert report["rejections"] == [{"t": 2.2, "what": "allocation app-a/t-009", "reason": "too big"}]
    timeline = report["timeline"]
    assert [s["t"] for s in timeline] == [0.0, 1.0, 2.0, 3.0]
    assert timeline[1]["usage"] == {"root.a": 4 * GI, "root.p": 4 * GI, "root.p.c": 4 * GI}


def test_all_expectations_met_without_expectations(scenario: Scenario) -> None:
    report, text = _report(scenario, ())
    assert report["all_expectations_met"] is True and report["expectations"] == []
    assert "expectations:" not in text


def test_write_summary(scenario: Scenario) -> None:
    _, text = _report(scenario, EXPECTED_OUTCOMES)
    lines = text.splitlines()
    assert "scenario hand-made: 3.0s of scenario time at speed 4 (0.9s real)" in text
    assert "tasks: 3 total, 3 ran, 3 finished, 1 preempted, 0 lost with a node, 0 never ran" in text
    [header_at] = [i for i, line in enumerate(lines) if line.startswith("queue ")]
    header = lines[header_at]
    for column in ("guaranteed", "max", "usage min / mean / max (memory)", "allocs", "preempted", "wait p50",
                   "wait p99"):  # fmt: skip
        assert column in header
    assert set(lines[header_at + 1].replace(" ", "")) == {"-"}
    rows = lines[header_at + 2 : header_at + 5]
    assert [row.split()[0] for row in rows] == ["root.a", "root.p", "root.p.c"]
    assert all(len(row) == len(header) for row in rows)  # the columns line up
    assert lines[header_at + 5] == ""  # one row per queue, then the rest
    a, p, c = rows
    assert a.split() == ["root.a", "2.0Gi", "8.0Gi", "0.0Gi", "/", "1.5Gi", "/", "4.0Gi", "3", "1", "0.50s",
                         "1.00s"]  # fmt: skip
    assert p.split() == ["root.p", "-→4.0Gi", "40.0Gi→16.0Gi", "0.0Gi", "/", "1.0Gi", "/", "4.0Gi", "1", "0",
                         "2.00s", "2.00s"]  # fmt: skip
    assert c.split()[1:3] == ["-", "-"]
    assert "1 rejection(s) from the core:\n  t=2.2s allocation app-a/t-009: too big" in text
    assert "expectations: 1 of 3 met" in text
    assert "  ok   every_task_ran (line 30): all 3 tasks ran" in lines
    assert ("  FAIL queue_usage_at_most(queue=root.p, value=2.0Gi, resource=memory) (line 31): "
            "root.p peaked at 4.0Gi after 0s (limit 2.0Gi)") in lines  # fmt: skip
    assert "  FAIL no_rejections (line 32): 1 rejection(s)" in lines
    assert sum(1 for line in lines if "FAIL" in line) == 2


def test_write_summary_without_waits_or_rejections(scenario: Scenario) -> None:
    rec = Recording(scenario)
    rec.finish(0.0, [])
    out = io.StringIO()
    write_summary(build_report(rec, [], 1.0, 0.0), out)
    text = out.getvalue()
    assert "rejection" not in text
    row = next(line for line in text.splitlines() if line.startswith("root.a"))
    assert row.split()[-2:] == ["-", "-"]


# Units -----------------------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("resource", "value", "text"),
    [
        ("memory", 0, "0.0Gi"),
        ("memory", 16 * GiB, "16.0Gi"),
        ("memory", 1.5 * GiB, "1.5Gi"),
        ("memory", 512 * MiB, "0.5Gi"),
        ("memory", 102 * MiB, "102Mi"),  # below a tenth of a Gi
        ("memory", 103 * MiB, "0.1Gi"),
        ("memory", 50 * MiB, "50Mi"),
        ("memory", 1, "0Mi"),
        ("vcore", 500, "0.5"),
        ("vcore", 1000, "1"),
        ("vcore", 16000, "16"),
        ("vcore", 0, "0"),
        ("nvidia.com/gpu", 4, "4"),
        ("pods", 2.5, "2.5"),
        ("memory", None, "-"),
        ("vcore", None, "-"),
    ],
)
def test_fmt_quantity(resource: str, value: float | None, text: str) -> None:
    assert fmt_quantity(resource, value) == text
