"""Hypothesis state machine over the cluster context: random RM traffic, invariants after every step.

- no node holds more than its capacity;
- every queue's usage equals the sum of its allocations, and a parent's the sum of its children's
  (also after allocations are resized in place);
- no queue is over its max;
- every ask the RM sent is in exactly one state (pending, allocated, or gone) and agrees with the
  model of what the RM did;
- after a scheduling cycle, no pending ask fits anywhere it may go (a cycle allocates all that fits).
"""

from __future__ import annotations

from hypothesis import HealthCheck, event, settings
from hypothesis import strategies as st
from hypothesis.stateful import RuleBasedStateMachine, invariant, precondition, rule

from core.objects.queue import Queue
from core.resources import Resource, sum_resources
from core.scheduler.commands import AppRemove, NodeAction, UpdateApplications
from tests.unit.domain_helpers import Cluster

CONFIG = """
partitions:
  - name: default
    queues:
      - name: root
        submitacl: "*"
        queues:
          - name: small
            resources: {max: {memory: 60}}
          - name: big
            queues:
              - name: x
              - name: y
                resources: {max: {memory: 200, vcore: 40}}
"""
LEAVES = ("root.small", "root.big.x", "root.big.y")

sizes = st.fixed_dictionaries({"memory": st.integers(1, 40), "vcore": st.integers(0, 8)})
capacities = st.fixed_dictionaries({"memory": st.integers(10, 120), "vcore": st.integers(2, 32)})


