"""Quota preemption and configuration: validation, independence from priority and inter-queue
preemption settings, the dry run, the administrator's event, and child templates.
"""

from __future__ import annotations

from typing import Any

import pytest

from core.config import ConfigError, load_config
from core.resources import Resource
from core.scheduler.commands import (
    AppAdd,
    UpdateApplications,
    UpdateConfig,
)
from tests.unit.domain_helpers import Cluster
from tests.unit.quota_helpers import (
    M,
    _parent_cluster,
    _parent_config,
    advance,
    cluster,
    config,
    fill,
    keys,
    preempted,
    q,
    reload,
)

# 5. Validation --------------------------------------------------------------------------------

_GUARANTEED_CONFIG = """\
partitions:
  - name: default
    preemption:
      quotapreemptionenabled: true
    queues:
      - name: root
        submitacl: "*"
        queues:
          - name: team
            properties:
              quota.preemption.delay: "%(parent_delay)s"
            queues:
              - name: leaf
                resources:
                  guaranteed:
                    memory: 50
                  max:
                    memory: %(max)s
                properties:
                  quota.preemption.delay: "%(delay)s"
"""
_LEAF_PATH = "partitions[0].queues[0].queues[0].queues[0]"
_MAX_LINE = _GUARANTEED_CONFIG.splitlines().index("                    memory: %(max)s") + 1


def _config_with(max: int, delay: str, parent_delay: str = "0") -> str:
    text = _GUARANTEED_CONFIG % {"max": max, "delay": delay, "parent_delay": parent_delay}
    if delay == "":
        text = text.replace('                properties:\n                  quota.preemption.delay: ""\n', "")
    return text


def _quota_problems(text: str) -> list[Any]:
    with pytest.raises(ConfigError) as info:
        load_config(text)
    return [p for p in info.value.problems if "quota.preemption.delay" in p.message]


@pytest.mark.parametrize("max", [50, 40])
def test_a_max_not_above_guaranteed_is_refused_when_a_delay_is_set(max: int) -> None:
    problems = _quota_problems(_config_with(max, "30s"))
    assert len(problems) == 1
    problem = problems[0]
    assert problem.path == f"{_LEAF_PATH}.resources.max.memory"
    assert problem.line == _MAX_LINE
    assert "must be greater than its guaranteed" in problem.message
    assert f"max {max} <= guaranteed 50 memory" in problem.message
    assert "'leaf'" in problem.message and "30s" in problem.message


def test_a_max_above_guaranteed_is_accepted_with_a_delay() -> None:
    load_config(_config_with(51, "30s"))


@pytest.mark.parametrize("delay", ["0", "0s", ""])
def test_a_max_equal_to_guaranteed_is_accepted_without_a_delay(delay: str) -> None:
    loaded = load_config(_config_with(50, delay))
    leaf = loaded.config.partitions[0].root.queues[0].queues[0]
    assert leaf.max == Resource({M: 50}) and leaf.guaranteed == Resource({M: 50})


def test_a_delay_inherited_from_the_parent_counts() -> None:
    problems = _quota_problems(_config_with(50, "", parent_delay="2m"))
    assert [p.path for p in problems] == [f"{_LEAF_PATH}.resources.max.memory"]
    assert "120s" in problems[0].message


def test_an_own_delay_of_zero_overrides_the_inherited_one() -> None:
    load_config(_config_with(50, "0", parent_delay="2m"))


# 6. Independence from priority and inter-queue preemption settings ----------------------------


def _parent_run(**kw: Any) -> list[str]:
    c = _parent_cluster(200, **kw)
    fill(c, "a", 6, 10)
    fill(c, "b", 2, 10)
    reload(c, _parent_config(50, **kw))
    preempted(c)
    return sorted(keys(advance(c, 10)))


@pytest.mark.parametrize(
    "kw",
    [
        {"p_props": {"priority.policy": "fence", "priority.offset": "100"}},
        {"child_props": {"priority.policy": "fence", "priority.offset": "-50"}},
        {"p_props": {"preemption.policy": "fence"}, "child_props": {"preemption.policy": "fence"}},
        {"p_props": {"preemption.policy": "disabled"}},
        {"child_props": {"preemption.policy": "disabled", "preemption.delay": "1h"}},
        {"inter_queue": False},
    ],
    ids=["priority-fence-offset-parent", "priority-fence-offset-children", "preemption-fence",
         "preemption-disabled-parent", "preemption-disabled-children", "inter-queue-off"],
)  # fmt: skip
def test_priority_and_preemption_settings_do_not_change_what_quota_preemption_takes(
    kw: dict[str, Any],
) -> None:
    baseline = _parent_run()
    assert baseline == sorted(["a4", "a5", "b1"])
    assert _parent_run(**kw) == baseline


