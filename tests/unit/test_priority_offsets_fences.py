"""Queue current_priority: offsets, fences (the design document's nested tenants), clamping, and
queues with nothing pending.
"""

from __future__ import annotations

import pytest

from core.objects.priority_range import MAX_PRIORITY, MIN_PRIORITY
from core.policies.queue_sort import sorted_children
from tests.unit.domain_helpers import Cluster
from tests.unit.priority_helpers import _a, _apps, _check_caches, _config, _names, _q

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
