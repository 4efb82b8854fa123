"""Priority scheduling: application and queue priority caches, fences, offsets, and priority sorting.

Property parsing (values, case, warnings, what inherit() filters) is in test_properties.py; this file
covers what the parsed values do: how priorities propagate, where fences stop them, and how the
sort orders use them.
"""

from __future__ import annotations

from collections.abc import Iterator

import pytest

from core.commands import UpdateConfig
from core.config import load_config
from core.objects import priority
from core.objects.allocation import Allocation
from core.objects.application import Application
from core.objects.priority import MAX_PRIORITY, MIN_PRIORITY
from core.objects.queue import Queue
from core.policies.queue_sort import sorted_applications, sorted_children
from core.resources import Resource
from tests.unit.domain_helpers import Cluster

# Helpers ------------------------------------------------------------------------------------------


def _config(queues: str, root_properties: str = "") -> str:
    """A one-partition configuration; `queues` is the YAML of root's children, indented 8 spaces."""
    props = f"        properties:\n{root_properties}" if root_properties else ""
    return f"""
partitions:
  - name: default
    queues:
      - name: root
        submitacl: "*"
{props}        queues:
{queues}"""


def _q(c: Cluster, name: str) -> Queue:
    queue = c.partition.find_queue(name)
    assert queue is not None, name
    return queue


def _a(c: Cluster, app_id: str) -> Application:
    return c.partition.applications[app_id]


def _apps(c: Cluster, *placements: tuple[str, str]) -> None:
    for app_id, queue in placements:
        c.app(app_id, queue)
        assert app_id in c.partition.applications, f"{app_id} was rejected"


def _check_caches(c: Cluster) -> None:
    """Every cached value agrees with a computation from the asks themselves."""
    for queue in c.partition.queues.values():
        assert queue.current_priority == priority.from_scratch(queue), queue.full_name


def _names(queues: list[Queue]) -> list[str]:
    return [q.name for q in queues]


# Application.ask_max_priority ---------------------------------------------------------------------


def _bare_app() -> Application:
    root = Queue("root", None, is_leaf=False)
    return Application("app", "[rm]default", Queue("leaf", root))


def _ask(key: str, prio: int) -> Allocation:
    return Allocation(key, "app", "[rm]default", Resource({"memory": 1}), priority=prio)


class _CountingAsks(dict[str, Allocation]):
    """An asks dict that counts how many asks a scan of values() looked at."""

    visited = 0

    def values(self) -> Iterator[Allocation]:  # type: ignore[override]
        for value in super().values():
            self.visited += 1
            yield value


def test_an_application_without_asks_has_the_minimum_priority() -> None:
    app = _bare_app()
    assert app.ask_max_priority == MIN_PRIORITY == -(2**31)


def test_adding_an_ask_raises_the_maximum_without_a_scan(monkeypatch: pytest.MonkeyPatch) -> None:
    app = _bare_app()

    def no_scan(self: Application, removed: int) -> None:
        raise AssertionError("adding an ask must not rescan the asks")

    monkeypatch.setattr(Application, "_recompute_max_priority", no_scan)
    app.add_ask(_ask("a", 5))
    assert app.ask_max_priority == 5
    app.add_ask(_ask("b", 3))  # lower: unchanged
    assert app.ask_max_priority == 5
    app.add_ask(_ask("c", 9))
    assert app.ask_max_priority == 9
    app.add_ask(_ask("d", MAX_PRIORITY))
    assert app.ask_max_priority == MAX_PRIORITY


def test_removing_an_ask_below_the_maximum_keeps_it_without_a_scan(monkeypatch: pytest.MonkeyPatch) -> None:
    app = _bare_app()
    app.add_ask(_ask("high", 10))
    app.add_ask(_ask("low", 1))
    calls: list[int] = []
    monkeypatch.setattr(Application, "_recompute_max_priority", lambda self, removed: calls.append(removed))
    app.remove_ask("low")
    assert app.ask_max_priority == 10
    assert calls == []


def test_removing_the_maximum_ask_recomputes_it() -> None:
    app = _bare_app()
    for key, prio in (("a", 3), ("b", 10), ("c", -4), ("d", 7)):
        app.add_ask(_ask(key, prio))
    app.remove_ask("b")
    assert app.ask_max_priority == 7
    app.remove_ask("d")
    assert app.ask_max_priority == 3
    app.remove_ask("a")
    assert app.ask_max_priority == -4
    app.remove_ask("c")
    assert app.ask_max_priority == MIN_PRIORITY


