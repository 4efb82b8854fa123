"""Quota enforcement through preemption (../shared/design/quota-enforcement-preemption.txt).

Driven through the cluster context with an injected clock: a queue's max is lowered by a configuration
reload, time passes, `tick` fires the quota timers, and the victims come back to the RM as releases
with termination PREEMPTED_BY_SCHEDULER.
"""

from __future__ import annotations

from typing import Any

import pytest
import yaml

from core.commands import (
    AppAdd,
    AppRemove,
    NodeAction,
    NodeChange,
    RegisterRM,
    ReleaseRequest,
    UpdateAllocations,
    UpdateApplications,
    UpdateConfig,
    UpdateNodes,
)
from core.config import ConfigError, load_config
from core.objects.allocation import TAG_REQUIRED_NODE, Allocation
from core.objects.queue import Queue
from core.preemption import quota
from core.resources import Resource
from core.results import Termination
from tests.unit.domain_helpers import Cluster

G = 10**9  # the document's "G" of memory
M = "memory"
CPU = "vcore"
NODE = {M: 10**15, CPU: 10**9}


# Helpers --------------------------------------------------------------------------------------


def _quantities(values: dict[str, int]) -> dict[str, int | str]:
    # vcore is configured in cores; written in milli-cores here, so that every number in these tests
    # is the one the core counts with.
    return {k: f"{v}m" if k == CPU else v for k, v in values.items()}


def q(
    name: str,
    max: dict[str, int] | None = None,
    guaranteed: dict[str, int] | None = None,
    delay: str | None = None,
    props: dict[str, str] | None = None,
    children: list[dict[str, Any]] | None = None,
) -> dict[str, Any]:
    """One queue of a configuration."""
    queue: dict[str, Any] = {"name": name}
    resources = {}
    if guaranteed is not None:
        resources["guaranteed"] = _quantities(guaranteed)
    if max is not None:
        resources["max"] = _quantities(max)
    if resources:
        queue["resources"] = resources
    properties = dict(props or {})
    if delay is not None:
        properties["quota.preemption.delay"] = delay
    if properties:
        queue["properties"] = properties
    if children is not None:
        queue["queues"] = children
    return queue


def config(*queues: dict[str, Any], quota_enabled: bool = True, inter_queue: bool = True) -> str:
    partition = {
        "name": "default",
        "preemption": {"enabled": inter_queue, "quotapreemptionenabled": quota_enabled},
        "queues": [{"name": "root", "submitacl": "*", "queues": list(queues)}],
    }
    return yaml.safe_dump({"partitions": [partition]}, sort_keys=False)


def cluster(text: str) -> Cluster:
    c = Cluster(text)
    c.node("n1", NODE)
    return c


def running(
    c: Cluster,
    app: str,
    key: str,
    memory: int = 0,
    vcore: int = 0,
    *,
    priority: int = 0,
    originator: bool = False,
    allow: bool = False,
    age: float = 0.0,
    required_node: bool = False,
) -> Allocation:
    """An allocation the RM already runs on n1; `age` seconds old (older ones have larger ages)."""
    res = {k: v for k, v in ((M, memory), (CPU, vcore)) if v}
    alloc = Allocation(
        key, app, c.pname(), Resource(res), priority=priority, node_id="n1", originator=originator,
        allow_preempt_self=allow, create_time=c.clock.now - age,
        tags={TAG_REQUIRED_NODE: "n1"} if required_node else {},
    )  # fmt: skip
    c.ctx.apply(UpdateAllocations(c.rm_id, allocations=(alloc,)))
    return alloc


def fill(c: Cluster, app: str, count: int, memory: int, prefix: str | None = None) -> list[str]:
    """`count` allocations of `memory`; the key with the highest index is the youngest."""
    prefix = prefix if prefix is not None else app
    keys = [f"{prefix}{i}" for i in range(count)]
    for i, key in enumerate(keys):
        running(c, app, key, memory, age=count - i)
    return keys


def reload(c: Cluster, text: str) -> None:
    c.ctx.apply(UpdateConfig(c.rm_id, load_config(text).config))


def preempted(c: Cluster) -> list[tuple[str, str, str]]:
    """(app, key, message) of every release by quota (or other) preemption since the last drain."""
    return [
        (r.app_id, r.key, r.message)
        for b in c.ctx.drain_results()
        for r in b.released
        if r.termination == Termination.PREEMPTED_BY_SCHEDULER
    ]


def keys(victims: list[tuple[str, str, str]]) -> list[str]:
    return [key for _, key, _ in victims]


def advance(c: Cluster, seconds: float) -> list[tuple[str, str, str]]:
    """Let time pass, fire what is due; the preempted (app, key, message)."""
    c.clock.advance(seconds)
    c.ctx.tick()
    return preempted(c)


