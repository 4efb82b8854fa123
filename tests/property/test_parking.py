"""Parking (core.objects.parking) skips asks no cycle could place until something changes that could
let them run. It must never change what gets scheduled: the same traffic, with parking and with it
off (every pending ask tried again every cycle), must allocate the same asks to the same nodes in the
same order, reserve the same nodes and preempt the same victims.

And each leaf's `pending_apps` (what a cycle sorts) must hold exactly its applications with an ask
that is not parked."""

from __future__ import annotations

from hypothesis import example, given, settings
from hypothesis import strategies as st

from core.objects.allocation import Allocation
from core.resources import Resource
from core.scheduler.commands import NodeAction, UpdateAllocations
from core.scheduler.results import Termination
from tests.unit.domain_helpers import Cluster

CONFIG = """
partitions:
  - name: default
    preemption: {enabled: %(preemption)s}
    queues:
      - name: root
        submitacl: "*"
        queues:
          - name: a
            resources: {guaranteed: {memory: 20}, max: {memory: 40}}
            properties: {preemption.delay: 5s}
          - name: b
            resources: {max: {memory: 30}}
"""
APPS = (("app-a", "root.a"), ("app-b", "root.b"), ("app-b2", "root.b"))

steps = st.lists(
    st.one_of(
        st.tuples(st.just("ask"), st.integers(0, 2), st.integers(1, 25), st.booleans()),
        st.tuples(st.just("release"), st.integers(0, 2), st.integers(0, 9), st.just(False)),
        st.tuples(st.just("node"), st.integers(0, 3), st.integers(5, 30), st.just(False)),
        st.tuples(st.just("resize"), st.integers(0, 3), st.integers(5, 30), st.just(False)),
        st.tuples(st.just("drain"), st.integers(0, 3), st.just(0), st.booleans()),
        st.tuples(st.just("schedule"), st.integers(1, 3), st.just(0), st.just(False)),
        st.tuples(st.just("ask"), st.integers(0, 2), st.integers(1, 25), st.booleans()),
        st.tuples(st.just("release"), st.integers(0, 2), st.integers(0, 9), st.just(False)),
        st.tuples(st.just("schedule"), st.integers(1, 3), st.just(0), st.just(False)),
        st.tuples(st.just("time"), st.sampled_from([0.5, 1.0, 2.0, 2.5, 6.0]), st.just(0), st.just(False)),
    ),
    min_size=10,
    max_size=40,
)


def _run(spec: list[tuple[str, float, int, bool]], preemption: bool, parking: bool) -> list[object]:
    c = Cluster(CONFIG % {"preemption": "true" if preemption else "false"})
    c.partition.parking.enabled = parking
    for app_id, queue in APPS:
        c.app(app_id, queue)
    # Two nodes to start with, so an ask can fit the cluster's room but no one node's (fragments).
    c.node("n0", {"memory": 20, "vcore": 100})
    c.node("n1", {"memory": 12, "vcore": 100})
    nodes = {"n0", "n1"}
    made: dict[str, list[str]] = {app_id: [] for app_id, _ in APPS}
    seen: list[object] = []
    for kind, i, arg, flag in spec:
        index = int(i)
        if kind == "ask" and sum(map(len, made.values())) < 9:  # under the cycle's 10 preemption attempts
            app_id = APPS[index][0]
            key = f"{app_id}-{len(made[app_id])}"
            made[app_id].append(key)
            ask = Allocation(
                key, app_id, c.pname(), Resource({"memory": arg, "vcore": 1}),
                allow_preempt_other=flag, allow_preempt_self=True,
            )  # fmt: skip
            c.ctx.apply(UpdateAllocations(c.rm_id, allocations=(ask,)))
        elif kind == "release" and made[APPS[index][0]]:
            app_id = APPS[index][0]
            key = made[app_id][arg % len(made[app_id])]
            app = c.partition.applications[app_id]
            if key in app.asks or key in app.allocations:
                c.release(app_id, key)  # an ask withdrawn, or an allocation done (or a victim gone)
        elif kind == "node" and f"n{index}" not in nodes:
            c.node(f"n{index}", {"memory": arg, "vcore": 100})
            nodes.add(f"n{index}")
        elif kind == "resize" and f"n{index}" in nodes:
            c.node_action(f"n{index}", NodeAction.UPDATE, {"memory": arg, "vcore": 100})
        elif kind == "drain" and f"n{index}" in nodes:
            node = c.partition.nodes[f"n{index}"]
            if flag and node.schedulable:
                c.node_action(f"n{index}", NodeAction.DRAIN)
            elif not flag and not node.schedulable:
                c.node_action(f"n{index}", NodeAction.DRAIN_TO_SCHEDULABLE)
        elif kind == "schedule":
            for _ in range(index):
                c.schedule()
        elif kind == "time":
            c.clock.advance(i)
        c.schedule()  # as the engine does after every batch of commands
        for batch in c.ctx.drain_results():
            seen.extend((a.key, a.node_id) for a in batch.new_allocations)
            seen.extend(
                ("preempted", r.app_id, r.key)
                for r in batch.released
                if r.termination == Termination.PREEMPTED_BY_SCHEDULER
            )
        seen.append(sorted(c.partition.reservations.items()))
        for name in ("root.a", "root.b"):
            leaf = c.partition.tree.find(name)
            assert leaf is not None
            ready = {a.app_id for a in leaf.applications.values() if a.has_ready()}
            assert set(leaf.pending_apps) == ready
            for app in leaf.applications.values():
                assert set(app.asks) == {a.key for a in app.ready_asks()} | set(app.parked)
                assert all(a.ref in c.partition.parking for a in app.parked.values())
    return seen


@settings(max_examples=500, deadline=None)
@given(spec=steps, preemption=st.booleans())
# The preemption delay passing exactly on a tick: the parked ask's timer is due at that time, not after.
@example(
    spec=[("ask", 1, 8, False), ("ask", 1, 8, False), ("schedule", 1, 0, False), ("ask", 0, 1, False),
          ("ask", 0, 16, True), ("schedule", 1, 0, False), ("time", 2.5, 0, False), ("time", 2.5, 0, False)],
    preemption=True,
)  # fmt: skip
# A reservation served at a cycle's start gives its node back: an ask parked until then reserves it in
# the same cycle.
@example(
    spec=[("resize", 1, 5, False), ("ask", 0, 3, False), ("ask", 0, 6, False), ("ask", 0, 6, False),
          ("ask", 0, 6, False), ("drain", 1, 0, True), ("ask", 0, 12, False), ("resize", 1, 7, False),
          ("time", 2.5, 0, False), ("release", 0, 1, False)],
    preemption=False,
)  # fmt: skip
def test_parking_schedules_exactly_what_trying_every_ask_every_cycle_does(
    spec: list[tuple[str, float, int, bool]], preemption: bool
) -> None:
    assert _run(spec, preemption, parking=True) == _run(spec, preemption, parking=False)