def test_removing_one_of_two_maximum_asks_keeps_the_maximum_and_stops_early() -> None:
    app = _bare_app()
    app.add_ask(_ask("max-1", 10))
    app.add_ask(_ask("max-2", 10))
    for i in range(20):
        app.add_ask(_ask(f"low-{i}", i % 5))
    app.asks = _CountingAsks(app.asks)
    app.remove_ask("max-1")
    assert app.ask_max_priority == 10
    # max-2 is the first ask the scan meets: it is another ask at the removed priority, so it stops.
    assert app.asks.visited == 1
    app.remove_ask("max-2")
    assert app.ask_max_priority == 4
    assert app.asks.visited == 1 + 20  # now the whole rest had to be looked at


def test_removing_an_unknown_ask_changes_nothing() -> None:
    app = _bare_app()
    app.add_ask(_ask("a", 5))
    assert app.remove_ask("nope") is None
    assert app.ask_max_priority == 5


def test_allocating_the_maximum_ask_lowers_the_application_and_queue_priority() -> None:
    c = Cluster()
    c.node("n1", {"memory": 5, "vcore": 10})
    _apps(c, ("app", "root.default"))
    c.ask("app", "low", {"memory": 5}, priority=1)
    c.ask("app", "high", {"memory": 5}, priority=10)
    app, leaf = _a(c, "app"), _q(c, "root.default")
    assert app.ask_max_priority == 10
    assert leaf.current_priority == 10
    assert c.schedule() == 1
    assert "high" in app.allocations
    assert app.ask_max_priority == 1
    assert leaf.current_priority == 1
    assert leaf.app_priorities == {"app": 1}
    _check_caches(c)


def test_allocating_the_last_ask_leaves_the_minimum() -> None:
    c = Cluster()
    c.node("n1", {"memory": 10, "vcore": 10})
    _apps(c, ("app", "root.default"))
    c.ask("app", "only", {"memory": 5}, priority=50)
    assert c.schedule() == 1
    assert _a(c, "app").ask_max_priority == MIN_PRIORITY
    assert _q(c, "root.default").current_priority == MIN_PRIORITY
    assert _q(c, "root.default").app_priorities == {}
    assert _q(c, "root").child_priorities == {}


# Queue current_priority: offsets --------------------------------------------------------------------

OFFSETS = _config("""\
          - name: parent
            properties:
              priority.offset: "100"
            queues:
              - name: boosted
                properties:
                  priority.offset: "5"
              - name: lowered
                properties:
                  priority.offset: "-20"
              - name: plain
""")


def test_a_leaf_is_its_highest_application_plus_its_offset() -> None:
    c = Cluster(OFFSETS)
    _apps(c, ("a1", "root.parent.boosted"), ("a2", "root.parent.boosted"))
    c.ask("a1", "k1", {"memory": 1}, priority=7)
    c.ask("a2", "k2", {"memory": 1}, priority=12)
    c.ask("a2", "k3", {"memory": 1}, priority=-3)
    leaf = _q(c, "root.parent.boosted")
    assert leaf.app_priorities == {"a1": 7, "a2": 12}
    assert leaf.inner_priority == 12
    assert leaf.current_priority == 17


def test_a_parent_is_its_highest_child_plus_its_offset() -> None:
    c = Cluster(OFFSETS)
    _apps(c, ("b", "root.parent.boosted"), ("l", "root.parent.lowered"), ("p", "root.parent.plain"))
    c.ask("b", "k1", {"memory": 1}, priority=10)  # shows 15
    c.ask("l", "k2", {"memory": 1}, priority=30)  # shows 10
    c.ask("p", "k3", {"memory": 1}, priority=12)  # shows 12
    parent = _q(c, "root.parent")
    assert parent.child_priorities == {"boosted": 15, "lowered": 10, "plain": 12}
    assert parent.inner_priority == 15
    assert parent.current_priority == 115
    assert _q(c, "root").child_priorities == {"parent": 115}
    assert _q(c, "root").current_priority == 115
    _check_caches(c)


def test_priority_policy_and_offset_on_root_have_no_effect() -> None:
    c = Cluster(
        _config(
            """\
          - name: leaf
""",
            root_properties="""\
          priority.policy: fence
          priority.offset: "1000"
""",
        )
    )
    _apps(c, ("app", "root.leaf"))
    c.ask("app", "k", {"memory": 1}, priority=42)
    root = _q(c, "root")
    assert not root.props.is_priority_fence and root.props.priority_offset == 0
    assert root.current_priority == 42  # neither fenced (0) nor offset (1042)
    # ... and neither flows down to the child.
    assert _q(c, "root.leaf").props.priority_offset == 0
    assert not _q(c, "root.leaf").props.is_priority_fence
    assert _q(c, "root.leaf").current_priority == 42


# Queue current_priority: fences ---------------------------------------------------------------------

