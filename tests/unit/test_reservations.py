"""Reservations: an ask too big for any node's free room holds a node until it fits, as YuniKorn."""

from __future__ import annotations

from hypothesis import HealthCheck, settings
from hypothesis import strategies as st
from hypothesis.stateful import RuleBasedStateMachine, initialize, invariant, precondition, rule

from core.objects.allocation import Allocation
from core.resources import Resource
from core.scheduler.commands import AppRemove, NodeAction, UpdateAllocations, UpdateApplications
from core.scheduler.cycle.parking import RESERVATION_DELAY
from si.v1.tags import TAG_REQUIRED_NODE
from tests.unit.domain_helpers import Cluster

CONFIG = """
partitions:
  - name: default
    queues:
      - name: root
        submitacl: "*"
        queues:
          - name: default
"""

BIG = ("big-app", "big")


def _busy_cluster() -> Cluster:
    """Two nodes of memory 10, each with 6 in use: 4 free on each."""
    c = Cluster(CONFIG)
    c.node("n1", {"memory": 10})
    c.node("n2", {"memory": 10})
    c.app("filler")
    c.ask("filler", "f1", {"memory": 6}, node_id="n1")
    c.ask("filler", "f2", {"memory": 6}, node_id="n2")
    c.app("big-app")
    return c


def _reserved_big() -> Cluster:
    """The busy cluster with an 8-memory ask that has reserved n1."""
    c = _busy_cluster()
    c.ask("big-app", "big", {"memory": 8})
    c.schedule()
    c.clock.advance(RESERVATION_DELAY + 0.5)
    c.schedule()
    assert c.partition.reservations == {BIG: "n1"}
    return c


def _node_reservations(c: Cluster) -> dict[str, set[tuple[str, str]]]:
    return {node_id: set(node.reservations) for node_id, node in c.partition.nodes.items()}


def _where(c: Cluster, app_id: str) -> dict[str, str]:
    return {k: a.node_id for k, a in c.partition.applications[app_id].allocations.items()}


def _pending(c: Cluster, app_id: str) -> list[str]:
    return sorted(c.partition.applications[app_id].asks)


def _new_allocations(c: Cluster) -> dict[str, str]:
    return {a.key: a.node_id for b in c.ctx.drain_results() for a in b.new_allocations}


def _required_ask(c: Cluster, app_id: str, key: str, memory: int, node_id: str) -> None:
    alloc = Allocation(
        key, app_id, c.pname(), Resource({"memory": memory}), tags={TAG_REQUIRED_NODE: node_id}
    )
    c.ctx.apply(UpdateAllocations(c.rm_id, allocations=(alloc,)))


# Making a reservation -----------------------------------------------------------------------------


def test_an_ask_too_big_for_free_room_reserves_a_node_only_after_the_delay() -> None:
    c = _busy_cluster()
    c.ask("big-app", "big", {"memory": 8})
    c.schedule()
    assert c.partition.reservations == {}
    c.clock.advance(RESERVATION_DELAY - 0.1)
    c.schedule()
    assert c.partition.reservations == {}
    assert _node_reservations(c) == {"n1": set(), "n2": set()}
    c.clock.advance(0.2)
    c.schedule()
    # Both nodes are as far from fitting; the first in node order (n1) wins.
    assert c.partition.reservations == {BIG: "n1"}
    assert _node_reservations(c) == {"n1": {BIG}, "n2": set()}
    assert _pending(c, "big-app") == ["big"]
    assert c.partition.root.pending == {"memory": 8}


def test_the_delay_must_be_exceeded_not_just_reached() -> None:
    # YuniKorn reserves when time.Since(ask.createTime) > reservationDelay.
    c = _busy_cluster()
    c.ask("big-app", "big", {"memory": 8})
    c.clock.advance(RESERVATION_DELAY)
    c.schedule()
    assert c.partition.reservations == {}
    c.clock.advance(0.001)
    c.schedule()
    assert c.partition.reservations == {BIG: "n1"}


def test_the_reserved_node_is_the_one_closest_to_fitting() -> None:
    c = Cluster(CONFIG)
    c.node("small", {"memory": 10})
    c.node("large", {"memory": 100})
    c.app("filler")
    c.ask("filler", "f1", {"memory": 5}, node_id="small")  # 50% used, 5 free: first in fair order
    c.ask("filler", "f2", {"memory": 93}, node_id="large")  # 93% used, but 7 free
    c.app("big-app")
    c.ask("big-app", "big", {"memory": 8})
    c.clock.advance(RESERVATION_DELAY + 1)
    c.schedule()
    assert [n.node_id for n in c.partition.node_index] == ["small", "large"]
    assert c.partition.reservations == {BIG: "large"}


