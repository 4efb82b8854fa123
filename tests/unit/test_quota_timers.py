"""Quota preemption: the delay timers, their restarts and cancellations, and runs in progress."""

from __future__ import annotations

import pytest

from core.config import load_config
from core.resources import Resource
from core.scheduler.commands import (
    AppAdd,
    AppRemove,
    NodeAction,
    NodeChange,
    RegisterRM,
    UpdateApplications,
    UpdateNodes,
)
from core.scheduler.results import Termination
from tests.unit.domain_helpers import Cluster
from tests.unit.quota_helpers import (
    NODE,
    M,
    advance,
    cluster,
    config,
    confirm,
    fill,
    keys,
    leaf_cluster,
    lower_leaf,
    preempted,
    q,
    queue,
    reload,
)

# 4. Timers --------------------------------------------------------------------------------------


def _usage80(delay: str = "10s") -> Cluster:
    """root.leaf with max 100 and usage 80 in four allocations of 20 (a3 the youngest)."""
    c = leaf_cluster({M: 100}, delay=delay)
    fill(c, "a", 4, 20)
    preempted(c)
    return c


def test_a_lowered_max_starts_the_timer_and_preempts_only_after_the_delay() -> None:
    c = _usage80()
    start = c.clock.now
    lower_leaf(c, {M: 50})
    leaf = queue(c, "root.leaf")
    assert leaf.quota_timer == start
    assert advance(c, 9.9) == []
    assert leaf.quota_running == set()
    victims = advance(c, 0.1)
    assert keys(victims) == ["a3", "a2"]  # 30 to go: two of 20
    assert all(m == "preempted to enforce the max of root.leaf" for _, _, m in victims)
    assert leaf.quota_timer is None
    assert leaf.preempting == Resource({M: 40})


def test_the_victims_are_released_as_preempted_by_the_scheduler() -> None:
    c = _usage80()
    lower_leaf(c, {M: 50})
    c.clock.advance(10)
    c.ctx.tick()
    released = [r for b in c.ctx.drain_results() for r in b.released]
    assert [(r.app_id, r.key) for r in released] == [("a", "a3"), ("a", "a2")]
    assert all(r.termination == Termination.PREEMPTED_BY_SCHEDULER for r in released)
    assert all(r.partition == c.pname() and "root.leaf" in r.message for r in released)


def test_a_second_lowering_before_the_timer_fires_restarts_it_from_zero() -> None:
    c = _usage80()
    lower_leaf(c, {M: 60})
    advance(c, 6)
    restart = c.clock.now
    lower_leaf(c, {M: 50})
    assert queue(c, "root.leaf").quota_timer == restart
    assert advance(c, 6) == []  # 12s after the first change: the old start time is not used
    assert advance(c, 3.9) == []
    assert keys(advance(c, 0.1)) == ["a3", "a2"]  # 10s after the second, for the newer max


def test_a_delay_change_before_the_timer_fires_restarts_it_from_zero() -> None:
    c = _usage80()
    lower_leaf(c, {M: 50}, delay="10s")
    advance(c, 6)
    lower_leaf(c, {M: 50}, delay="8s")  # same max, new delay: from now, 8 seconds
    assert advance(c, 4) == []  # 10s after the first change
    assert advance(c, 3.9) == []
    assert keys(advance(c, 0.1)) == ["a3", "a2"]


def test_a_raise_back_above_usage_before_the_timer_fires_cancels_it() -> None:
    c = _usage80()
    lower_leaf(c, {M: 50})
    advance(c, 5)
    lower_leaf(c, {M: 90})  # above the usage of 80
    leaf = queue(c, "root.leaf")
    assert leaf.quota_timer is None
    assert advance(c, 60) == []
    assert leaf.quota_outcome is None