FENCES = _config("""\
          - name: fenced-leaf
            properties:
              priority.policy: fence
          - name: fenced-offset-leaf
            properties:
              priority.policy: fence
              priority.offset: "7"
          - name: fenced-parent
            properties:
              priority.policy: fence
              priority.offset: "-3"
            queues:
              - name: inside
""")


@pytest.mark.parametrize("ask_priority", [MIN_PRIORITY + 1, -50, 0, 50, 1_000_000, MAX_PRIORITY])
def test_a_fenced_queue_shows_its_offset_whatever_is_inside(ask_priority: int) -> None:
    c = Cluster(FENCES)
    _apps(c, ("a", "root.fenced-leaf"), ("b", "root.fenced-offset-leaf"), ("c", "root.fenced-parent.inside"))
    for app_id in ("a", "b", "c"):
        c.ask(app_id, "k", {"memory": 1}, priority=ask_priority)
    assert _q(c, "root.fenced-leaf").current_priority == 0  # no offset: the default priority
    assert _q(c, "root.fenced-offset-leaf").current_priority == 7
    assert _q(c, "root.fenced-parent").current_priority == -3
    # What is inside is still known, for the REST view and for sorting inside the fence.
    for name in ("root.fenced-leaf", "root.fenced-offset-leaf", "root.fenced-parent"):
        assert _q(c, name).inner_priority == ask_priority
    assert _q(c, "root.fenced-parent.inside").current_priority == ask_priority
    assert _q(c, "root").child_priorities == {"fenced-leaf": 0, "fenced-offset-leaf": 7, "fenced-parent": -3}
    assert _q(c, "root").current_priority == 7
    _check_caches(c)


def test_a_fenced_queue_with_nothing_pending_shows_nothing() -> None:
    # The rule of core/objects/priority.py: nothing pending is MIN_PRIORITY, fenced or not, so an idle
    # fenced queue with an offset does not raise its parent.
    c = Cluster(FENCES)
    _apps(c, ("b", "root.fenced-offset-leaf"))
    assert _q(c, "root.fenced-offset-leaf").current_priority == MIN_PRIORITY
    c.ask("b", "k", {"memory": 1}, priority=1)
    assert _q(c, "root.fenced-offset-leaf").current_priority == 7
    c.release("b", "k")
    assert _q(c, "root.fenced-offset-leaf").current_priority == MIN_PRIORITY
    assert _q(c, "root").child_priorities == {}
    assert _q(c, "root").current_priority == MIN_PRIORITY


# The document's example: tenant1 (fence) holds A (fence) and B; tenant2 (fence, offset) holds queue1
# and queue2, visible to each other; system is not fenced and can outrank everything.
TENANTS = _config("""\
          - name: tenant1
            properties:
              priority.policy: fence
            queues:
              - name: a
                properties:
                  priority.policy: fence
              - name: b
          - name: tenant2
            properties:
              priority.policy: fence
              priority.offset: "10"
            queues:
              - name: queue1
              - name: queue2
          - name: system
""")


def _tenants() -> Cluster:
    c = Cluster(TENANTS)
    _apps(
        c,
        ("app-a", "root.tenant1.a"),
        ("app-b", "root.tenant1.b"),
        ("app-1", "root.tenant2.queue1"),
        ("app-2", "root.tenant2.queue2"),
        ("app-sys", "root.system"),
    )
    c.ask("app-a", "k", {"memory": 1}, priority=1000)
    c.ask("app-b", "k", {"memory": 1}, priority=5)
    c.ask("app-1", "k", {"memory": 1}, priority=50)
    c.ask("app-2", "k", {"memory": 1}, priority=60)
    c.ask("app-sys", "k", {"memory": 1}, priority=3)
    return c


def test_nested_fences_of_the_design_document() -> None:
    c = _tenants()
    # Under tenant1: A is fenced and shows the default priority; B's 5 is visible, so B goes first
    # although A holds a much higher ask.
    assert _q(c, "root.tenant1.a").current_priority == 0
    assert _q(c, "root.tenant1.a").inner_priority == 1000
    assert _q(c, "root.tenant1.b").current_priority == 5
    assert _names(sorted_children(_q(c, "root.tenant1"))) == ["b", "a"]
    # tenant1 shows the default priority outside, whatever B or A hold.
    assert _q(c, "root.tenant1").inner_priority == 5
    assert _q(c, "root.tenant1").current_priority == 0
    # Under tenant2 the two queues see each other's priorities.
    assert _names(sorted_children(_q(c, "root.tenant2"))) == ["queue2", "queue1"]
    assert _q(c, "root.tenant2").inner_priority == 60
    assert _q(c, "root.tenant2").current_priority == 10  # its offset only
    assert _q(c, "root.system").current_priority == 3
    assert _q(c, "root").child_priorities == {"tenant1": 0, "tenant2": 10, "system": 3}
    assert _names(sorted_children(_q(c, "root"))) == ["tenant2", "system", "tenant1"]
    _check_caches(c)


