"""Scenario loading: every file in examples/ loads as expected, and the demo in detail."""

from __future__ import annotations

from pathlib import Path

import pytest

from core.config import load_config
from shim_fake.scenario import Scenario
from tests.fake_scenarios import load_scenario, queue_limits
from tests.unit.scenario_helpers import GI

REPO = Path(__file__).resolve().parents[2]
EXAMPLES = REPO / "examples"


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
            "train": ("root.ml", 45.0, [("worker", 4, 20.0)]),
        },
        4, [], [30.0],
        ["every_task_ran", "gang_ran_whole", "no_rejections", "wait_p99_at_most", "preempted",
         "not_preempted", "preempted", "queue_usage_at_most"],
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
    "placement-constraints.yaml": (
        {
            "web": ("root.apps", 0.0, [("web", 6, 20.0)]),
            "cache": ("root.apps", 0.0, [("cache", 4, 20.0)]),
            "workers": ("root.apps", 0.0, [("worker", 9, 20.0)]),
        },
        6, [], [],
        ["every_task_ran", "no_rejections"],
        "memory",
    ),
    "user-limits.yaml": (
        {
            "ann-job": ("root.shared", 0.0, [("t", 12, 6.0)]),
            "ben-job": ("root.shared", 0.0, [("t", 12, 6.0)]),
            "carl-job": ("root.shared", 0.0, [("t", 9, 6.0)]),
            "dana-job": ("root.shared", 0.0, [("t", 9, 6.0)]),
            "alice-first": ("root.shared", 0.0, [("t", 8, 6.0)]),
            "alice-second": ("root.shared", 1.0, [("t", 4, 6.0)]),
        },
        6, [], [],
        ["every_task_finished", "no_rejections", "queue_usage_at_most", "queue_usage_at_least"],
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
    assert agent.line == 47
    worker = apps["t1-batch"].tasks[0]
    assert worker.resources.as_dict() == {"memory": 2 * GI, "vcore": 1000}
    assert worker.duration == 20.0
    assert apps["t1-batch"].line == 68
    # Tasks arrive with their application.
    assert apps["t1-interactive"].tasks[0].arrival == 15.0
    assert apps["t2-etl"].tasks[0].arrival == 2.0
    assert s.task_count() == 82
    # The inline configuration is dedented queues.yaml text.
    assert s.config.startswith("partitions:")
    before = queue_limits(s.config)
    assert before["root.tenant2"].max == {"memory": 40 * GI, "vcore": 20000}
    # At 30s tenant2's max goes from 40Gi to 16Gi.
    [change] = s.config_changes
    assert change.at == 30.0 and change.line == 93
    after = queue_limits(change.config)
    assert after["root.tenant2"].max == {"memory": 16 * GI, "vcore": 8000}
    assert after["root.tenant2"].guaranteed == {"memory": 8 * GI, "vcore": 4000}
    assert after["root.tenant1"].max == before["root.tenant1"].max
    assert s.last_event_time() == 45.0  # the training gang arrives last
    # Eight expectations, parsed.
    assert len(s.expectations) == 8
    ran, whole, rejections, wait, preempted, spared, quota_cut, usage = s.expectations
    assert (ran.kind, ran.params, ran.line) == ("every_task_ran", {}, 120)
    assert (whole.kind, whole.params) == ("gang_ran_whole", {"app": "train"})
    assert (rejections.kind, rejections.line) == ("no_rejections", 122)
    assert (quota_cut.kind, quota_cut.params) == ("preempted", {"app": "t2-etl", "at_least": 1})
    assert wait.params == {"queue": "root.system", "seconds": 3.0}
    assert (preempted.kind, preempted.params) == ("preempted", {"app": "t1-batch", "at_least": 1})
    assert (spared.kind, spared.params) == ("not_preempted", {"app": "system-agents"})
    assert usage.kind == "queue_usage_at_most" and usage.line == 129
    assert usage.params["queue"] == "root.tenant2"
    assert usage.params["value"] == 16 * GI
    assert usage.params["after"] == 41.0
    assert "before" not in usage.params
    assert "value=16.0Gi" in usage.describe() and "after=41s" in usage.describe()
