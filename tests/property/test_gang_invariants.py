"""Hypothesis state machine over gang scheduling: random gangs, real tasks, RM confirmations, node
removals, finished tasks and time, with these invariants after every step:

- usage is kept in step everywhere: a node holds the sum of what is on it and never more than its
  capacity; an application and its queue hold its allocations (placeholders and real tasks), and a
  gang its allocated placeholders;
- every task the RM sent is in exactly one place: pending, allocated, in a placeholder's stead
  waiting for the RM's confirmation, or gone; and what the RM was told agrees with that;
- per task group: placeholders asked = replaced + released + still pending or allocated;
- no real task of a gang runs (or is placed) before its gang has all its placeholders or timed out.
"""

from __future__ import annotations

from hypothesis import HealthCheck, settings
from hypothesis import strategies as st
from hypothesis.stateful import RuleBasedStateMachine, invariant, precondition, rule

from core.objects.allocation import Allocation
from core.objects.application import AppState
from core.objects.gang import GangStyle
from core.resources import Resource, sum_resources
from core.scheduler.commands import (
    AppAdd,
    AppRemove,
    NodeAction,
    ReleaseRequest,
    UpdateAllocations,
    UpdateApplications,
)
from core.scheduler.results import Termination
from tests.unit.domain_helpers import Cluster

CONFIG = """
partitions:
  - name: default
    queues:
      - name: root
        submitacl: "*"
        queues:
          - name: open
          - name: capped
            resources: {max: {memory: 12}}
"""
TIMEOUT_MS = 10_000
MEMBER = {"memory": 2}


