"""Priority caches: an application's highest ask priority, and how a change propagates up the
queues incrementally (recalculating only as far as needed).

Property parsing (values, case, warnings, what inherit() filters) is in test_properties.py.
"""

from __future__ import annotations

from collections.abc import Iterator

import pytest

from core.objects import priority
from core.objects.allocation import Allocation
from core.objects.application import Application
from core.objects.partition_key import PartitionKey
from core.objects.priority_range import MAX_PRIORITY, MIN_PRIORITY
from core.objects.queue import Queue
from core.resources import Resource
from tests.unit.domain_helpers import Cluster
from tests.unit.priority_helpers import _a, _apps, _check_caches, _config, _q

PART = PartitionKey("rm", "default")

# Application.ask_max_priority ---------------------------------------------------------------------


def _bare_app() -> Application:
    root = Queue("root", None, is_leaf=False)
    return Application("app", PART, Queue("leaf", root))


def _ask(key: str, prio: int) -> Allocation:
    return Allocation(key, "app", PART, Resource({"memory": 1}), priority=prio)


class _CountingAsks(dict[str, Allocation]):
    """An asks dict that counts how many asks a scan of values() looked at."""

    visited = 0

    # A generator, not a dict view: what it counts is how far a scan went (a test double only).
    def values(self) -> Iterator[Allocation]:  # type: ignore[override]
        for value in super().values():
            self.visited += 1
            yield value


def test_an_application_without_asks_has_the_minimum_priority() -> None:
    app = _bare_app()
    assert app.ask_max_priority == MIN_PRIORITY == -(2**31)


def test_adding_an_ask_raises_the_maximum_without_a_scan() -> None:
    app = _bare_app()
    app.asks = _CountingAsks(app.asks)
    app.add_ask(_ask("a", 5))
    assert app.ask_max_priority == 5
    app.add_ask(_ask("b", 3))  # lower: unchanged
    assert app.ask_max_priority == 5
    app.add_ask(_ask("c", 9))
    assert app.ask_max_priority == 9
    app.add_ask(_ask("d", MAX_PRIORITY))
    assert app.ask_max_priority == MAX_PRIORITY
    assert app.asks.visited == 0


def test_removing_an_ask_below_the_maximum_keeps_it_without_a_scan() -> None:
    app = _bare_app()
    app.add_ask(_ask("high", 10))
    app.add_ask(_ask("low", 1))
    app.asks = _CountingAsks(app.asks)
    app.remove_ask("low")
    assert app.ask_max_priority == 10
    assert app.asks.visited == 0


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


def test_removing_maximum_asks_never_walks_the_asks() -> None:
    """The maximum follows a count per priority: however many asks, removing one looks at none of the
    others (asks are placed in order, and a dict emptied from the front is slow to walk)."""
    app = _bare_app()
    app.add_ask(_ask("max-1", 10))
    app.add_ask(_ask("max-2", 10))
    for i in range(20):
        app.add_ask(_ask(f"low-{i}", i % 5))
    app.asks = _CountingAsks(app.asks)
    app.remove_ask("max-1")
    assert app.ask_max_priority == 10  # max-2 is still there
    app.remove_ask("max-2")
    assert app.ask_max_priority == 4
    for i in (4, 9, 14, 19):
        app.remove_ask(f"low-{i}")
    assert app.ask_max_priority == 3
    assert app.asks.visited == 0


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


def test_a_lower_application_in_the_same_leaf_recalculates_nothing(recalculated: list[str]) -> None:
    """The leaf's highest input stays where it was: no queue, the leaf included, is recomputed (an
    application per pod adds and removes its entry once each)."""
    c = _deep()
    before = _values(c)
    recalculated.clear()
    c.ask("app-hi2", "k1", {"memory": 1}, priority=50)
    assert recalculated == []
    assert _q(c, "root.p1.p2.hi").app_priorities == {"app-hi": 100, "app-hi2": 50}
    assert _values(c) == before
    _check_caches(c)


def test_a_new_highest_application_in_a_leaf_goes_up(recalculated: list[str]) -> None:
    c = _deep()
    recalculated.clear()
    c.ask("app-hi2", "k1", {"memory": 1}, priority=150)
    assert recalculated[0] == "root.p1.p2.hi"
    assert _q(c, "root.p1.p2.hi").inner_priority == 150
    _check_caches(c)


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
