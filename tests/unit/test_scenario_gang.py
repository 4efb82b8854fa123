"""Gang-scheduled applications in a scenario: task groups, their style and timeout, and mistakes."""

from __future__ import annotations

from shim_fake.scenario.model import ExpectKind
from tests.fake_scenarios import parse_scenario
from tests.unit.scenario_helpers import GI, _after_header, _at, _problems

GANG_APP = """\
applications:
  - id: train
    queue: a
    gang:
      style: Hard
      timeout: 30s
      taskGroups:
        - {name: workers, minMember: 3, resources: {memory: 1Gi}}
        - {name: driver, minMember: 1, resources: {memory: 512Mi}}
    tasks:
      - {name: w, taskGroup: workers, count: 3, resources: {memory: 1Gi}, duration: 10s}
      - {name: d, taskGroup: driver, resources: {memory: 512Mi}, duration: 10s}
expect:
  - gang_ran_whole: {app: train}
"""


def test_a_gang_parses_with_its_groups_style_timeout_and_size() -> None:
    scenario = parse_scenario(_after_header(GANG_APP))
    (app,) = scenario.apps
    assert app.gang is not None
    assert app.gang.style == "Hard" and app.gang.timeout == 30.0
    assert [(g.name, g.min_member) for g in app.gang.groups] == [("workers", 3), ("driver", 1)]
    assert app.gang.size().as_dict() == {"memory": 3 * GI + GI // 2}
    assert [t.task_group for t in app.tasks] == ["workers", "driver"]
    assert scenario.expectations[0].kind == ExpectKind.GANG_RAN_WHOLE


def test_gang_mistakes_are_named_with_their_lines() -> None:
    text = _after_header(
        GANG_APP.replace("style: Hard", "style: Firm")
        .replace("taskGroup: driver", "taskGroup: drivers")
        .replace("minMember: 3", "minMember: 0")
    )
    problems = _problems(text)
    assert "Soft or Hard" in _at(problems, "applications[0].gang.style", 17).message
    assert "minMember" in _at(problems, "taskGroups[0].minMember", 20).path
    assert "not declared" in _at(problems, "tasks[1].taskGroup", 24).message


def test_a_task_group_without_a_gang_is_refused() -> None:
    text = _after_header(
        """\
applications:
  - id: plain
    queue: a
    tasks:
      - {name: w, taskGroup: workers, resources: {memory: 1Gi}, duration: 10s}
"""
    )
    assert "declares no gang" in _at(_problems(text), "tasks[0].taskGroup", 17).message