def test_no_reservation_while_the_cluster_as_a_whole_lacks_the_room() -> None:
    # Root's max is the cluster: with 7 free in all, an 8 ask fails the queue headroom check
    # before any node is considered, as in YuniKorn, so it reserves nothing.
    c = Cluster(CONFIG)
    c.node("n1", {"memory": 10})
    c.node("n2", {"memory": 10})
    c.app("filler")
    c.ask("filler", "f1", {"memory": 8}, node_id="n1")
    c.ask("filler", "f2", {"memory": 5}, node_id="n2")
    c.app("big-app")
    c.ask("big-app", "big", {"memory": 8})
    c.clock.advance(RESERVATION_DELAY + 1)
    c.schedule()
    assert c.partition.reservations == {}
    c.release("filler", "f1")  # now 12 free in all, and n1 alone has room
    c.schedule()
    assert _where(c, "big-app") == {"big": "n1"}


def test_an_ask_that_fits_no_nodes_capacity_never_reserves() -> None:
    c = _busy_cluster()
    c.ask("big-app", "huge", {"memory": 11})
    for _ in range(3):
        c.clock.advance(RESERVATION_DELAY + 1)
        c.schedule()
    assert c.partition.reservations == {}
    assert _node_reservations(c) == {"n1": set(), "n2": set()}
    assert _pending(c, "big-app") == ["huge"]
    # The nodes still take what fits.
    c.ask("big-app", "small", {"memory": 4})
    c.schedule()
    assert _where(c, "big-app") == {"small": "n1"}


def test_one_reservation_per_ask_and_at_most_one_per_node() -> None:
    c = _busy_cluster()
    for key in ("big1", "big2", "big3"):
        c.ask("big-app", key, {"memory": 8})
    for _ in range(4):
        c.clock.advance(RESERVATION_DELAY + 1)
        c.schedule()
    assert c.partition.reservations == {("big-app", "big1"): "n1", ("big-app", "big2"): "n2"}
    assert _node_reservations(c) == {"n1": {("big-app", "big1")}, "n2": {("big-app", "big2")}}
    assert _pending(c, "big-app") == ["big1", "big2", "big3"]


# A reserved node ----------------------------------------------------------------------------------


def test_a_reserved_node_takes_no_other_ask() -> None:
    c = _reserved_big()
    c.app("other")
    c.ask("other", "s1", {"memory": 3})  # fits n1 (4 free) and n2 (4 free)
    c.schedule()
    assert _where(c, "other") == {"s1": "n2"}
    c.ask("other", "s2", {"memory": 3})  # fits only n1 now, which is reserved
    c.ask("big-app", "mine", {"memory": 3})  # not even an ask of the reserving application
    c.schedule()
    assert _pending(c, "other") == ["s2"]
    assert _pending(c, "big-app") == ["big", "mine"]
    assert c.partition.nodes["n1"].available == {"memory": 4}
    c.clock.advance(RESERVATION_DELAY + 1)
    c.schedule()
    assert set(c.partition.nodes["n1"].allocations) == {"f1"}
    assert c.partition.nodes["n1"].reservations == {BIG}


def test_room_freed_on_the_reserved_node_goes_to_the_reserved_ask() -> None:
    c = _reserved_big()
    c.app("other")
    c.ask("other", "s1", {"memory": 4})
    c.schedule()
    assert _where(c, "other") == {"s1": "n2"}
    c.ctx.drain_results()
    c.release("filler", "f1")
    c.schedule()
    assert _new_allocations(c) == {"big": "n1"}
    assert _where(c, "big-app") == {"big": "n1"}
    assert c.partition.reservations == {}
    assert _node_reservations(c) == {"n1": set(), "n2": set()}
    assert c.partition.root.pending.is_zero()


def test_another_node_with_room_takes_the_reserved_ask() -> None:
    c = _reserved_big()
    c.ctx.drain_results()
    c.node("n3", {"memory": 20})
    c.schedule()
    assert _new_allocations(c) == {"big": "n3"}
    assert c.partition.reservations == {}
    assert _node_reservations(c) == {"n1": set(), "n2": set(), "n3": set()}
    # n1 is free for anyone again.
    c.app("other")
    c.ask("other", "s1", {"memory": 4})
    c.ask("other", "s2", {"memory": 4})
    c.ask("other", "s3", {"memory": 4})
    c.schedule()
    assert "n1" in _where(c, "other").values()


# Reservations go ------------------------------------------------------------------------------------


def test_the_reservation_goes_when_the_rm_releases_the_ask() -> None:
    c = _reserved_big()
    c.release("big-app", "big")
    assert c.partition.reservations == {}
    assert _node_reservations(c) == {"n1": set(), "n2": set()}
    c.ask("big-app", "small", {"memory": 4})
    c.schedule()
    assert _where(c, "big-app") == {"small": "n1"}


