"""Scenarios through the real CLI (`pykorn fake run`), against real core processes, checked in the
JSON report: the demo behind `make run`, node events against an already running core, an unmet
expectation, and scenarios with mistakes that must fail before anything starts."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]
EXAMPLES = ROOT / "examples"


def _run(*args: str, timeout: float = 150) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [sys.executable, "-m", "pykorn_cli", "fake", "run", *args],
        capture_output=True,
        text=True,
        timeout=timeout,
        cwd=ROOT,
    )


def test_the_demo_runs_reports_and_plots(tmp_path: Path) -> None:
    report_path, plot_path = tmp_path / "demo.json", tmp_path / "demo.png"
    # At the demo's own speed: the core's delays are real time, the expectations assume speed 3.
    result = _run(str(EXAMPLES / "demo.yaml"), "--report", str(report_path), "--plot", str(plot_path))
    assert result.returncode == 0, result.stdout + result.stderr
    assert "started pykorn core on 127.0.0.1:" in result.stdout
    assert "expectations: 8 of 8 met" in result.stdout
    report = json.loads(report_path.read_text())
    assert report["scenario"] == "demo" and report["speed"] == 3
    assert report["all_expectations_met"] is True
    assert (
        report["tasks"]["total"] == 82 and report["tasks"]["ran"] == 82 and report["tasks"]["never_ran"] == 0
    )
    # The training gang ran whole: its four placeholders were allocated and each replaced by a worker.
    assert report["gangs"] == {"train": {"placeholders": 4, "allocated": 4, "replaced": 4}}
    # The timeline carries what placeholders hold per queue (the plot hatches it). Whether a sample falls
    # between a placeholder's allocation and its replacement depends on timing: the summary above is
    # the fact that they ran.
    assert all("root.ml" in s["placeholders"] for s in report["timeline"])
    tenant2 = report["queues"]["root.tenant2"]
    assert tenant2["max_history"][0]["memory"] == 40 * 2**30
    assert tenant2["max_history"][-1]["memory"] == 16 * 2**30
    assert tenant2["usage"]["max"] <= 40 * 2**30
    # Its lowered max was enforced by quota preemption; those tasks were restarted too.
    quota_cut = [e for e in report["events"] if e["kind"] == "preempted" and e["queue"] == "root.tenant2.etl"]
    assert quota_cut and all("enforce the max of root.tenant2" in e["message"] for e in quota_cut)
    assert tenant2["allocations"] == 28 + len(quota_cut)
    assert report["queues"]["root.system"]["wait_p99"] < 3
    configs = [e for e in report["events"] if e["kind"] == "config"]
    assert len(configs) == 1 and configs[0]["accepted"]
    # tenant2, below its guarantee, took batch work back from tenant1; the victims were restarted.
    preempted = [
        e for e in report["events"] if e["kind"] == "preempted" and e["queue"] == "root.tenant1.batch"
    ]
    assert preempted
    assert report["queues"]["root.tenant1"]["preemptions"] == len(preempted)
    assert report["queues"]["root.tenant1.batch"]["allocations"] == 36 + len(preempted)
    assert report["timeline"] and set(report["timeline"][0]["usage"]) == set(report["queues"])
    png = plot_path.read_bytes()
    assert png[:8] == b"\x89PNG\r\n\x1a\n" and len(png) > 20_000


ML_QUEUES = """\
queues:
  partitions:
    - name: default
      queues:
        - name: root
          submitacl: "*"
          queues:
            - name: ml
"""
GANG_TIMEOUT = (
    """\
name: gang-timeout
speed: 1
"""
    + ML_QUEUES
    + """\
nodes:
  - {id: n1, resources: {memory: 4Gi, vcore: 4}}
applications:
  - id: train
    queue: root.ml
    gang:
      style: Soft
      timeout: 2s
      taskGroups:
        - {name: workers, minMember: 3, resources: {memory: 2Gi, vcore: 1}}   # two of three fit
    tasks:
      - {name: w, taskGroup: workers, count: 2, resources: {memory: 1Gi, vcore: 1}, duration: 1s}
expect:
  - every_task_finished: true
  - no_rejections: true
"""
)


def test_a_gang_that_cannot_fit_times_out_and_its_tasks_then_run_alone(tmp_path: Path) -> None:
    scenario, report_path = tmp_path / "gang.yaml", tmp_path / "gang.json"
    scenario.write_text(GANG_TIMEOUT)
    result = _run(str(scenario), "--report", str(report_path))
    assert result.returncode == 0, result.stdout + result.stderr
    report = json.loads(report_path.read_text())
    assert report["gangs"] == {"train": {"placeholders": 3, "allocated": 2, "replaced": 0}}
    released = [e for e in report["events"] if e["kind"] == "placeholder released"]
    assert len(released) == 3 and all("placeholder timeout" in e["message"] for e in released)
    assert report["tasks"]["finished"] == 2


GANG_NODE_GONE = (
    """\
name: gang-node-gone
speed: 4
"""
    + ML_QUEUES
    + """\
nodes:
  - {count: 2, prefix: node, resources: {memory: 4Gi, vcore: 2}}
applications:
  - id: train
    queue: root.ml
    gang:
      taskGroups:
        - {name: workers, minMember: 4, resources: {memory: 1Gi, vcore: 1}}
    tasks:
      - {name: w, taskGroup: workers, count: 4, resources: {memory: 1Gi, vcore: 1}, duration: 4s, arrival: 8s}
events:
  - at: 4s
    node: {action: decommission, id: node-2}
