"""Quota preemption: victim selection in a leaf queue and the split of a parent's target."""

from __future__ import annotations

from typing import Any

import pytest

from core.objects.allocation import Allocation
from core.objects.partition_key import PartitionKey
from core.objects.queue import Queue
from core.resources import Resource
from core.scheduler.partition import quota_plan as quota
from tests.unit.quota_helpers import (
    CPU,
    G,
    M,
    _parent_cluster,
    _parent_config,
    advance,
    cluster,
    config,
    fill,
    keys,
    leaf_cluster,
    lower_leaf,
    preempted,
    q,
    queue,
    reload,
    running,
)

# 2. Leaf victim selection ---------------------------------------------------------------------


def test_only_allocations_sharing_a_type_with_the_target_are_candidates() -> None:
    c = leaf_cluster({M: 100, CPU: 100_000})
    running(c, "a", "mem-old", memory=40, age=30)
    running(c, "a", "mem-young", memory=40, age=20)
    running(c, "a", "cpu-youngest", vcore=1000, age=1)  # youngest of all, but uses no memory
    lower_leaf(c, {M: 50, CPU: 100_000})  # target {memory: 30}
    assert keys(advance(c, 10)) == ["mem-young"]
    outcome = queue(c, "root.leaf").quota_outcome
    assert outcome is not None
    assert outcome["target"] == {M: 30} and outcome["complete"] is True


def test_required_node_allocations_are_never_taken() -> None:
    c = leaf_cluster({M: 100})
    running(c, "a", "plain-old", memory=40, priority=10, allow=False, age=100)
    running(c, "a", "daemon", memory=40, priority=-10, allow=True, age=1, required_node=True)
    lower_leaf(c, {M: 50})  # target 30: the daemon would come first by every other rule
    assert keys(advance(c, 10)) == ["plain-old"]


def test_a_leaf_with_only_required_node_allocations_gives_nothing_and_says_why() -> None:
    c = leaf_cluster({M: 100})
    running(c, "a", "daemon", memory=80, required_node=True)
    lower_leaf(c, {M: 50})
    assert advance(c, 10) == []
    leaf = queue(c, "root.leaf")
    assert leaf.quota_outcome is not None
    assert leaf.quota_outcome["complete"] is False
    assert Resource(leaf.quota_outcome["achieved"]).is_zero()
    assert leaf.quota_outcome["reason"] == "no running allocation uses the resources over the max"
    assert not leaf.quota_running


def test_victim_order_non_originators_then_priority_then_allow_preemption_then_youngest() -> None:
    c = leaf_cluster({M: 100})
    running(c, "a", "originator-young", 10, priority=-100, allow=True, originator=True, age=1)
    running(c, "a", "high-prio", 10, priority=10, allow=True, age=2)
    running(c, "a", "no-allow-young", 10, priority=0, allow=False, age=3)
    running(c, "a", "allow-old", 10, priority=0, allow=True, age=50)
    running(c, "a", "allow-young", 10, priority=0, allow=True, age=4)
    running(c, "a", "low-prio-no-allow-old", 10, priority=-5, allow=False, age=99)
    lower_leaf(c, {M: 1})  # everything must go (a max of 0 is no max): the releases come in the order chosen
    assert keys(advance(c, 10)) == [
        "low-prio-no-allow-old",  # lowest priority, whatever its flag and age
        "allow-young",  # priority 0 and allows preemption: the younger first
        "allow-old",
        "no-allow-young",  # priority 0 without allowPreemptSelf
        "high-prio",
        "originator-young",  # an originator goes last, however low its priority
    ]


def test_victim_order_key_sorts_as_the_document_says() -> None:
    def alloc(key: str, **kw: Any) -> Allocation:
        return Allocation(key, "a", PartitionKey("rm", "p"), Resource({M: 1}), node_id="n", **kw)

    allocs = [
        alloc("orig", originator=True, priority=-9, allow_preempt_self=True, create_time=9.0),
        alloc("p1-old", priority=1, allow_preempt_self=True, create_time=1.0),
        alloc("p1-young", priority=1, allow_preempt_self=True, create_time=5.0),
        alloc("p1-noallow", priority=1, allow_preempt_self=False, create_time=8.0),
        alloc("p0", priority=0, allow_preempt_self=False, create_time=0.0),
    ]
    ordered = [a.key for a in sorted(allocs, key=quota.victim_order)]
    assert ordered == ["p0", "p1-young", "p1-old", "p1-noallow", "orig"]