class GangMachine(RuleBasedStateMachine):
    def __init__(self) -> None:
        super().__init__()
        self.c = Cluster(CONFIG)
        self.nodes: list[str] = []
        self.apps: list[str] = []
        self.counter = 0
        # What the RM knows: (app, key) -> pending | allocated | gone, and releases to confirm.
        self.state: dict[tuple[str, str], str] = {}
        self.to_confirm: dict[tuple[str, str], Termination] = {}  # (app, key) -> termination
        self.started_gangs: set[str] = set()  # applications seen Running or Resuming/Failing at least once

    def _next(self, prefix: str) -> str:
        self.counter += 1
        return f"{prefix}{self.counter}"

    def _sync(self) -> None:
        for batch in self.c.ctx.drain_results():
            for alloc in batch.new_allocations:
                assert self.state[(alloc.application_id, alloc.key)] == "pending", (
                    "allocated twice",
                    alloc.key,
                )
                self.state[(alloc.application_id, alloc.key)] = "allocated"
            for rel in batch.released:
                key = (rel.app_id, rel.key)
                if rel.termination in ("PLACEHOLDER_REPLACED", "TIMEOUT"):
                    if self.state[key] == "allocated":
                        assert key not in self.to_confirm, ("released twice", key)
                        self.to_confirm[key] = rel.termination
                    else:  # a pending placeholder (or a Hard gang's task) dropped by the core
                        self.state[key] = "gone"
                else:
                    self.state[key] = "gone"
            assert not batch.rejected_allocations, batch.rejected_allocations
            for update in batch.updated_apps:
                if update.state in ("Running", "Resuming", "Failing"):
                    self.started_gangs.add(update.app_id)
                if update.state in ("Completed", "Failing", "Failed") and update.app_id in self.apps:
                    self.apps.remove(update.app_id)  # the RM sends such an application nothing more

    def _send(self, *asks: Allocation) -> None:
        self.c.ctx.apply(UpdateAllocations(self.c.rm_id, allocations=asks))
        self._sync()

    # Rules ------------------------------------------------------------------------------------
    @rule(memory=st.integers(2, 8))
    def add_node(self, memory: int) -> None:
        node_id = self._next("n")
        self.c.node(node_id, {"memory": memory})
        self.nodes.append(node_id)
        self._sync()

    @precondition(lambda self: self.nodes)
    @rule(data=st.data())
    def remove_node(self, data: st.DataObject) -> None:
        node_id = data.draw(st.sampled_from(self.nodes))
        self.nodes.remove(node_id)
        self.c.node_action(node_id, NodeAction.DECOMMISSION)
        self._sync()

    @rule(members=st.integers(1, 4), capped=st.booleans(), hard=st.booleans())
    def add_gang(self, members: int, capped: bool, hard: bool) -> None:
        app_id = self._next("gang")
        size = Resource({"memory": MEMBER["memory"] * members})
        add = AppAdd(
            app_id, self.c.pname(), "root.capped" if capped else "root.open", user="u",
            placeholder_ask=size, gang_style=GangStyle.HARD if hard else GangStyle.SOFT,
            placeholder_timeout_ms=TIMEOUT_MS,
        )  # fmt: skip
        self.c.ctx.apply(UpdateApplications(self.c.rm_id, adds=(add,)))
        self.apps.append(app_id)
        placeholders = []
        for _ in range(members):
            key = self._next("ph")
            self.state[(app_id, key)] = "pending"
            placeholders.append(
                Allocation(key, app_id, self.c.pname(), Resource(MEMBER), task_group="g", placeholder=True)
            )
        self._send(*placeholders)

    @precondition(lambda self: self.apps)
    @rule(data=st.data(), memory=st.sampled_from([1, 2, 2, 3]))
    def add_real_task(self, data: st.DataObject, memory: int) -> None:
        app_id = data.draw(st.sampled_from(self.apps))
        key = self._next("task")
        self.state[(app_id, key)] = "pending"
        self._send(Allocation(key, app_id, self.c.pname(), Resource({"memory": memory}), task_group="g"))

    @rule()
    def schedule(self) -> None:
        self.c.schedule(10_000)
        self._sync()

    @precondition(lambda self: self.to_confirm)
    @rule(data=st.data())
    def rm_confirms(self, data: st.DataObject) -> None:
        key = data.draw(st.sampled_from(sorted(self.to_confirm)))
        termination = self.to_confirm.pop(key)
        self.state[key] = "gone"
        release = ReleaseRequest(self.c.pname(), key[0], key[1], termination=termination)
        self.c.ctx.apply(UpdateAllocations(self.c.rm_id, releases=(release,)))
        self._sync()

    def _running(self) -> list[tuple[str, str]]:
        return sorted(k for k, s in self.state.items() if s == "allocated" and k not in self.to_confirm)

    @precondition(lambda self: self._running())
    @rule(data=st.data())
    def task_ends(self, data: st.DataObject) -> None:
        app_id, key = data.draw(st.sampled_from(self._running()))
        self.c.release(app_id, key)
        self._sync()

    @precondition(lambda self: self.apps)
    @rule(data=st.data())
    def remove_app(self, data: st.DataObject) -> None:
        app_id = data.draw(st.sampled_from(self.apps))
        self.apps.remove(app_id)
        self.c.ctx.apply(UpdateApplications(self.c.rm_id, removes=(AppRemove(app_id, self.c.pname()),)))
        for key in list(self.state):
            if key[0] == app_id:
                self.state[key] = "gone"
                self.to_confirm.pop(key, None)
        self._sync()

    @rule(seconds=st.sampled_from([1.0, 5.0, 11.0, 31.0]))
    def time_passes(self, seconds: float) -> None:
        self.c.clock.advance(seconds)
        self.c.ctx.tick()
        self._sync()

    # Invariants -------------------------------------------------------------------------------
    @invariant()
    def usage_in_step_everywhere(self) -> None:
        part = self.c.partition
        for node in part.nodes.values():
            assert node.allocated == sum_resources(a.resource for a in node.allocations.values())
            assert node.allocated.fits_in(node.capacity), node.node_id
        for app in part.applications.values():
            assert app.allocated == sum_resources(a.resource for a in app.allocations.values())
            gang = app.gang
            if gang is not None:
                placeholders = [a for a in app.allocations.values() if a.placeholder]
                assert gang.allocated_count == len(placeholders), app.app_id
                assert gang.allocated == sum_resources(a.resource for a in placeholders), app.app_id
        for queue in part.queues.values():
            if queue.is_leaf:
                held = sum_resources(a.resource for app in queue.applications.values()
                                     for a in app.allocations.values())  # fmt: skip
                assert queue.allocated == held, queue.full_name
                assert queue.max is None or queue.allocated.fits_in_limit(queue.max), queue.full_name

    @invariant()
    def every_task_in_exactly_one_place(self) -> None:
        part = self.c.partition
        for (app_id, key), told in self.state.items():
            app = part.applications.get(app_id)
            places = [
                name for name, found in (
                    ("pending", app is not None and key in app.asks),
                    ("allocated", app is not None and key in app.allocations),
                    ("replacing", app is not None and key in app.replacing),
                ) if found
            ]  # fmt: skip
            assert len(places) <= 1, (key, places)
            actual = places[0] if places else "gone"
            if actual == "replacing":  # its placeholder is still there, waiting for the RM, and links back
                assert app is not None
                ph = app.replacing[key].replaces
                assert (
                    ph is not None
                    and app.allocations.get(ph.key) is ph
                    and ph.replaced_by is app.replacing[key]
                )
            if told == "gone":
                assert actual == "gone", (key, actual)
            elif told == "allocated":
                assert actual == "allocated", (key, actual)  # until the RM confirms a release
            else:  # the RM still waits: pending, or placed in a placeholder's stead, not yet sent
                assert actual in ("pending", "replacing"), (key, actual)

    @invariant()
    def placeholders_are_accounted_for(self) -> None:
        for app in self.c.partition.applications.values():
            if app.gang is None:
                continue
            for name, group in app.gang.groups.items():
                live = sum(1 for a in (*app.asks.values(), *app.allocations.values())
                           if a.placeholder and a.task_group == name)  # fmt: skip
                assert group.count == group.replaced + group.timed_out + live, (app.app_id, name)

    @invariant()
    def no_real_task_runs_before_its_gang(self) -> None:
        for app in self.c.partition.applications.values():
            if app.gang is None or app.app_id in self.started_gangs:
                continue
            assert app.state != AppState.RUNNING, app.app_id
            real = [a for a in app.allocations.values() if not a.placeholder] + list(app.replacing.values())
            assert not real, (app.app_id, [a.key for a in real])


GangMachine.TestCase.settings = settings(
    max_examples=60, stateful_step_count=30, deadline=None, suppress_health_check=[HealthCheck.too_slow]
)
TestGangInvariants = GangMachine.TestCase