class SchedulerMachine(RuleBasedStateMachine):
    def __init__(self) -> None:
        super().__init__()
        self.c = Cluster(CONFIG)
        self.node_ids: list[str] = []
        self.app_ids: list[str] = []
        self.state: dict[tuple[str, str], str] = {}  # (app, key) -> pending | allocated | gone
        self.counter = 0
        self.scheduled_since_change = False

    def _next(self, prefix: str) -> str:
        self.counter += 1
        return f"{prefix}{self.counter}"

    def _sync_results(self) -> None:
        for batch in self.c.ctx.drain_results():
            for alloc in batch.new_allocations:
                assert self.state[(alloc.application_id, alloc.key)] == "pending", "allocated twice"
                self.state[(alloc.application_id, alloc.key)] = "allocated"
            for rel in batch.released:
                assert self.state[(rel.app_id, rel.key)] == "allocated"
                self.state[(rel.app_id, rel.key)] = "gone"
            for rej in batch.rejected_allocations:
                assert False, f"unexpected rejection: {rej}"

    def _changed(self) -> None:
        self.scheduled_since_change = False
        self._sync_results()

    @rule(capacity=capacities, drain=st.booleans())
    def add_node(self, capacity: dict[str, int], drain: bool) -> None:
        node_id = self._next("n")
        self.c.node(node_id, capacity, NodeAction.CREATE_DRAIN if drain else NodeAction.CREATE)
        self.node_ids.append(node_id)
        self._changed()

    @precondition(lambda self: self.node_ids)
    @rule(data=st.data())
    def decommission(self, data: st.DataObject) -> None:
        node_id = data.draw(st.sampled_from(self.node_ids))
        self.node_ids.remove(node_id)
        self.c.node_action(node_id, NodeAction.DECOMMISSION)
        self._changed()

    @precondition(lambda self: self.node_ids)
    @rule(data=st.data(), drain=st.booleans())
    def toggle_drain(self, data: st.DataObject, drain: bool) -> None:
        node_id = data.draw(st.sampled_from(self.node_ids))
        node = self.c.partition.nodes[node_id]
        if drain:
            self.c.node_action(node_id, NodeAction.DRAIN)
        elif not node.schedulable:
            self.c.node_action(node_id, NodeAction.DRAIN_TO_SCHEDULABLE)
        self._changed()

    @rule(queue=st.sampled_from(LEAVES))
    def add_app(self, queue: str) -> None:
        app_id = self._next("app")
        self.c.app(app_id, queue)
        self.app_ids.append(app_id)
        self._changed()

    @precondition(lambda self: self.app_ids)
    @rule(data=st.data(), size=sizes, priority=st.integers(-5, 5))
    def add_ask(self, data: st.DataObject, size: dict[str, int], priority: int) -> None:
        app_id = data.draw(st.sampled_from(self.app_ids))
        key = self._next("k")
        self.c.ask(app_id, key, size, priority=priority)
        self.state[(app_id, key)] = "pending"
        self._changed()

    @precondition(lambda self: any(s in ("pending", "allocated") for s in self.state.values()))
    @rule(data=st.data())
    def release(self, data: st.DataObject) -> None:
        live = sorted(k for k, s in self.state.items() if s in ("pending", "allocated"))
        app_id, key = data.draw(st.sampled_from(live))
        was = self.state[(app_id, key)]
        self.c.release(app_id, key)
        if was == "pending":
            self.state[(app_id, key)] = "gone"  # an ask is withdrawn without a release message
        self._changed()

    @precondition(lambda self: self.app_ids)
    @rule(data=st.data())
    def remove_app(self, data: st.DataObject) -> None:
        app_id = data.draw(st.sampled_from(self.app_ids))
        self.app_ids.remove(app_id)
        self.c.ctx.apply(UpdateApplications(self.c.rm_id, removes=(AppRemove(app_id, self.c.pname()),)))
        for (a, k), s in list(self.state.items()):
            if a == app_id and s == "pending":
                self.state[(a, k)] = "gone"
        self._changed()

    @precondition(lambda self: any(s == "allocated" for s in self.state.values()))
    @rule(data=st.data(), size=sizes)
    def resize_in_place(self, data: st.DataObject, size: dict[str, int]) -> None:
        """The RM sends a running allocation again at a new size (Kubernetes' in-place resize). The core
        takes any size; this RM resizes only where it fits the node and the queues' maxes, so that the
        invariants on capacity and maxes stay the RM's promise, and the bookkeeping is what is tested."""
        app_id, key = data.draw(st.sampled_from(sorted(k for k, s in self.state.items() if s == "allocated")))
        app = self.c.partition.applications[app_id]
        alloc = app.allocations[key]
        node = self.c.partition.nodes[alloc.node_id]
        new = Resource(size)
        if not new.fits_in(node.available + alloc.resource):
            return
        for queue in app.queue.path_to_root():
            after = queue.allocated - alloc.resource + new
            if queue.max is not None and not after.fits_in_limit(queue.max):
                return
        self.c.ask(app_id, key, size, node_id=alloc.node_id)
        assert app.allocations[key].resource == new
        event("an allocation resized in place")
        self._changed()

    @rule()
    def schedule(self) -> None:
        self.c.schedule(10_000)
        self._sync_results()
        self.scheduled_since_change = True

    # Invariants -------------------------------------------------------------------------------
    @invariant()
    def no_node_over_capacity(self) -> None:
        for node in self.c.partition.nodes.values():
            used = node.allocated + node.occupied
            assert used.fits_in(node.capacity), f"{node.node_id}: {used} > {node.capacity}"
            assert node.allocated == sum_resources(a.resource for a in node.allocations.values())

    @invariant()
    def incremental_caches_match_a_naive_recomputation(self) -> None:
        part = self.c.partition
        for node in part.nodes.values():
            assert node.available == node.capacity - node.allocated - node.occupied, node.node_id
        # The node index holds every node in the order a full sort by its policy would give.
        naive = sorted(part.nodes.values(), key=lambda n: (n.usage_share(part.node_index.weights), n.node_id))
        assert [n.node_id for n in part.node_index] == [n.node_id for n in naive]
        for app in part.applications.values():
            assert app.pending == sum_resources(a.resource for a in app.asks.values()), app.app_id
            assert app.allocated == sum_resources(a.resource for a in app.allocations.values()), app.app_id

    @invariant()
    def queue_usage_is_the_sum_of_allocations(self) -> None:
        def check(queue: Queue) -> None:
            if queue.is_leaf:
                expected = sum_resources(
                    a.resource for app in queue.applications.values() for a in app.allocations.values()
                )
                pending = sum_resources(
                    a.resource for app in queue.applications.values() for a in app.asks.values()
                )
            else:
                for child in queue.children.values():
                    check(child)
                expected = sum_resources(ch.allocated for ch in queue.children.values())
                pending = sum_resources(ch.pending for ch in queue.children.values())
            assert queue.allocated == expected, queue.full_name
            assert queue.pending == pending, queue.full_name
            assert not queue.allocated.has_negative()

        check(self.c.partition.root)

    @invariant()
    def no_queue_over_max(self) -> None:
        for queue in self.c.partition.queues.values():
            if queue.max is not None and queue is not self.c.partition.root:
                assert queue.allocated.fits_in_limit(queue.max), queue.full_name

    @invariant()
    def every_ask_in_exactly_one_state(self) -> None:
        part = self.c.partition
        for (app_id, key), expected in self.state.items():
            app = part.applications.get(app_id)
            in_asks = app is not None and key in app.asks
            in_allocs = app is not None and key in app.allocations
            assert not (in_asks and in_allocs)
            actual = "pending" if in_asks else "allocated" if in_allocs else "gone"
            assert actual == expected, (app_id, key, actual, expected)
            if in_allocs:
                assert app is not None
                alloc = app.allocations[key]
                assert key in part.nodes[alloc.node_id].allocations

    @invariant()
    def a_cycle_leaves_nothing_that_fits(self) -> None:
        if not self.scheduled_since_change:
            return
        part = self.c.partition
        for app in part.applications.values():
            for ask in app.asks.values():
                if not app.queue.fits_headroom(ask.resource):
                    continue
                for node in part.nodes.values():
                    assert not (node.schedulable and node.fits(ask.resource)), (ask.key, node.node_id)


SchedulerMachine.TestCase.settings = settings(
    max_examples=60, stateful_step_count=40, deadline=None, suppress_health_check=[HealthCheck.too_slow]
)
TestSchedulerInvariants = SchedulerMachine.TestCase