def test_a_raise_that_leaves_the_max_below_usage_does_not_cancel_or_restart() -> None:
    c = _usage80()
    start = c.clock.now
    lower_leaf(c, {M: 50})
    advance(c, 5)
    lower_leaf(c, {M: 70})  # raised, but usage 80 is still over it
    assert queue(c, "root.leaf").quota_timer == start
    assert keys(advance(c, 5)) == ["a3"]  # on the first schedule, for the max now in force: 10


def test_a_change_while_a_quota_preemption_runs_is_skipped() -> None:
    c = _usage80()
    lower_leaf(c, {M: 50})
    victims = advance(c, 10)
    assert keys(victims) == ["a3", "a2"]
    leaf = queue(c, "root.leaf")
    assert leaf.quota_running == {("a", "a3"), ("a", "a2")}
    lower_leaf(c, {M: 20}, delay="5s")  # lower again (and a new delay) while the victims run
    assert leaf.quota_timer is None
    assert advance(c, 60) == []  # no second run
    assert leaf.quota_running == {("a", "a3"), ("a", "a2")}
    outcome = leaf.quota_outcome
    assert outcome is not None and outcome["target"] == {M: 30}


def test_once_every_victim_is_confirmed_the_run_is_over() -> None:
    c = _usage80()
    lower_leaf(c, {M: 50})
    victims = advance(c, 10)
    leaf, root = queue(c, "root.leaf"), queue(c, "root")
    confirm(c, victims[:1])
    assert leaf.quota_running == {("a", "a2")}
    assert leaf.preempting == Resource({M: 20})
    confirm(c, victims[1:])
    assert leaf.quota_running == set()
    assert leaf.preempting.is_zero() and root.preempting.is_zero()
    assert c.partition.preemption.enforcing == {}
    assert leaf.allocated == Resource({M: 40})
    # The queue takes part in quota preemption again: a new lowering starts a new timer and run.
    lower_leaf(c, {M: 30})
    assert keys(advance(c, 10)) == ["a1"]


def test_a_lowered_max_that_usage_already_fits_fires_with_nothing_to_take() -> None:
    c = _usage80()
    lower_leaf(c, {M: 90})  # lowered, but usage 80 fits: the timer runs, then finds nothing to do
    start = c.clock.now
    assert queue(c, "root.leaf").quota_timer == start
    assert advance(c, 10) == []
    assert queue(c, "root.leaf").quota_outcome == {
        "time": start + 10, "target": {}, "achieved": {}, "victims": 0, "complete": True, "reason": "",
    }  # fmt: skip


@pytest.mark.parametrize("how", ["application removed", "node removed"])
def test_victims_that_go_another_way_also_end_the_run(how: str) -> None:
    c = _usage80()
    lower_leaf(c, {M: 50})
    assert len(advance(c, 10)) == 2
    if how == "application removed":
        c.ctx.apply(UpdateApplications(c.rm_id, removes=(AppRemove("a", c.pname()),)))
    else:
        c.node_action("n1", NodeAction.DECOMMISSION)
    leaf = queue(c, "root.leaf")
    assert leaf.quota_running == set() and leaf.preempting.is_zero()
    assert c.partition.preemption.enforcing == {}


@pytest.mark.parametrize(
    ("quota_enabled", "delay"),
    [(False, "10s"), (True, "0"), (True, "0s")],
    ids=["quotapreemption-disabled", "delay-0", "delay-0s"],
)
def test_nothing_is_preempted_when_disabled_or_without_a_delay(quota_enabled: bool, delay: str) -> None:
    c = cluster(config(q("leaf", max={M: 100}, delay=delay), quota_enabled=quota_enabled))
    c.app("a", "root.leaf")
    fill(c, "a", 4, 20)
    reload(c, config(q("leaf", max={M: 50}, delay=delay), quota_enabled=quota_enabled))
    preempted(c)
    assert advance(c, 10) == []
    assert advance(c, 3600) == []
    leaf = queue(c, "root.leaf")
    assert leaf.quota_running == set() and leaf.preempting.is_zero()
    assert leaf.quota_outcome is None