def test_the_reservation_goes_when_the_application_is_removed() -> None:
    c = _reserved_big()
    c.ctx.apply(UpdateApplications(c.rm_id, removes=(AppRemove("big-app", c.pname()),)))
    assert "big-app" not in c.partition.applications
    assert c.partition.reservations == {}
    assert _node_reservations(c) == {"n1": set(), "n2": set()}
    c.app("other")
    c.ask("other", "s1", {"memory": 4})
    c.schedule()
    assert _where(c, "other") == {"s1": "n1"}


def test_the_reservation_goes_when_the_reserved_node_is_decommissioned() -> None:
    c = _reserved_big()
    c.node_action("n1", NodeAction.DECOMMISSION)
    assert "n1" not in c.partition.nodes
    assert c.partition.reservations == {}
    assert _node_reservations(c) == {"n2": set()}
    assert _pending(c, "big-app") == ["big"]
    # What is left of the cluster (4 free of 10) is too small to hold a reservation for 8.
    c.schedule()
    assert c.partition.reservations == {}
    # A new node takes the ask, long past its delay, at once.
    c.node("n3", {"memory": 10})
    c.schedule()
    assert _where(c, "big-app") == {"big": "n3"}


def test_decommissioning_another_node_leaves_the_reservation() -> None:
    c = _reserved_big()
    c.node_action("n2", NodeAction.DECOMMISSION)
    assert c.partition.reservations == {BIG: "n1"}
    assert _node_reservations(c) == {"n1": {BIG}}


# Required node ------------------------------------------------------------------------------------


def test_a_required_node_ask_reserves_its_node_at_once() -> None:
    c = _busy_cluster()
    c.app("daemonset")
    _required_ask(c, "daemonset", "ds", 8, "n2")
    c.schedule()
    assert c.partition.reservations == {("daemonset", "ds"): "n2"}
    assert _node_reservations(c) == {"n1": set(), "n2": {("daemonset", "ds")}}
    c.release("filler", "f2")
    c.schedule()
    assert _where(c, "daemonset") == {"ds": "n2"}
    assert c.partition.reservations == {}


def test_a_required_node_ask_cancels_a_normal_reservation_on_its_node() -> None:
    c = Cluster(CONFIG)
    c.node("n1", {"memory": 10})
    c.node("n2", {"memory": 10})
    c.app("filler")
    c.ask("filler", "f1", {"memory": 7}, node_id="n1")
    c.ask("filler", "f2", {"memory": 7}, node_id="n2")
    c.app("big-app")
    c.ask("big-app", "big", {"memory": 5})
    c.clock.advance(RESERVATION_DELAY + 1)
    c.schedule()
    assert c.partition.reservations == {BIG: "n1"}
    c.app("daemonset")
    _required_ask(c, "daemonset", "ds", 5, "n1")
    c.schedule()
    assert c.partition.reservations == {("daemonset", "ds"): "n1"}
    assert _node_reservations(c) == {"n1": {("daemonset", "ds")}, "n2": set()}
    assert _pending(c, "big-app") == ["big"]
    # The displaced ask may reserve another node later, never n1 while the daemon holds it.
    c.schedule()
    assert c.partition.reservations == {("daemonset", "ds"): "n1", BIG: "n2"}
    c.release("filler", "f1")
    c.schedule()
    assert _where(c, "daemonset") == {"ds": "n1"}
    assert _where(c, "big-app") == {"big": "n1"}
    assert c.partition.reservations == {}
    assert _node_reservations(c) == {"n1": set(), "n2": set()}


def test_a_required_node_ask_too_big_for_its_node_does_not_reserve_it() -> None:
    # YuniKorn's node.Reserve refuses an ask larger than the node (ErrorNodeNotFitReserve); a
    # reservation that can never be served would keep the node from taking anything else.
    c = _busy_cluster()
    c.app("daemonset")
    _required_ask(c, "daemonset", "ds", 11, "n1")
    c.schedule()
    assert c.partition.reservations == {}
    c.app("other")
    c.ask("other", "s1", {"memory": 4})
    c.ask("other", "s2", {"memory": 4})
    c.schedule()
    assert sorted(_where(c, "other").values()) == ["n1", "n2"]
    assert _pending(c, "daemonset") == ["ds"]


# Property -----------------------------------------------------------------------------------------

capacities = st.integers(6, 16)
sizes = st.integers(1, 18)