def test_the_unfenced_system_queue_outranks_every_tenant() -> None:
    c = _tenants()
    c.ask("app-sys", "critical", {"memory": 1}, priority=2_000_000_000)
    assert _q(c, "root").current_priority == 2_000_000_000
    assert _names(sorted_children(_q(c, "root"))) == ["system", "tenant2", "tenant1"]
    # Nothing inside a tenant can get above the system queue, however high.
    c.ask("app-1", "huge", {"memory": 1}, priority=MAX_PRIORITY)
    c.ask("app-a", "huge", {"memory": 1}, priority=MAX_PRIORITY)
    assert _q(c, "root.tenant2").current_priority == 10
    assert _q(c, "root.tenant1").current_priority == 0
    assert _names(sorted_children(_q(c, "root"))) == ["system", "tenant2", "tenant1"]
    _check_caches(c)


def test_nested_fences_end_to_end_the_tenant_with_the_offset_is_served_first() -> None:
    c = _tenants()
    c.node("n1", {"memory": 3, "vcore": 10})
    assert c.schedule() == 3
    # tenant2 (10) first, queue2 (60) before queue1 (50) inside it; then system (3); tenant1 (0) last.
    made = [a.application_id for batch in c.ctx.drain_results() for a in batch.new_allocations]
    assert made == ["app-2", "app-1", "app-sys"]
    assert _a(c, "app-a").asks and _a(c, "app-b").asks
    _check_caches(c)


# Queue current_priority: clamping ---------------------------------------------------------------

CLAMPS = _config("""\
          - name: up
            queues:
              - name: top
                properties:
                  priority.offset: "2147483647"
          - name: down
            properties:
              priority.offset: "10"
            queues:
              - name: bottom
                properties:
                  priority.offset: "-2147483648"
          - name: down-fenced
            properties:
              priority.policy: fence
            queues:
              - name: bottom
                properties:
                  priority.offset: "-2147483648"
          - name: plain
          - name: plain-fenced
            properties:
              priority.policy: fence
              priority.offset: "4"
""")


def test_a_large_offset_clamps_at_the_maximum() -> None:
    c = Cluster(CLAMPS)
    _apps(c, ("app", "root.up.top"))
    c.ask("app", "k", {"memory": 1}, priority=5)
    assert _q(c, "root.up.top").inner_priority == 5
    assert _q(c, "root.up.top").current_priority == MAX_PRIORITY  # 5 + (2**31 - 1), clamped
    assert _q(c, "root.up").current_priority == MAX_PRIORITY
    assert _q(c, "root").current_priority == MAX_PRIORITY
    _check_caches(c)


def test_a_large_negative_offset_clamps_at_the_minimum_and_still_counts_as_pending() -> None:
    # -1 + -2**31 clamps to MIN_PRIORITY. MIN_PRIORITY is also what a queue with nothing pending
    # shows, but core/objects/priority.py's rule is that a queue caches "the priorities of its
    # applications or children that have something pending" and shows "the highest inside plus its
    # offset, clamped" when anything is pending. So the clamped leaf stays among its parent's inputs
    # (with MIN_PRIORITY), and the parent still applies its own offset (or fence) on top of it.
    c = Cluster(CLAMPS)
    _apps(c, ("app", "root.down.bottom"), ("app-f", "root.down-fenced.bottom"))
    c.ask("app", "k", {"memory": 1}, priority=-1)
    c.ask("app-f", "k", {"memory": 1}, priority=-1)
    bottom = _q(c, "root.down.bottom")
    assert bottom.inner_priority == -1
    assert bottom.current_priority == MIN_PRIORITY
    assert _q(c, "root.down").child_priorities == {"bottom": MIN_PRIORITY}
    assert _q(c, "root.down").current_priority == MIN_PRIORITY + 10
    # A fence above shows its offset (0) because something is pending inside.
    assert _q(c, "root.down-fenced").child_priorities == {"bottom": MIN_PRIORITY}
    assert _q(c, "root.down-fenced").current_priority == 0
    assert _q(c, "root").child_priorities == {"down": MIN_PRIORITY + 10, "down-fenced": 0}
    _check_caches(c)
    # Once the ask goes, the leaf has nothing pending and leaves its parent's inputs.
    c.release("app", "k")
    assert bottom.current_priority == MIN_PRIORITY
    assert _q(c, "root.down").child_priorities == {}
    assert _q(c, "root.down").current_priority == MIN_PRIORITY
    assert "down" not in _q(c, "root").child_priorities
    _check_caches(c)