def _register(c: Cluster, text: str) -> None:
    """The RM (re)registers with `text` and reports its node, application and running tasks."""
    c.ctx.apply(RegisterRM(c.rm_id, load_config(text).config))
    c.ctx.apply(UpdateNodes(c.rm_id, (NodeChange("n1", NodeAction.CREATE, c.pname(), {}, Resource(NODE)),)))
    c.ctx.apply(UpdateApplications(c.rm_id, adds=(AppAdd("a", c.pname(), "root.leaf"),)))
    fill(c, "a", 4, 20)
    preempted(c)


def test_a_restart_starts_the_timer_from_the_time_the_configuration_is_loaded() -> None:
    low = config(q("leaf", max={M: 50}, delay="10s"))
    c = cluster(low)
    c.app("a", "root.leaf")
    fill(c, "a", 4, 20)  # the RM reports what runs: 80, above the max of 50
    loaded = c.clock.now
    assert queue(c, "root.leaf").quota_timer == loaded
    assert keys(advance(c, 10)) == ["a3", "a2"]


def test_a_restart_loses_the_time_that_had_passed_before_it() -> None:
    c = _usage80()
    lower_leaf(c, {M: 50})  # saved at T1
    c.clock.advance(6)
    _register(c, config(q("leaf", max={M: 50}, delay="10s")))  # restart at T2 = T1 + 6
    restarted = c.clock.now
    assert queue(c, "root.leaf").quota_timer == restarted
    assert advance(c, 4) == []  # T1 + 10: the timer from before the restart is gone
    assert advance(c, 5.9) == []
    assert keys(advance(c, 0.1)) == ["a3", "a2"]


def test_queues_with_different_delays_run_independently() -> None:
    def conf(a_max: int, b_max: int) -> str:
        return config(q("qa", max={M: a_max}, delay="5s"), q("qb", max={M: b_max}, delay="20s"))

    c = cluster(conf(100, 100))
    c.app("a", "root.qa")
    c.app("b", "root.qb")
    a = fill(c, "a", 4, 20)
    b = fill(c, "b", 4, 20)
    reload(c, conf(70, 50))
    preempted(c)
    assert keys(advance(c, 5)) == [a[3]]
    assert queue(c, "root.qb").quota_timer is not None
    assert advance(c, 14.9) == []
    assert keys(advance(c, 0.1)) == [b[3], b[2]]


def test_with_equal_delays_a_leaf_fires_before_its_parent() -> None:
    def conf(p_max: int, leaf_max: int) -> str:
        # The parent's delay is inherited by both children: every queue waits 10s.
        return config(q("p", max={M: p_max}, delay="10s", children=[q("leaf", max={M: leaf_max}), q("s")]))

    c = cluster(conf(200, 100))
    c.app("a", "root.p.leaf")
    c.app("s", "root.p.s")
    leaf_keys = fill(c, "a", 4, 20)  # 80
    s_keys = fill(c, "s", 4, 20)  # 80
    reload(c, conf(120, 60))  # the leaf must give 20, the parent (160) 40
    preempted(c)
    assert queue(c, "root.p.leaf").props.quota_preemption_delay == 10
    victims = advance(c, 10)
    # The leaf first, for its own max; then the parent, whose usage is now 140, takes 20 from s alone
    # (the leaf's run is still going, so the leaf takes no part in the parent's).
    assert victims == [
        ("a", leaf_keys[3], "preempted to enforce the max of root.p.leaf"),
        ("s", s_keys[3], "preempted to enforce the max of root.p"),
    ]
    leaf_outcome = queue(c, "root.p.leaf").quota_outcome
    parent_outcome = queue(c, "root.p").quota_outcome
    assert leaf_outcome is not None and parent_outcome is not None
    assert leaf_outcome["time"] == parent_outcome["time"] == c.clock.now
    assert parent_outcome["target"] == {M: 20}
