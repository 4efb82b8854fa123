"""A cycle sorts each leaf's applications once and moves only the one it allocated for, and drops
those with nothing left to try in it (asks tried, or held by maxapplications: `other` runs two at most).
That must give the same allocations, in the same order, as sorting afresh before every allocation: the
same traffic scheduled by one cycle with a large budget, and by cycles of one allocation each, must
agree."""

from __future__ import annotations

from hypothesis import given, settings
from hypothesis import strategies as st

from core.objects.allocation import Allocation
from core.scheduler.commands import AppRemove, UpdateApplications
from tests.unit.domain_helpers import Cluster

CONFIG = """
partitions:
  - name: default
    queues:
      - name: root
        submitacl: "*"
        queues:
          - name: leaf
            properties: {application.sort.policy: %(policy)s, application.sort.priority: %(priority)s}
            resources: {guaranteed: {memory: 40, vcore: 10}}
          - name: other
            maxapplications: 2
"""

apps = st.lists(
    st.tuples(
        st.sampled_from(["root.leaf", "root.other"]),
        st.lists(st.tuples(st.integers(1, 6), st.integers(-3, 3)), min_size=1, max_size=6),  # (memory, prio)
    ),
    min_size=1,
    max_size=8,
)


def _run(
    policy: str, priority: str, spec: list[tuple[str, list[tuple[int, int]]]], one_by_one: bool
) -> list[str]:
    c = Cluster(CONFIG % {"policy": policy, "priority": priority})
    c.node("n1", {"memory": 30, "vcore": 100})
    for i, (queue, asks) in enumerate(spec):
        c.clock.advance(1)  # distinct submission times
        c.app(f"app{i}", queue)
        for j, (memory, prio) in enumerate(asks):
            c.ask(f"app{i}", f"a{i}-{j}", {"memory": memory, "vcore": 1}, priority=prio)
    order: list[Allocation] = []
    if one_by_one:
        while c.schedule(1):
            pass
    else:
        c.schedule(10_000)
    for batch in c.ctx.drain_results():
        order.extend(batch.new_allocations)
    return [a.key for a in order]


@settings(max_examples=150, deadline=None)
@given(spec=apps, policy=st.sampled_from(["fifo", "fair"]), priority=st.sampled_from(["true", "false"]))
def test_one_sort_per_cycle_allocates_as_a_fresh_sort_before_every_allocation(
    spec: list[tuple[str, list[tuple[int, int]]]], policy: str, priority: str
) -> None:
    assert _run(policy, priority, spec, one_by_one=False) == _run(policy, priority, spec, one_by_one=True)


# Each leaf keeps its applications with pending asks (Queue.pending_apps), which is all a cycle sorts.
# Whatever asks come, are placed or withdrawn, and whatever applications come and go, it must hold
# exactly the leaf's applications that have a pending ask.
steps = st.lists(
    st.one_of(
        st.tuples(st.just("app"), st.integers(0, 5), st.sampled_from(["root.leaf", "root.other"])),
        st.tuples(st.just("ask"), st.integers(0, 5), st.integers(1, 12)),
        st.tuples(st.just("schedule"), st.integers(0, 3), st.just(0)),
        st.tuples(st.just("release"), st.integers(0, 5), st.integers(0, 20)),
        st.tuples(st.just("remove"), st.integers(0, 5), st.just(0)),
        st.tuples(st.just("node"), st.integers(0, 0), st.integers(5, 40)),
    ),
    max_size=40,
)


@settings(max_examples=200, deadline=None)
@given(steps=steps)
def test_each_leaf_keeps_exactly_its_applications_with_pending_asks(
    steps: list[tuple[str, int, object]],
) -> None:
    c = Cluster(CONFIG % {"policy": "fair", "priority": "true"})
    c.node("n0", {"memory": 20, "vcore": 100})
    made: dict[str, list[str]] = {}  # application -> its ask keys, in order
    nodes = 1
    for kind, i, arg in steps:
        app_id = f"app{i}"
        known = app_id in c.partition.applications
        if kind == "app" and not known and app_id not in made:
            c.app(app_id, str(arg))
            made[app_id] = []
        elif kind == "ask" and known:
            key = f"{app_id}-{len(made[app_id])}"
            made[app_id].append(key)
            c.ask(app_id, key, {"memory": int(str(arg)), "vcore": 1})
        elif kind == "schedule":
            c.schedule(i or 10_000)
        elif kind == "release" and known and made[app_id]:
            c.release(app_id, made[app_id][int(str(arg)) % len(made[app_id])])  # an ask or an allocation
        elif kind == "remove" and known:  # the RM removes the application
            c.ctx.apply(UpdateApplications(c.rm_id, removes=(AppRemove(app_id, c.pname()),)))
            assert app_id not in c.partition.applications
        elif kind == "node":
            c.node(f"n{nodes}", {"memory": int(str(arg)), "vcore": 100})
            nodes += 1
        c.ctx.drain_results()
        for leaf in (c.partition.tree.find(name) for name in ("root.leaf", "root.other")):
            if leaf is None:
                continue
            naive = {a.app_id for a in leaf.applications.values() if a.has_ready()}  # not all parked
            assert set(leaf.pending_apps) == naive
            assert all(leaf.pending_apps[a] is leaf.applications[a] for a in naive)
