"""Hypothesis state machine for inter-queue preemption: random asks (some allowed to preempt), time,
scheduling, and an RM that confirms preemptions late, in any order, or finishes tasks on its own.

After every step:
- no queue was pushed below its guarantee by a preemption (checked the moment victims are chosen);
- every preempted allocation was released to its RM exactly once, and its room stays counted as
  `preempting` on its queues until the RM confirms;
- no node is over its capacity, no queue over its max; no ask is allocated twice;
- every preemption leads to its ask being placed: once no victim awaits its release, the next cycle
  places every ask that preempted, whatever came meanwhile (new asks, bursts, finished tasks: the
  node and the headroom its victims free are held for it). An ask may wait for another ask's victims
  too, when their room is what it counts on under a shared max.

The second machine runs the same traffic under a parent with a max on two roomy nodes, so that the
parent's max, not node room, is what blocks an ask and what preemption must make room under.
"""

from __future__ import annotations

import textwrap

from hypothesis import HealthCheck, event, settings
from hypothesis import strategies as st
from hypothesis.stateful import RuleBasedStateMachine, initialize, invariant, precondition, rule

from core.objects.allocation import Allocation
from core.objects.queue import Queue
from core.resources import Resource, sum_resources
from core.scheduler.commands import ReleaseRequest, UpdateAllocations
from core.scheduler.results import Termination
from tests.unit.domain_helpers import Cluster

CONFIG = """
partitions:
  - name: default
    queues:
      - name: root
        submitacl: "*"
        queues:
          - name: a
            resources: {guaranteed: {memory: 60}}
            properties: {preemption.delay: 1ms}
          - name: b
            resources: {guaranteed: {memory: 40}}
            properties: {preemption.delay: 1ms}
          - name: c
            properties: {preemption.delay: 1ms}
"""
LEAVES = ("root.a", "root.b", "root.c")


# The same three leaves under a parent with a max.
_HEAD, _LEAVES = CONFIG.split("        queues:\n", 1)
PARENT_MAX = (
    _HEAD + "        queues:\n          - name: p\n            resources: {max: {memory: 100}}\n"
    "            queues:\n" + textwrap.indent(_LEAVES, "    ")
)