def test_an_ask_at_the_minimum_priority_is_still_pending() -> None:
    # Same rule at the application level: an ask of priority -2**31 is pending, so its application is
    # among the leaf's inputs, and a fence or offset above applies.
    c = Cluster(CLAMPS)
    _apps(c, ("p", "root.plain"), ("f", "root.plain-fenced"))
    c.ask("p", "k", {"memory": 1}, priority=MIN_PRIORITY)
    c.ask("f", "k", {"memory": 1}, priority=MIN_PRIORITY)
    assert _a(c, "p").ask_max_priority == MIN_PRIORITY
    assert _q(c, "root.plain").app_priorities == {"p": MIN_PRIORITY}
    assert _q(c, "root.plain").current_priority == MIN_PRIORITY
    assert _q(c, "root.plain-fenced").app_priorities == {"f": MIN_PRIORITY}
    assert _q(c, "root.plain-fenced").current_priority == 4
    assert _q(c, "root").child_priorities == {"plain": MIN_PRIORITY, "plain-fenced": 4}
    _check_caches(c)
    c.release("f", "k")
    assert _q(c, "root.plain-fenced").app_priorities == {}
    assert _q(c, "root.plain-fenced").current_priority == MIN_PRIORITY
    assert _q(c, "root").child_priorities == {"plain": MIN_PRIORITY}
    _check_caches(c)


# Queue current_priority: idle queues ------------------------------------------------------------


def test_a_queue_with_nothing_pending_does_not_raise_its_parent() -> None:
    c = Cluster(OFFSETS)
    _apps(c, ("busy", "root.parent.plain"), ("idle", "root.parent.boosted"))
    c.ask("busy", "k", {"memory": 1}, priority=-40)
    boosted = _q(c, "root.parent.boosted")
    # An application without asks, in a leaf with a positive offset: the leaf shows nothing.
    assert boosted.current_priority == MIN_PRIORITY
    assert boosted.app_priorities == {}
    assert _q(c, "root.parent").child_priorities == {"plain": -40}
    assert _q(c, "root.parent").current_priority == 60
    # lowered has no application at all.
    assert _q(c, "root.parent.lowered").current_priority == MIN_PRIORITY
    _check_caches(c)


# Incremental propagation ------------------------------------------------------------------------

DEEP = _config("""\
          - name: p1
            queues:
              - name: p2
                queues:
                  - name: hi
                  - name: lo
          - name: f
            properties:
              priority.policy: fence
            queues:
              - name: g
                queues:
                  - name: x
""")


@pytest.fixture
def recalculated(monkeypatch: pytest.MonkeyPatch) -> list[str]:
    """The full names of the queues priority._recalculate is called for, in order."""
    calls: list[str] = []
    original = priority._recalculate

    def counting(queue: Queue) -> bool:
        calls.append(queue.full_name)
        return original(queue)

    monkeypatch.setattr(priority, "_recalculate", counting)
    return calls


def _deep() -> Cluster:
    c = Cluster(DEEP)
    _apps(c, ("app-hi", "root.p1.p2.hi"), ("app-lo", "root.p1.p2.lo"), ("app-hi2", "root.p1.p2.hi"))
    _apps(c, ("app-x", "root.f.g.x"))
    c.ask("app-hi", "k0", {"memory": 1}, priority=100)
    c.ask("app-x", "k0", {"memory": 1}, priority=1)
    return c


def _values(c: Cluster) -> dict[str, tuple[int, int]]:
    return {q.full_name: (q.current_priority, q.inner_priority) for q in c.partition.queues.values()}


def test_a_lower_ask_under_a_higher_sibling_stops_at_the_common_parent(recalculated: list[str]) -> None:
    c = _deep()
    before = _values(c)
    recalculated.clear()
    c.ask("app-lo", "k1", {"memory": 1}, priority=5)
    assert recalculated == ["root.p1.p2.lo", "root.p1.p2"]
    after = _values(c)
    assert after.pop("root.p1.p2.lo") == (5, 5)
    before.pop("root.p1.p2.lo")
    assert after == before  # p2, p1 and root did not change
    _check_caches(c)


def test_a_lower_application_in_the_same_leaf_stops_at_the_leaf(recalculated: list[str]) -> None:
    c = _deep()
    recalculated.clear()
    c.ask("app-hi2", "k1", {"memory": 1}, priority=50)
    assert recalculated == ["root.p1.p2.hi"]
    assert _q(c, "root.p1.p2.hi").app_priorities == {"app-hi": 100, "app-hi2": 50}