def test_victims_are_taken_until_the_target_is_met_and_no_more() -> None:
    c = leaf_cluster({M: 100})
    taken = fill(c, "a", 5, 20)  # usage 100; a4 is the youngest
    lower_leaf(c, {M: 65})  # target 35: two victims of 20 meet it
    assert keys(advance(c, 10)) == [taken[4], taken[3]]
    outcome = queue(c, "root.leaf").quota_outcome
    assert outcome is not None
    assert outcome["target"] == {M: 35}
    assert outcome["achieved"] == {M: 35}  # what was needed; 40 was released
    assert outcome["victims"] == 2 and outcome["complete"] is True and outcome["reason"] == ""


def test_a_victim_that_frees_nothing_still_needed_is_passed_over() -> None:
    c = leaf_cluster({M: 100, CPU: 10_000})
    running(c, "a", "cpu-old", vcore=2000, age=30)
    running(c, "a", "mem-small", memory=10, age=20)
    running(c, "a", "mem-big", memory=40, age=10)
    running(c, "a", "cpu-mem", memory=10, vcore=1000, age=1)  # youngest; counts for both
    lower_leaf(c, {M: 30, CPU: 1500})  # target {memory: 30, vcore: 1500}
    # cpu-mem (10 mem, 1000 cpu), then mem-big (memory met), mem-small adds nothing, cpu-old (cpu met).
    assert keys(advance(c, 10)) == ["cpu-mem", "mem-big", "cpu-old"]


@pytest.mark.parametrize(
    ("new_max", "target", "complete"),
    [
        (60 * G, 40 * G, True),  # the document's numbers: two go and the target is met
        (55 * G, 45 * G, False),  # a third would be needed but would go below the guarantee
    ],
)
def test_the_queue_is_never_taken_below_its_guarantee(new_max: int, target: int, complete: bool) -> None:
    # Guaranteed 50G, usage 100G in five victims of 20G.
    c = leaf_cluster({M: 200 * G}, guaranteed={M: 50 * G})
    taken = fill(c, "a", 5, 20 * G)
    lower_leaf(c, {M: new_max}, guaranteed={M: 50 * G})
    assert keys(advance(c, 10)) == [taken[4], taken[3]]
    leaf = queue(c, "root.leaf")
    assert (leaf.allocated - leaf.preempting).get(M) == 60 * G  # still above the guarantee
    assert leaf.quota_outcome is not None
    assert leaf.quota_outcome["target"] == {M: target}
    assert leaf.quota_outcome["achieved"] == {M: min(40 * G, target)}
    assert leaf.quota_outcome["complete"] is complete
    expected_reason = "" if complete else "stopped at the queue's guaranteed resources"
    assert leaf.quota_outcome["reason"] == expected_reason


def test_the_documents_best_effort_example_planned_directly() -> None:
    # Preemptable 40G, guaranteed 50G, usage 100G, five victims of 20G: two go. Asked for more (60G),
    # the plan still stops at two: a third would take usage below the guarantee.
    c = leaf_cluster({M: 200 * G}, guaranteed={M: 50 * G})
    fill(c, "a", 5, 20 * G)
    leaf = queue(c, "root.leaf")
    met = quota._plan_leaf(leaf, Resource({M: 40 * G}), quota.live_limits)
    assert len(met.victims) == 2 and met.complete and met.reason == ""
    short = quota._plan_leaf(leaf, Resource({M: 60 * G}), quota.live_limits)
    assert len(short.victims) == 2 and not short.complete
    assert short.achieved == Resource({M: 40 * G})
    assert short.reason == "stopped at the queue's guaranteed resources"


def test_the_outcome_records_target_achieved_completeness_and_reason() -> None:
    c = leaf_cluster({M: 100})
    fill(c, "a", 2, 20)  # 40: not enough for the target whatever is taken
    running(c, "a", "daemon", memory=40, required_node=True)
    lower_leaf(c, {M: 10})  # target 70; at most 40 can go
    start = c.clock.now
    assert len(advance(c, 10)) == 2
    assert queue(c, "root.leaf").quota_outcome == {
        "time": start + 10,
        "target": {M: 70},
        "achieved": {M: 40},
        "victims": 2,
        "complete": False,
        "reason": "not enough running allocations use the resources over the max",
    }