def test_a_leaf_with_preemption_disabled_and_inter_queue_preemption_off_is_still_enforced() -> None:
    c = cluster(
        config(
            q("leaf", max={M: 100}, delay="10s", props={"preemption.policy": "disabled"}), inter_queue=False
        )
    )
    c.app("a", "root.leaf")
    fill(c, "a", 4, 20)
    reload(
        c,
        config(
            q("leaf", max={M: 50}, delay="10s", props={"preemption.policy": "disabled"}), inter_queue=False
        ),
    )
    preempted(c)
    assert keys(advance(c, 10)) == ["a3", "a2"]


# Dry run ----------------------------------------------------------------------------------------


def test_the_dry_run_predicts_what_the_real_run_takes_when_a_leaf_fires_before_its_parent() -> None:
    def conf(p_max: int, leaf_max: int) -> str:
        return config(q("p", max={M: p_max}, delay="10s", children=[q("leaf", max={M: leaf_max}), q("s")]))

    c = cluster(conf(200, 100))
    c.app("a", "root.p.leaf")
    c.app("s", "root.p.s")
    fill(c, "a", 4, 20)
    fill(c, "s", 4, 20)
    preempted(c)
    new = load_config(conf(120, 60)).config
    predicted = sorted(v.key for p in c.ctx.preview_config(c.rm_id, new) for v, _ in p.victims)
    reload(c, conf(120, 60))
    preempted(c)
    assert predicted == sorted(keys(advance(c, 10)))


def test_a_short_run_tells_the_administrator_with_an_event() -> None:
    """Best effort: the event (si EventRecord QUEUE / QUEUE_PREEMPTION) says target, achieved and why."""
    c = Cluster(_EVENT_CONFIG % {"max": 20_000})
    c.node("n1", {"memory": 20_000})
    c.app("app", "root.q")
    for i in range(5):
        c.ask("app", f"t{i}", {"memory": 2_000})
        c.clock.advance(0.01)
    c.schedule()
    c.ctx.drain_results()
    c.ctx.apply(UpdateConfig(c.rm_id, load_config(_EVENT_CONFIG % {"max": 5_500}).config))
    c.clock.advance(2)
    c.ctx.tick()
    c.ctx.drain_results()
    [event] = [e for e in c.ctx.events if e.change_detail == "QUEUE_PREEMPTION"]
    assert (event.type, event.object_id, event.change_type) == ("QUEUE", "root.q", "SET")
    assert "target {'memory': 4500}" in event.message and "took {'memory': 4000}" in event.message
    assert "short of the target because stopped at" in event.message and "guaranteed" in event.message
    assert event.resource == {"memory": 5500}  # the queue's max, as YuniKorn's event carries


def test_a_lowered_child_template_leaves_existing_dynamic_queues_alone() -> None:
    c = Cluster(_TEMPLATE_CONFIG % {"max": 10_000})
    c.node("n1", {"memory": 20_000})
    c.ctx.apply(UpdateApplications(c.rm_id, adds=(AppAdd("app", c.pname(), "root.teams.red"),)))
    for i in range(6):
        c.ask("app", f"t{i}", {"memory": 1_000})
    c.schedule()
    c.ctx.drain_results()
    c.ctx.apply(UpdateConfig(c.rm_id, load_config(_TEMPLATE_CONFIG % {"max": 2_000}).config))
    c.clock.advance(60)
    c.ctx.tick()
    c.schedule()
    released = [r for b in c.ctx.drain_results() for r in b.released]
    assert released == []
    red = c.partition.find_queue("root.teams.red")
    assert red is not None and red.max == {"memory": 10_000} and red.quota_timer is None


_EVENT_CONFIG = """
partitions:
  - name: default
    preemption: {quotapreemptionenabled: true}
    queues:
      - name: root
        submitacl: "*"
        queues:
          - name: q
            resources: {guaranteed: {memory: 5000}, max: {memory: %(max)d}}
            properties: {quota.preemption.delay: 1s}
"""

_TEMPLATE_CONFIG = """
partitions:
  - name: default
    preemption: {quotapreemptionenabled: true}
    placementrules:
      - name: provided
        create: true
    queues:
      - name: root
        submitacl: "*"
        queues:
          - name: teams
            parent: true
            properties: {quota.preemption.delay: 1s}
            childtemplate:
              resources: {max: {memory: %(max)d}}
"""