def test_a_lower_ask_in_the_same_application_recalculates_nothing(recalculated: list[str]) -> None:
    c = _deep()
    recalculated.clear()
    c.ask("app-hi", "k1", {"memory": 1}, priority=50)
    c.release("app-hi", "k1")  # not the maximum: nothing changes either
    assert recalculated == []


def test_a_higher_ask_goes_all_the_way_up(recalculated: list[str]) -> None:
    c = _deep()
    recalculated.clear()
    c.ask("app-lo", "k1", {"memory": 1}, priority=200)
    assert recalculated == ["root.p1.p2.lo", "root.p1.p2", "root.p1", "root"]
    assert _q(c, "root").current_priority == 200
    recalculated.clear()
    c.release("app-lo", "k1")  # and back down the same way
    assert recalculated == ["root.p1.p2.lo", "root.p1.p2", "root.p1", "root"]
    assert _q(c, "root").current_priority == 100
    _check_caches(c)


def test_a_change_stops_at_a_fence(recalculated: list[str]) -> None:
    c = _deep()
    root_before = _q(c, "root").current_priority
    recalculated.clear()
    c.ask("app-x", "k1", {"memory": 1}, priority=500)
    assert recalculated == ["root.f.g.x", "root.f.g", "root.f"]
    assert _q(c, "root.f").inner_priority == 500
    assert _q(c, "root.f").current_priority == 0
    assert _q(c, "root").current_priority == root_before
    recalculated.clear()
    c.release("app-x", "k1")
    assert recalculated == ["root.f.g.x", "root.f.g", "root.f"]
    assert _q(c, "root.f").inner_priority == 1
    _check_caches(c)


def test_a_fence_becoming_pending_is_seen_by_its_parent(recalculated: list[str]) -> None:
    c = Cluster(DEEP)
    _apps(c, ("app-x", "root.f.g.x"))
    recalculated.clear()
    c.ask("app-x", "k", {"memory": 1}, priority=-7)
    # The fence goes from nothing pending to its offset (0): root must learn that.
    assert recalculated == ["root.f.g.x", "root.f.g", "root.f", "root"]
    assert _q(c, "root").child_priorities == {"f": 0}
    assert _q(c, "root").current_priority == 0


# application.sort.priority ----------------------------------------------------------------------

SORT_PRIORITY = _config("""\
          - name: off
            properties:
              application.sort.priority: disabled
            queues:
              - name: a
                resources: {guaranteed: {memory: 10}}
              - name: b
                resources: {guaranteed: {memory: 10}}
              - name: again
                properties:
                  application.sort.priority: enabled
                queues:
                  - name: c
                    resources: {guaranteed: {memory: 10}}
                  - name: d
                    resources: {guaranteed: {memory: 10}}
          - name: on
            queues:
              - name: e
                resources: {guaranteed: {memory: 10}}
              - name: f
                resources: {guaranteed: {memory: 10}}
""")


def test_sort_priority_is_enabled_by_default_and_disabled_flows_down_until_re_enabled() -> None:
    c = Cluster(SORT_PRIORITY)
    enabled = {name: _q(c, name).props.sort_priority_enabled for name in c.partition.queues}
    assert enabled == {
        "root": True,
        "root.off": False,
        "root.off.a": False,
        "root.off.b": False,
        "root.off.again": True,
        "root.off.again.c": True,
        "root.off.again.d": True,
        "root.on": True,
        "root.on.e": True,
        "root.on.f": True,
    }


def _used_and_asking(c: Cluster, leaves: dict[str, tuple[int, int]]) -> None:
    """For each leaf: an application using `used` memory (a running allocation) and asking at `prio`."""
    c.node("n1", {"memory": 1000, "vcore": 1000})
    for leaf, (used, prio) in leaves.items():
        app_id = f"app-{leaf.rsplit('.', 1)[1]}"
        _apps(c, (app_id, leaf))
        if used:
            c.ask(app_id, "running", {"memory": used}, node_id="n1")
        c.ask(app_id, "pending", {"memory": 1}, priority=prio)


def test_disabled_on_a_parent_its_children_sort_by_fair_share_only() -> None:
    c = Cluster(SORT_PRIORITY)
    # a uses 2 of 10 and asks at 0; b uses 8 of 10 and asks at 100.
    _used_and_asking(
        c,
        {
            "root.off.a": (2, 0),
            "root.off.b": (8, 100),
            "root.off.again.c": (2, 0),
            "root.off.again.d": (8, 100),
            "root.on.e": (2, 0),
            "root.on.f": (8, 100),
        },
    )
    assert _q(c, "root.off.b").current_priority > _q(c, "root.off.a").current_priority
    # Priority ignored: a (2 of 10) before b (8 of 10) although b asks at 100.
    assert [n for n in _names(sorted_children(_q(c, "root.off"))) if n in ("a", "b")] == ["a", "b"]
    assert _names(sorted_children(_q(c, "root.off.again"))) == ["d", "c"]  # re-enabled
    assert _names(sorted_children(_q(c, "root.on"))) == ["f", "e"]  # enabled by default


