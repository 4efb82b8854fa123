"""application.sort.priority: how priorities order applications in a leaf and children under a parent."""

from __future__ import annotations

import pytest

from core.policies.queue_sort import sorted_applications, sorted_children
from tests.unit.domain_helpers import Cluster
from tests.unit.priority_helpers import _a, _apps, _check_caches, _config, _names, _q

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