class ReservationMachine(RuleBasedStateMachine):
    def __init__(self) -> None:
        super().__init__()
        self.c = Cluster(CONFIG)
        self.node_ids: list[str] = []
        self.app_ids: list[str] = []
        self.counter = 0

    def _next(self, prefix: str) -> str:
        self.counter += 1
        return f"{prefix}{self.counter}"

    def _live_keys(self) -> list[tuple[str, str]]:
        part = self.c.partition
        return sorted(
            (app.app_id, key) for app in part.applications.values() for key in (*app.asks, *app.allocations)
        )

    @initialize(memories=st.lists(capacities, min_size=2, max_size=4), apps=st.integers(1, 3))
    def start(self, memories: list[int], apps: int) -> None:
        for memory in memories:
            self.add_node(memory)
        for _ in range(apps):
            self.add_app()

    @rule(memory=capacities)
    def add_node(self, memory: int) -> None:
        node_id = self._next("n")
        self.c.node(node_id, {"memory": memory})
        self.node_ids.append(node_id)

    @precondition(lambda self: self.node_ids)
    @rule(data=st.data())
    def decommission(self, data: st.DataObject) -> None:
        node_id = data.draw(st.sampled_from(self.node_ids))
        self.node_ids.remove(node_id)
        self.c.node_action(node_id, NodeAction.DECOMMISSION)

    @rule()
    def add_app(self) -> None:
        app_id = self._next("app")
        self.c.app(app_id)
        self.app_ids.append(app_id)

    @precondition(lambda self: self.app_ids)
    @rule(data=st.data(), memories=st.lists(sizes, min_size=1, max_size=4))
    def add_asks(self, data: st.DataObject, memories: list[int]) -> None:
        app_id = data.draw(st.sampled_from(self.app_ids))
        for memory in memories:
            self.c.ask(app_id, self._next("k"), {"memory": memory})

    @precondition(lambda self: self.app_ids and self.node_ids)
    @rule(data=st.data(), memory=sizes)
    def add_required_node_ask(self, data: st.DataObject, memory: int) -> None:
        app_id = data.draw(st.sampled_from(self.app_ids))
        node_id = data.draw(st.sampled_from(self.node_ids))
        _required_ask(self.c, app_id, self._next("k"), memory, node_id)

    @precondition(lambda self: self._live_keys())
    @rule(data=st.data())
    def release(self, data: st.DataObject) -> None:
        app_id, key = data.draw(st.sampled_from(self._live_keys()))
        self.c.release(app_id, key)

    @precondition(lambda self: self.app_ids)
    @rule(data=st.data())
    def remove_app(self, data: st.DataObject) -> None:
        app_id = data.draw(st.sampled_from(self.app_ids))
        self.app_ids.remove(app_id)
        self.c.ctx.apply(UpdateApplications(self.c.rm_id, removes=(AppRemove(app_id, self.c.pname()),)))

    @rule(seconds=st.sampled_from([0.5, 1.0, RESERVATION_DELAY, RESERVATION_DELAY + 0.5, 10.0]))
    def advance(self, seconds: float) -> None:
        self.c.clock.advance(seconds)

    @rule()
    def schedule(self) -> None:
        self.c.schedule()
        self.c.ctx.drain_results()

    @rule()
    def wait_and_schedule(self) -> None:
        self.c.clock.advance(RESERVATION_DELAY + 0.5)
        self.schedule()

    @invariant()
    def reservations_point_at_existing_nodes_and_pending_asks(self) -> None:
        part = self.c.partition
        for (app_id, key), node_id in part.reservations.items():
            assert node_id in part.nodes, (app_id, key, node_id)
            app = part.applications.get(app_id)
            assert app is not None and key in app.asks, (app_id, key)
            assert key not in app.allocations
            assert app.asks[key].resource.fits_in(part.nodes[node_id].capacity), (key, node_id)

    @invariant()
    def node_reservations_mirror_the_partition(self) -> None:
        part = self.c.partition
        from_nodes = {(ref, node.node_id) for node in part.nodes.values() for ref in node.reservations}
        assert from_nodes == set(part.reservations.items())

    @invariant()
    def a_normal_reservation_holds_a_node_alone(self) -> None:
        part = self.c.partition
        for node in part.nodes.values():
            normal = [r for r in node.reservations if not part.applications[r[0]].asks[r[1]].required_node]
            assert len(normal) <= 1, node.node_id
            assert not normal or len(node.reservations) == 1, node.node_id

    @invariant()
    def no_node_over_capacity(self) -> None:
        for node in self.c.partition.nodes.values():
            used = node.allocated + node.occupied
            assert used.fits_in(node.capacity), f"{node.node_id}: {used} > {node.capacity}"


ReservationMachine.TestCase.settings = settings(
    max_examples=100, stateful_step_count=40, deadline=None, suppress_health_check=[HealthCheck.too_slow]
)
TestReservationInvariants = ReservationMachine.TestCase