def test_disabled_on_a_parent_its_leaves_sort_applications_without_priority() -> None:
    c = Cluster(SORT_PRIORITY)
    for leaf in ("root.off.a", "root.off.again.c"):
        suffix = leaf.rsplit(".", 1)[1]
        _apps(c, (f"old-{suffix}", leaf))
        c.clock.advance(1)
        _apps(c, (f"young-{suffix}", leaf))
        c.ask(f"old-{suffix}", "k", {"memory": 1}, priority=0)
        c.ask(f"young-{suffix}", "k", {"memory": 1}, priority=100)
    order = [a.app_id for a in sorted_applications(_q(c, "root.off.a"))]
    assert order == ["old-a", "young-a"]  # fifo alone
    order = [a.app_id for a in sorted_applications(_q(c, "root.off.again.c"))]
    assert order == ["young-c", "old-c"]  # priority first


FIFO_LEAF = _config("""\
          - name: leaf
            properties:
              application.sort.policy: fifo
              application.sort.priority: {setting}
""")


@pytest.mark.parametrize(("setting", "winner"), [("enabled", "young"), ("disabled", "old")])
def test_a_younger_higher_priority_application_goes_first_only_with_priority_sorting(
    setting: str, winner: str
) -> None:
    c = Cluster(FIFO_LEAF.format(setting=setting))
    c.node("n1", {"memory": 10, "vcore": 10})  # room for one ask
    _apps(c, ("old", "root.leaf"))
    c.ask("old", "k", {"memory": 10}, priority=1)
    c.clock.advance(5)
    _apps(c, ("young", "root.leaf"))
    c.ask("young", "k", {"memory": 10}, priority=10)
    assert _a(c, "old").submission_time < _a(c, "young").submission_time
    assert c.schedule() == 1
    loser = "old" if winner == "young" else "young"
    assert "k" in _a(c, winner).allocations
    assert "k" in _a(c, loser).asks
    _check_caches(c)


def test_fair_leaf_with_priority_sorting_puts_priority_before_usage() -> None:
    c = Cluster(
        _config("""\
          - name: leaf
            properties:
              application.sort.policy: fair
""")
    )
    c.node("n1", {"memory": 100, "vcore": 10})
    _apps(c, ("heavy", "root.leaf"), ("light", "root.leaf"))
    c.ask("heavy", "running", {"memory": 50}, node_id="n1")
    c.ask("heavy", "k", {"memory": 1}, priority=3)
    c.ask("light", "k", {"memory": 1}, priority=2)
    assert [a.app_id for a in sorted_applications(_q(c, "root.leaf"))] == ["heavy", "light"]
    c.release("heavy", "k")
    c.ask("heavy", "k2", {"memory": 1}, priority=2)  # equal priorities: fair usage decides
    assert [a.app_id for a in sorted_applications(_q(c, "root.leaf"))] == ["light", "heavy"]


PARENT_SORT = _config(
    """\
          - name: hi
            resources: {guaranteed: {memory: 10}}
          - name: lo
            resources: {guaranteed: {memory: 10}}
""",
    root_properties="""\
          application.sort.priority: {setting}
""",
)


@pytest.mark.parametrize(("setting", "winner"), [("enabled", "hi"), ("disabled", "lo")])
def test_a_parent_puts_the_higher_priority_child_first_even_above_its_share(
    setting: str, winner: str
) -> None:
    c = Cluster(PARENT_SORT.replace("{setting}", setting))
    c.node("n1", {"memory": 13, "vcore": 10})
    _apps(c, ("app-hi", "root.hi"), ("app-lo", "root.lo"))
    c.ask("app-hi", "running", {"memory": 8}, node_id="n1")  # hi uses 8 of its 10, lo nothing
    c.ask("app-hi", "k", {"memory": 5}, priority=10)
    c.ask("app-lo", "k", {"memory": 5}, priority=1)
    expected = ["hi", "lo"] if winner == "hi" else ["lo", "hi"]
    assert _names(sorted_children(_q(c, "root"))) == expected
    assert c.schedule() == 1  # room for one of them
    assert "k" in _a(c, f"app-{winner}").allocations
    _check_caches(c)