def confirm(c: Cluster, victims: list[tuple[str, str, str]]) -> None:
    """The RM releases the victims, as it does once their pods are gone."""
    for app, key, _ in victims:
        c.ctx.apply(UpdateAllocations(c.rm_id, releases=(ReleaseRequest(c.pname(), app, key),)))


def queue(c: Cluster, name: str) -> Queue:
    found = c.partition.find_queue(name)
    assert found is not None, name
    return found


def leaf_cluster(
    max: dict[str, int], guaranteed: dict[str, int] | None = None, delay: str = "10s"
) -> Cluster:
    """root.leaf with application "a", its max as given; lower it with lower_leaf()."""
    c = cluster(config(q("leaf", max=max, guaranteed=guaranteed, delay=delay)))
    c.app("a", "root.leaf")
    return c


def lower_leaf(
    c: Cluster, max: dict[str, int], guaranteed: dict[str, int] | None = None, delay: str = "10s"
) -> None:
    reload(c, config(q("leaf", max=max, guaranteed=guaranteed, delay=delay)))
    preempted(c)  # drop the confirmations of the existing allocations


# 1. Preemptable resource calculation ----------------------------------------------------------

# The document's table for root.a.b: (current max, new max, usage, preemptable). The current max
# plays no part in the calculation; it is kept so that the rows read as in the document.
TABLE = [
    ({M: 100 * G}, {M: 50 * G}, {M: 80 * G}, {M: 30 * G}),
    (None, {M: 50 * G}, {M: 80 * G}, {M: 30 * G}),
    ({M: 100 * G, CPU: 100}, {M: 50 * G, CPU: 50}, {M: 80 * G, CPU: 80}, {M: 30 * G, CPU: 30}),
    ({M: 100 * G, CPU: 100}, {M: 200 * G, CPU: 50}, {M: 100 * G, CPU: 80}, {CPU: 30}),
    ({M: 100 * G}, {M: 100 * G, CPU: 100}, {M: 50 * G, CPU: 500}, {CPU: 400}),
    ({M: 100 * G, CPU: 100}, {M: 50 * G}, {M: 80 * G, CPU: 100}, {M: 30 * G}),
    ({M: 100 * G}, {CPU: 100}, {M: 100 * G, CPU: 500}, {CPU: 400}),
]


@pytest.mark.parametrize(
    ("current_max", "new_max", "usage", "expected"), TABLE, ids=[f"row{i + 1}" for i in range(len(TABLE))]
)
def test_preemptable_resource_table(
    current_max: dict[str, int] | None,
    new_max: dict[str, int],
    usage: dict[str, int],
    expected: dict[str, int],
) -> None:
    result = quota.preemptable(Resource(usage), Resource(new_max))
    # Exactly the types to preempt: no zero or negative entries for the types within the max.
    assert result.as_dict() == expected


def test_no_new_max_means_nothing_to_preempt() -> None:
    assert quota.preemptable(Resource({M: 80 * G, CPU: 500}), None).as_dict() == {}


@pytest.mark.parametrize("usage", [{M: 40 * G, CPU: 10}, {M: 50 * G, CPU: 50}, {}])
def test_usage_within_the_max_means_nothing_to_preempt(usage: dict[str, int]) -> None:
    result = quota.preemptable(Resource(usage), Resource({M: 50 * G, CPU: 50}))
    assert result.as_dict() == {}
    assert result.is_zero()


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
    assert Resource(leaf.quota_outcome["achieved"]).is_zero()  # type: ignore[arg-type]
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
    lower_leaf(c, {M: 0})  # everything must go: the releases come in the order chosen
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
        return Allocation(key, "a", "p", Resource({M: 1}), node_id="n", **kw)

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


def _parent_cluster(p_max: int, p_delay: str = "10s", **kw: Any) -> Cluster:
    """root.p with a (guaranteed 20), b (no guarantee), c (empty); applications a, b, c."""
    c = cluster(_parent_config(p_max, p_delay, **kw))
    for app in "abc":
        c.app(app, f"root.p.{app}")
    return c


def _parent_config(
    p_max: int,
    p_delay: str = "10s",
    p_props: dict[str, str] | None = None,
    child_props: dict[str, str] | None = None,
    **kw: Any,
) -> str:
    return config(
        q("p", max={M: p_max}, delay=p_delay, props=p_props, children=[
            q("a", guaranteed={M: 20}, props=child_props),
            q("b", props=child_props),
            q("c", props=child_props),
        ]),
        **kw,
    )  # fmt: skip


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
    assert c.partition.quota_victims == {}
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
    assert c.partition.quota_victims == {}


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
    assert event.resource == {"memory": 4000}


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