# 3. Parent queues -----------------------------------------------------------------------------


def _three(names: str = "abc") -> list[Queue]:
    root = Queue("root", is_leaf=False)
    return [Queue(n, root) for n in names]


def _split(target: dict[str, int], releasable: list[dict[str, int]]) -> list[dict[str, int]]:
    children = _three("abcdefgh"[: len(releasable)])
    rel = {ch.full_name: Resource(r) for ch, r in zip(children, releasable, strict=True)}
    parts = quota._split(Resource(target), children, rel)
    return [parts[ch.full_name].as_dict() for ch in children]


def test_split_by_share_rounds_so_the_total_is_met() -> None:
    # memory: 40/90, 20/90, 30/90 of 10 = 4.44, 2.22, 3.33 -> 4, 2, 3 and the extra unit to the
    # largest remainder (a). vcore: only 3 releasable for a target of 7: all of it, by share.
    parts = _split({M: 10, CPU: 7}, [{M: 40, CPU: 1}, {M: 20, CPU: 2}, {M: 30}])
    assert parts == [{M: 5, CPU: 1}, {M: 2, CPU: 2}, {M: 3}]


def test_split_of_equal_shares_hands_out_the_remainder_once() -> None:
    parts = _split({M: 10}, [{M: 10}, {M: 10}, {M: 10}])
    assert sorted(p[M] for p in parts) == [3, 3, 4]
    assert sum(p[M] for p in parts) == 10


def test_split_gives_nothing_for_a_type_nobody_can_release() -> None:
    assert _split({CPU: 5}, [{M: 10}, {M: 10}]) == [{}, {}]