def test_equal_priorities_fall_back_to_fair_share() -> None:
    c = Cluster(PARENT_SORT.replace("{setting}", "enabled"))
    c.node("n1", {"memory": 100, "vcore": 10})
    _apps(c, ("app-hi", "root.hi"), ("app-lo", "root.lo"))
    c.ask("app-hi", "running", {"memory": 8}, node_id="n1")
    c.ask("app-hi", "k", {"memory": 5}, priority=7)
    c.ask("app-lo", "k", {"memory": 5}, priority=7)
    assert _names(sorted_children(_q(c, "root"))) == ["lo", "hi"]


# Reload -------------------------------------------------------------------------------------------

RELOAD = """
partitions:
  - name: default
    queues:
      - name: root
        submitacl: "*"
        queues:
          - name: parent
            properties:
              priority.policy: {parent_policy}
              priority.offset: "{parent_offset}"
            queues:
              - name: leaf
                properties:
                  priority.offset: "{leaf_offset}"
              - name: other
          - name: idle
            properties:
              priority.offset: "{leaf_offset}"
"""


def _reload_config(parent_policy: str = "default", parent_offset: int = 0, leaf_offset: int = 0) -> str:
    return RELOAD.format(parent_policy=parent_policy, parent_offset=parent_offset, leaf_offset=leaf_offset)


def _reload(c: Cluster, text: str) -> None:
    replies: list[Exception | None] = []
    c.ctx.apply(UpdateConfig(c.rm_id, load_config(text).config, reply=replies.append))
    assert replies == [None]


def test_a_reload_that_changes_an_offset_updates_priorities_at_once() -> None:
    c = Cluster(_reload_config(leaf_offset=5))
    _apps(c, ("app", "root.parent.leaf"), ("other", "root.parent.other"), ("idle", "root.idle"))
    c.ask("app", "k", {"memory": 1}, priority=10)
    c.ask("other", "k", {"memory": 1}, priority=12)
    assert _q(c, "root.parent.leaf").current_priority == 15
    assert _q(c, "root.parent").current_priority == 15
    _reload(c, _reload_config(leaf_offset=50, parent_offset=-5))
    assert _q(c, "root.parent.leaf").current_priority == 60
    assert _q(c, "root.parent").child_priorities == {"leaf": 60, "other": 12}
    assert _q(c, "root.parent").current_priority == 55
    assert _q(c, "root").current_priority == 55
    assert _q(c, "root.idle").current_priority == MIN_PRIORITY  # an offset alone is not pending
    assert _q(c, "root").child_priorities == {"parent": 55}
    _check_caches(c)
    # The caches keep working incrementally after the reload.
    c.release("app", "k")
    assert _q(c, "root.parent").current_priority == 7
    assert _q(c, "root").current_priority == 7
    _check_caches(c)


def test_a_reload_that_adds_or_removes_a_fence_updates_priorities_at_once() -> None:
    c = Cluster(_reload_config())
    _apps(c, ("app", "root.parent.leaf"))
    c.ask("app", "k", {"memory": 1}, priority=10)
    assert _q(c, "root").current_priority == 10
    _reload(c, _reload_config(parent_policy="fence", parent_offset=3))
    assert _q(c, "root.parent").props.is_priority_fence
    assert _q(c, "root.parent").inner_priority == 10
    assert _q(c, "root.parent").current_priority == 3
    assert _q(c, "root").current_priority == 3
    _check_caches(c)
    c.ask("app", "k2", {"memory": 1}, priority=20)  # stops at the new fence
    assert _q(c, "root.parent").inner_priority == 20
    assert _q(c, "root").current_priority == 3
    _reload(c, _reload_config())
    assert _q(c, "root.parent").current_priority == 20
    assert _q(c, "root").current_priority == 20
    _check_caches(c)


BUSY_LEAF = """
partitions:
  - name: default
    queues:
      - name: root
        submitacl: "*"
        queues:
          - name: team
"""
TEAM_AS_PARENT = """
partitions:
  - name: default
    queues:
      - name: root
        submitacl: "*"
        queues:
          - name: team
            queues:
              - name: sub
"""


def test_a_reload_that_would_make_a_busy_leaf_a_parent_is_refused_and_changes_nothing() -> None:
    c = Cluster(BUSY_LEAF)
    c.node("n1", {"memory": 10, "vcore": 10})
    _apps(c, ("a1", "root.team"))
    c.ask("a1", "running", {"memory": 1}, node_id="n1")
    errors: list[Exception | None] = []
    c.ctx.apply(UpdateConfig(c.rm_id, load_config(TEAM_AS_PARENT).config, reply=errors.append))
    assert len(errors) == 1 and errors[0] is not None
    assert "root.team holds 1 application(s) and cannot become a parent queue" in str(errors[0])
    team = _q(c, "root.team")
    assert team.is_leaf and not team.children
    assert c.partition.find_queue("root.team.sub") is None
