"""Asks that come before their application (the two travel on separate streams): held, then added
when it comes, refused with its reason when it is rejected, or refused as unknown after the hold."""

from __future__ import annotations

from core.config import load_config
from core.objects.allocation import Allocation
from core.objects.application import AppState
from core.resources import Resource
from core.scheduler.commands import AppRemove, RegisterRM, UpdateApplications
from core.scheduler.early_asks import HOLD_SECONDS, EarlyAsks
from tests.unit.domain_helpers import ONE_LEAF, Cluster, drained
from tests.unit.test_cluster import NO_DEFAULT_QUEUE


def _cluster() -> Cluster:
    c = Cluster()
    c.node("n1", {"memory": 10})
    return c


def test_asks_before_their_application_are_added_in_order_when_it_comes() -> None:
    c = _cluster()
    c.ask("app-1", "a", {"memory": 1})
    c.ask("app-1", "b", {"memory": 1}, priority=5)
    out = drained(c)
    assert out.rejected_allocations == [] and "app-1" not in c.partition.applications
    assert c.partition.root.pending.is_zero()  # held: nothing pending until the application comes
    c.clock.advance(HOLD_SECONDS / 2)
    c.app("app-1")
    app = c.partition.applications["app-1"]
    assert list(app.asks) == ["a", "b"] and app.state == AppState.ACCEPTED
    assert c.partition.root.pending == {"memory": 2}
    c.schedule()
    out = drained(c)
    assert out.accepted_apps == ["app-1"] and out.rejected_allocations == []
    assert sorted(a.key for a in out.new_allocations) == ["a", "b"]
    assert len(c.ctx.early) == 0


def test_asks_held_for_a_rejected_application_are_refused_with_its_reason() -> None:
    c = Cluster(NO_DEFAULT_QUEUE)
    c.ask("app-1", "a", {"memory": 1})
    c.app("app-1", queue="root.nope")
    out = drained(c)
    [refused] = out.rejected_apps
    [rejected] = out.rejected_allocations
    assert (rejected.key, rejected.app_id) == ("a", "app-1")
    assert rejected.reason == f"application app-1 was rejected: {refused.reason}"
    assert "root.nope" in rejected.reason


def test_asks_after_their_applications_rejection_are_refused_at_once_with_its_reason() -> None:
    # Not held: the RM sent the application first (the usual order), and it was rejected.
    c = Cluster(NO_DEFAULT_QUEUE)
    c.app("app-1", queue="root.nope")
    [refused] = drained(c).rejected_apps
    c.ask("app-1", "a", {"memory": 1})
    [rejected] = drained(c).rejected_allocations
    assert rejected.reason == f"application app-1 was rejected: {refused.reason}"
    assert len(c.ctx.early) == 0
    c.app("app-1", queue="root.work")  # a new submission of the ID, accepted: its asks are its own
    c.ask("app-1", "b", {"memory": 1})
    assert list(c.partition.applications["app-1"].asks) == ["b"]


def test_an_application_that_never_comes_has_its_asks_refused_after_the_hold() -> None:
    c = _cluster()
    c.ask("ghost", "a", {"memory": 1})
    c.clock.advance(HOLD_SECONDS - 0.1)
    c.ctx.tick()
    assert drained(c).rejected_allocations == []
    c.clock.advance(0.1)
    c.ctx.tick()
    [rejected] = drained(c).rejected_allocations
    assert rejected.key == "a"
    assert rejected.reason == (
        "application ghost is not known in partition default; add it first"
        f" (its ask waited {HOLD_SECONDS:g}s for it)"
    )
    c.app("ghost")  # too late: the ask is gone
    assert c.partition.applications["ghost"].asks == {}


def test_a_release_takes_a_held_ask_back_and_a_removal_all_of_them() -> None:
    c = _cluster()
    c.ask("app-1", "a", {"memory": 1})
    c.ask("app-1", "b", {"memory": 1})
    c.release("app-1", "a")
    c.ask("app-2", "c", {"memory": 1})
    c.ctx.apply(UpdateApplications(c.rm_id, removes=(AppRemove("app-2", c.pname()),)))
    out = drained(c)
    assert out.rejected_allocations == []  # taken back quietly, as a pending ask's release is
    c.app("app-1")
    c.app("app-2")
    assert list(c.partition.applications["app-1"].asks) == ["b"]
    assert c.partition.applications["app-2"].asks == {}
    c.release("app-3")  # nothing held for it: refused as before
    assert "not known" in drained(c).rejected_allocations[0].reason


def test_past_the_bound_an_ask_of_an_unknown_application_is_refused_at_once() -> None:
    c = _cluster()
    c.ctx.early.max_held = 2
    for key in ("a", "b", "c"):
        c.ask("app-1", key, {"memory": 1})
    [rejected] = drained(c).rejected_allocations
    assert rejected.key == "c" and "add it first" in rejected.reason
    c.app("app-1")
    assert list(c.partition.applications["app-1"].asks) == ["a", "b"]


def test_an_rm_that_registers_again_loses_what_was_held_for_it() -> None:
    c = _cluster()
    c.ask("app-1", "a", {"memory": 1})
    c.ctx.apply(RegisterRM(c.rm_id, load_config(ONE_LEAF).config))
    assert len(c.ctx.early) == 0
    c.app("app-1")
    assert c.partition.applications["app-1"].asks == {}


def test_early_asks_counts_per_rm() -> None:
    early = EarlyAsks(max_held=1)
    c1, c2 = _cluster(), Cluster(rm_id="rm-2")
    assert early.hold(c1.pname(), _alloc(c1, "x", "k1"), 0.0)
    assert not early.hold(c1.pname(), _alloc(c1, "y", "k2"), 0.0)  # rm-1 is full
    assert early.hold(c2.pname(), _alloc(c2, "x", "k1"), 0.0)  # rm-2 is not
    assert [a.key for a in early.take(c1.pname(), "x")] == ["k1"]
    assert early.hold(c1.pname(), _alloc(c1, "y", "k2"), 0.0)


def _alloc(c: Cluster, app_id: str, key: str) -> Allocation:
    return Allocation(key, app_id, c.pname(), Resource({"memory": 1}))