expect:
  - every_task_finished: true
  - no_rejections: true
"""
)


def test_placeholders_lost_with_their_node_are_not_confirmed_back(tmp_path: Path) -> None:
    """Two of the gang's placeholders go with node-2: the core says so (STOPPED_BY_RM) and the fake RM
    only marks them gone; the real tasks then take the other two and run on their own."""
    scenario, report_path = tmp_path / "gone.yaml", tmp_path / "gone.json"
    scenario.write_text(GANG_NODE_GONE)
    result = _run(str(scenario), "--report", str(report_path))
    assert result.returncode == 0, result.stdout + result.stderr
    report = json.loads(report_path.read_text())
    assert report["rejections"] == []
    assert report["gangs"] == {"train": {"placeholders": 4, "allocated": 4, "replaced": 2}}


def test_node_events_against_a_running_core(core_address: str, tmp_path: Path) -> None:
    report_path = tmp_path / "nodes.json"
    result = _run(str(EXAMPLES / "node-events.yaml"), "--core", core_address, "--speed", "6",
                  "--report", str(report_path))  # fmt: skip
    assert result.returncode == 0, result.stdout + result.stderr
    assert "started pykorn core" not in result.stdout  # it used the one it was given
    report = json.loads(report_path.read_text())
    tasks = report["tasks"]
    assert tasks["total"] == 16 and tasks["finished"] == 16
    assert tasks["lost_with_node"] >= 1  # node-2 went away under running tasks...
    lost = [e for e in report["events"] if e["kind"] == "lost"]
    assert lost and all(e["message"] == "Node node-2 Removed" for e in lost)
    # ...and they were restarted: more allocations than tasks.
    assert report["queues"]["root.jobs"]["allocations"] == 16 + len(lost)
    kinds = [e["kind"] for e in report["events"] if e["kind"].startswith("node")]
    assert kinds == ["node add", "node drain", "node decommission"]


def test_an_unmet_expectation_fails_the_run(tmp_path: Path) -> None:
    scenario = tmp_path / "tight.yaml"
    scenario.write_text(
        (EXAMPLES / "fair-share.yaml")
        .read_text()
        .replace(
            "  - every_task_finished: true\n",
            "  - every_task_finished: true\n"
            "  - queue_usage_at_most: {queue: root.red, resource: vcore, value: 2}\n",
        )
    )
    report_path = tmp_path / "tight.json"
    result = _run(str(scenario), "--speed", "8", "--report", str(report_path))
    assert result.returncode == 1, result.stdout + result.stderr
    assert "FAIL queue_usage_at_most(queue=root.red, resource=vcore, value=2)" in result.stdout
    report = json.loads(report_path.read_text())
    assert report["all_expectations_met"] is False
    failed = [e for e in report["expectations"] if not e["met"]]
    assert len(failed) == 1 and "root.red peaked at 8" in failed[0]["detail"]


def test_scenario_mistakes_fail_before_anything_starts(tmp_path: Path) -> None:
    scenario = tmp_path / "broken.yaml"
    scenario.write_text(
        """name: broken
queues: |
  partitions:
    - queues:
        - name: root
          submitacl: "*"
          queues:
            - name: work
nodes:
  - {id: n1, resources: {memory: 4Gi, vcore: 2}}
applications:
  - id: app
    queue: root.nowhere
    colour: blue
    tasks:
      - {name: huge, resources: {memory: 64Gi, vcore: 1}, duration: 10s}
      - {name: back, resources: {memory: 1Gi, vcore: 1}, duration: -5s}
"""
    )
    result = _run(str(scenario), "--report", str(tmp_path / "never.json"))
    assert result.returncode == 2
    out = result.stdout
    assert "started pykorn core" not in out and not (tmp_path / "never.json").exists()
    assert "applications[0].colour (line 14): unknown key 'colour'" in out
    assert "applications[0].queue (line 13): queue 'root.nowhere' is not in the queue configuration" in out
    assert "applications[0].tasks[0].resources (line 16): a task of" in out and "fits no node" in out
    assert "applications[0].tasks[1].duration (line 17): a duration cannot be negative" in out


def test_placement_constraints_in_a_scenario_are_honoured(tmp_path: Path) -> None:
    report_path = tmp_path / "constraints.json"
    result = _run(str(EXAMPLES / "placement-constraints.yaml"), "--report", str(report_path))
    assert result.returncode == 0, result.stdout + result.stderr
    report = json.loads(report_path.read_text())
    assert report["all_expectations_met"] is True
    placed = {task: nodes[0] for task, nodes in report["placements"].items()}
    web = [node for task, node in placed.items() if task.startswith("web/")]
    assert len(web) == 6 and len(set(web)) == 6  # one replica per node
    assert all(node.startswith("a-") for task, node in placed.items() if task.startswith("cache/"))
    zones = [node[0] for task, node in placed.items() if task.startswith("workers/")]
    assert sorted(zones.count(z) for z in "abc") == [3, 3, 3]  # spread evenly


def test_a_malformed_constraint_in_a_scenario_is_refused_with_its_path(tmp_path: Path) -> None:
    text = (EXAMPLES / "placement-constraints.yaml").read_text().replace("maxSkew: 1", "maxSkew: 0")
    scenario = tmp_path / "bad.yaml"
    scenario.write_text(text)
    result = _run(str(scenario))
    assert result.returncode != 0
    assert "applications[2].tasks[0]" in result.stdout + result.stderr
    assert "maxSkew must be an integer of at least 1" in result.stdout + result.stderr