class PreemptionMachine(RuleBasedStateMachine):
    config = CONFIG
    leaves = LEAVES
    nodes = {"n0": 100}  # one node: the cluster fills quickly and preemption matters

    def __init__(self) -> None:
        super().__init__()
        self.c = Cluster(self.config)
        self.apps: list[str] = []
        self.state: dict[tuple[str, str], str] = {}  # pending | allocated | preempting | gone
        self.counter = 0
        for node_id, memory in self.nodes.items():
            self.c.node(node_id, {"memory": memory})
        self.c.ctx.drain_results()

    def _sync(self) -> None:
        part = self.c.partition
        for batch in self.c.ctx.drain_results():
            for alloc in batch.new_allocations:
                assert self.state[alloc.ref] == "pending", f"{alloc.ref} allocated twice"
                self.state[alloc.ref] = "allocated"
            for rel in batch.released:
                ref = (rel.app_id, rel.key)
                if rel.termination == Termination.PREEMPTED_BY_SCHEDULER:
                    assert self.state[ref] == "allocated", f"{ref} preempted while {self.state[ref]}"
                    self.state[ref] = "preempting"
                    event("a victim chosen")
                    self._check_guarantee_kept(part.applications[ref[0]].allocations[ref[1]])
                else:
                    assert self.state[ref] in ("allocated", "preempting")
                    self.state[ref] = "gone"

    def _check_guarantee_kept(self, victim: Allocation) -> None:
        queue = self.c.partition.applications[victim.application_id].queue
        for name, guaranteed in (queue.guaranteed or {}).items():
            if victim.resource.get(name) > 0:
                left = queue.allocated.get(name) - queue.preempting.get(name)
                assert left >= guaranteed, f"{queue.full_name} pushed to {left} {name}, below {guaranteed}"

    @initialize(
        busy=st.integers(0, len(LEAVES) - 1), tasks=st.integers(0, 10), want=st.sampled_from([0, 20, 40])
    )
    def start_with_one_busy_queue(self, busy: int, tasks: int, want: int) -> None:
        """An application in every leaf, one of them running up to ten tasks of 10, and another leaf
        asking for room (and allowed to preempt for it): preemption is a step or two away."""
        for queue in range(len(self.leaves)):
            self.add_app(queue)
        self._add_asks(self.apps[busy], tasks, 10, preempts=False)
        self._add_asks(self.apps[(busy + 1) % len(self.leaves)], want // 20, 20, preempts=True)

    @rule(queue=st.integers(0, len(LEAVES) - 1))
    def add_app(self, queue: int) -> None:
        self.counter += 1
        app_id = f"app{self.counter}"
        self.c.app(app_id, self.leaves[queue])
        self.apps.append(app_id)
        self._sync()

    @precondition(lambda self: self.apps)
    @rule(
        data=st.data(),
        memory=st.sampled_from([10, 20, 30]),
        priority=st.integers(0, 2),
        preempts=st.sampled_from([True, True, False]),
    )
    def add_ask(self, data: st.DataObject, memory: int, priority: int, preempts: bool) -> None:
        app_id = data.draw(st.sampled_from(self.apps))
        self.counter += 1
        ask = Allocation(
            f"k{self.counter}", app_id, self.c.pname(), Resource({"memory": memory}), priority=priority,
            allow_preempt_other=preempts, allow_preempt_self=True,
        )  # fmt: skip
        self.c.ctx.apply(UpdateAllocations(self.c.rm_id, allocations=(ask,)))
        self.state[ask.ref] = "pending"
        self._sync()

    @precondition(lambda self: self.apps)
    @rule(data=st.data(), count=st.integers(3, 6))
    def a_burst_that_fills_a_queue(self, data: st.DataObject, count: int) -> None:
        """Several asks of one application at once (that may not preempt): a queue taking the room
        that the other queues' asks then want back."""
        self._add_asks(data.draw(st.sampled_from(self.apps)), count, 20, preempts=False)

    def _add_asks(self, app_id: str, count: int, memory: int, preempts: bool) -> None:
        asks = []
        for _ in range(count):
            self.counter += 1
            asks.append(Allocation(f"k{self.counter}", app_id, self.c.pname(), Resource({"memory": memory}),
                                   allow_preempt_other=preempts, allow_preempt_self=True))  # fmt: skip
            self.state[asks[-1].ref] = "pending"
        self.c.ctx.apply(UpdateAllocations(self.c.rm_id, allocations=tuple(asks)))
        self.c.schedule()
        self._sync()

    @rule(seconds=st.floats(0.0, 3.0))
    def time_passes(self, seconds: float) -> None:
        self.c.clock.advance(seconds)

    @rule()
    def schedule(self) -> None:
        settled = "preempting" not in self.state.values()
        held = [
            ask.ref for app in self.c.partition.applications.values() for ask in app.asks.values() if ask.held
        ]
        self.c.schedule()
        self._sync()
        if settled:
            for ref in held:
                # Placed: allocated, or placed and then, in the same cycle, taken as a victim by an ask of
                # a queue below its guarantee (its own queue being above its guarantee once it ran).
                assert self.state[ref] in ("allocated", "preempting"), (
                    f"{ref} preempted, its victims are gone, it is not placed"
                )
                event("a preempting ask placed once the victims were gone")

    @precondition(lambda self: any(s == "preempting" for s in self.state.values()))
    @rule(data=st.data())
    def rm_confirms_a_preemption(self, data: st.DataObject) -> None:
        ref = data.draw(st.sampled_from(sorted(r for r, s in self.state.items() if s == "preempting")))
        self._release(ref)

    @precondition(lambda self: any(s == "allocated" for s in self.state.values()))
    @rule(data=st.data())
    def a_task_finishes(self, data: st.DataObject) -> None:
        ref = data.draw(st.sampled_from(sorted(r for r, s in self.state.items() if s == "allocated")))
        self._release(ref)

    @precondition(lambda self: any(s == "preempting" for s in self.state.values()))
    @rule(data=st.data(), memory=st.sampled_from([10, 20]))
    def a_small_ask_while_victims_are_released(self, data: st.DataObject, memory: int) -> None:
        """Room that is free now, with the victims still running, but is the preempting ask's once
        they are gone: an ask arriving meanwhile must not take it."""
        app_id = data.draw(st.sampled_from(self.apps))
        self.counter += 1
        ask = Allocation(f"k{self.counter}", app_id, self.c.pname(), Resource({"memory": memory}))
        self.c.ctx.apply(UpdateAllocations(self.c.rm_id, allocations=(ask,)))
        self.state[ask.ref] = "pending"
        self.c.schedule()
        self._sync()

    @precondition(lambda self: any(s == "preempting" for s in self.state.values()))
    @rule()
    def rm_confirms_every_preemption_then_schedules(self) -> None:
        """The RM catches up: every victim released, then a cycle (which must place what preempted)."""
        for ref in sorted(r for r, s in self.state.items() if s == "preempting"):
            self._release(ref)
        self.schedule()

    def _release(self, ref: tuple[str, str]) -> None:
        self.c.ctx.apply(UpdateAllocations(self.c.rm_id, releases=(ReleaseRequest(self.c.pname(), *ref),)))
        self._sync()
        assert self.state[ref] == "gone"

    # Invariants -------------------------------------------------------------------------------
    @invariant()
    def preempting_is_what_awaits_confirmation(self) -> None:
        part = self.c.partition

        def check(queue: Queue) -> Resource:
            if queue.is_leaf:
                total = sum_resources(
                    a.resource
                    for app in queue.applications.values()
                    for a in app.allocations.values()
                    if a.releasing
                )
            else:
                total = sum_resources(check(child) for child in queue.children.values())
            assert queue.preempting == total, queue.full_name
            return total

        check(part.root)
        releasing = {
            a.ref for app in part.applications.values() for a in app.allocations.values() if a.releasing
        }
        assert releasing == {r for r, s in self.state.items() if s == "preempting"}

    @invariant()
    def held_is_what_the_pending_preempting_asks_hold(self) -> None:
        part = self.c.partition
        for queue in part.queues.values():
            asks = (
                ask for app in part.applications.values() if queue in app.queue.path_to_root()
                for ask in app.asks.values() if ask.held
            )  # fmt: skip
            assert queue.held == sum_resources(a.resource for a in asks), queue.full_name

    @invariant()
    def no_node_over_capacity_and_no_queue_over_its_max(self) -> None:
        for node in self.c.partition.nodes.values():
            assert (node.allocated + node.occupied).fits_in(node.capacity), node.node_id
        for queue in self.c.partition.queues.values():
            if queue.max is not None and queue.parent is not None:
                assert queue.allocated.fits_in_limit(queue.max), queue.full_name


class ParentMaxMachine(PreemptionMachine):
    config = PARENT_MAX
    leaves = ("root.p.a", "root.p.b", "root.p.c")
    nodes = {"n0": 100, "n1": 100}  # room on the nodes: the parent's max is what blocks


ParentMaxMachine.TestCase.settings = settings(
    max_examples=300, stateful_step_count=50, deadline=None, suppress_health_check=[HealthCheck.too_slow]
)
TestParentMax = ParentMaxMachine.TestCase

PreemptionMachine.TestCase.settings = settings(
    max_examples=200, stateful_step_count=50, deadline=None, suppress_health_check=[HealthCheck.too_slow]
)
TestPreemptionInvariants = PreemptionMachine.TestCase