@pytest.mark.parametrize(
    ("releasable", "want"),
    [
        ([7, 11, 13], 17),
        ([1, 1, 1, 1, 1, 1, 1], 5),
        ([999_999_937, 3, 5], 100_000_007),
        # int64 quantities (memory in bytes): too large for exact float arithmetic.
        ([7_412_932_666_144_386, 892_703_669_515_107, 9_839_887_853_017_513], 17_462_201_278_169_688),
        ([3 * 10**18, 2 * 10**18 + 1, 10**18 + 7], 4 * 10**18 + 3),
    ],
)
def test_split_parts_add_up_to_the_target_and_stay_within_each_releasable(
    releasable: list[int], want: int
) -> None:
    parts = _split({M: want}, [{M: r} for r in releasable])
    got = [p.get(M, 0) for p in parts]
    assert sum(got) == want
    assert all(0 <= g <= r for g, r in zip(got, releasable, strict=True))
    total = sum(releasable)
    # Each part is its exact share rounded down or up.
    assert all(want * r // total <= g <= -(-want * r // total) for g, r in zip(got, releasable, strict=True))


def test_parent_splits_by_releasable_above_guarantee() -> None:
    c = _parent_cluster(200)
    a = fill(c, "a", 6, 10)  # 60, guaranteed 20: releasable 40
    b = fill(c, "b", 2, 10)  # 20, no guarantee: releasable 20
    reload(c, _parent_config(50))  # usage 80: target 30 -> a 20, b 10
    preempted(c)
    victims = advance(c, 10)
    assert sorted(keys(victims)) == sorted([a[5], a[4], b[1]])
    assert all("root.p" in message for _, _, message in victims)
    p = queue(c, "root.p")
    assert p.quota_outcome is not None and p.quota_outcome["complete"] is True
    assert p.quota_running == {("a", a[5]), ("a", a[4]), ("b", b[1])}


def test_parent_split_that_does_not_divide_evenly_still_meets_the_target() -> None:
    c = _parent_cluster(200)
    fill(c, "a", 60, 1)  # releasable 40
    fill(c, "b", 20, 1)  # releasable 20
    reload(c, _parent_config(55))  # target 25 -> a 16.67, b 8.33 -> a 17, b 8
    preempted(c)
    victims = advance(c, 10)
    assert sum(1 for app, _, _ in victims if app == "a") == 17
    assert sum(1 for app, _, _ in victims if app == "b") == 8
    p = queue(c, "root.p")
    assert p.quota_outcome is not None
    assert p.quota_outcome["achieved"] == {M: 25} and p.quota_outcome["complete"] is True


def test_parent_skips_children_without_usage_and_with_a_quota_preemption_running() -> None:
    def conf(p_max: int, d_max: int) -> str:
        return config(
            q("p", max={M: p_max}, delay="10s", children=[
                q("a", guaranteed={M: 20}),
                q("b"),
                q("c"),
                q("d", max={M: d_max}, delay="5s"),
            ])
        )  # fmt: skip

    c = cluster(conf(200, 100))
    for app in "abcd":
        c.app(app, f"root.p.{app}")
    a = fill(c, "a", 6, 10)  # releasable 40
    b = fill(c, "b", 2, 10)  # releasable 20
    d = fill(c, "d", 4, 10)  # 40
    reload(c, conf(80, 30))  # d must give 10 after 5s; p (usage 120) must give 40 after 10s
    preempted(c)
    assert keys(advance(c, 5)) == [d[3]]  # d's run: its victim is not yet confirmed
    # p's target is now 110 - 80 = 30, split between a and b only (d would have had a share of its
    # 30 releasable); c holds nothing and takes no part.
    victims = advance(c, 5)
    assert sorted(keys(victims)) == sorted([a[5], a[4], b[1]])
    plans = quota.plan(queue(c, "root.p"), Resource({M: 30}), busy=lambda x: bool(x.quota_running))
    assert {pl.queue for pl in plans} <= {"root.p.a", "root.p.b"}


def test_parent_with_parent_children_recurses_down_to_the_leaves() -> None:
    def conf(top_max: int) -> str:
        return config(
            q("top", max={M: top_max}, delay="10s", children=[
                q("mid", children=[q("x"), q("y")]),
                q("z"),
            ])
        )  # fmt: skip

    c = cluster(conf(200))
    for app, where in (("x", "root.top.mid.x"), ("y", "root.top.mid.y"), ("z", "root.top.z")):
        c.app(app, where)
    x = fill(c, "x", 2, 10)
    y = fill(c, "y", 2, 10)
    z = fill(c, "z", 4, 10)
    reload(c, conf(40))  # usage 80, target 40: mid 20 (x 10, y 10), z 20
    preempted(c)
    victims = advance(c, 10)
    assert sorted(keys(victims)) == sorted([x[1], y[1], z[3], z[2]])
    plans = quota.plan(queue(c, "root.top"), Resource({M: 40}))
    assert sorted(p.queue for p in plans) == ["root.top.mid.x", "root.top.mid.y", "root.top.z"]


def test_a_parent_run_never_takes_an_inner_parent_below_its_guarantee() -> None:
    # "Preemption should not make usage fall below guaranteed resources at any cost": mid holds 100
    # in five victims of 20 and is guaranteed 50; its leaf has no guarantee of its own.
    def conf(top_max: int) -> str:
        return config(
            q("top", max={M: top_max}, delay="10s", children=[
                q("mid", guaranteed={M: 50}, children=[q("x")]),
            ])
        )  # fmt: skip

    c = cluster(conf(200))
    c.app("x", "root.top.mid.x")
    fill(c, "x", 5, 20)
    reload(c, conf(55))  # target 45: a third victim would leave mid with 40
    preempted(c)
    assert len(advance(c, 10)) == 2
    mid = queue(c, "root.top.mid")
    assert (mid.allocated - mid.preempting).get(M) == 60


def test_a_parent_run_never_takes_the_parent_itself_below_its_guarantee() -> None:
    def conf(p_max: int) -> str:
        return config(q("p", max={M: p_max}, guaranteed={M: 50}, delay="10s", children=[q("x")]))

    c = cluster(conf(200))
    c.app("x", "root.p.x")
    fill(c, "x", 5, 20)
    reload(c, conf(55))  # target 45; guaranteed 50: only two of 20 may go
    preempted(c)
    assert len(advance(c, 10)) == 2
    p = queue(c, "root.p")
    assert (p.allocated - p.preempting).get(M) == 60
    assert p.quota_outcome is not None and p.quota_outcome["complete"] is False
