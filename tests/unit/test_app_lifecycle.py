"""The application state machine as the RM sees it, its timers, and maxapplications."""

from __future__ import annotations

from core.objects.application import Application, AppState
from core.scheduler.commands import AppRemove, UpdateApplications
from core.scheduler.early_asks import HOLD_SECONDS
from core.scheduler.results import AppUpdate, ResultBatch, Termination
from tests.unit.domain_helpers import Cluster

THREE_DAYS = 3 * 24 * 3600.0


def _drain(c: Cluster) -> ResultBatch:
    merged = ResultBatch(c.rm_id)
    for batch in c.ctx.drain_results():
        if batch.rm_id != c.rm_id:
            continue
        for name in vars(merged):
            if name != "rm_id":
                getattr(merged, name).extend(getattr(batch, name))
    return merged


def _states(updates: list[AppUpdate], app_id: str = "app-1") -> list[str]:
    return [u.state for u in updates if u.app_id == app_id]


def _app(c: Cluster, app_id: str = "app-1") -> Application:
    return c.partition.applications[app_id]


def _remove_app(c: Cluster, app_id: str) -> None:
    c.ctx.apply(UpdateApplications(c.rm_id, removes=(AppRemove(app_id, c.pname()),)))


def _running(c: Cluster, app_id: str = "app-1", key: str = "a") -> None:
    """An application with one allocation, and its updates drained."""
    c.app(app_id)
    c.ask(app_id, key, {"memory": 1})
    c.schedule()
    _drain(c)
    assert _app(c, app_id).state == AppState.RUNNING


def _completing(c: Cluster, app_id: str = "app-1") -> None:
    _running(c, app_id)
    c.release(app_id, "a")
    _drain(c)
    assert _app(c, app_id).state == AppState.COMPLETING


def test_new_app_is_new_until_its_first_ask() -> None:
    c = Cluster()
    c.app("app-1")
    out = _drain(c)
    assert out.accepted_apps == ["app-1"]
    assert out.updated_apps == []
    assert _app(c).state == AppState.NEW
    c.ask("app-1", "a", {"memory": 1})
    assert _app(c).state == AppState.ACCEPTED
    [update] = _drain(c).updated_apps
    assert (update.app_id, update.state, update.message) == ("app-1", "Accepted", "runApplication")


def test_second_ask_keeps_the_app_accepted() -> None:
    c = Cluster()
    c.app("app-1")
    c.ask("app-1", "a", {"memory": 1})
    c.ask("app-1", "b", {"memory": 1})
    assert _app(c).state == AppState.ACCEPTED
    assert _states(_drain(c).updated_apps) == ["Accepted"]


def test_first_allocation_makes_it_running() -> None:
    c = Cluster()
    c.app("app-1")
    c.ask("app-1", "a", {"memory": 1})
    c.schedule()  # no node: nothing allocated
    assert _app(c).state == AppState.ACCEPTED
    c.node("n1", {"memory": 10})
    c.schedule()
    assert _app(c).state == AppState.RUNNING
    assert _states(_drain(c).updated_apps) == ["Accepted", "Running"]


def test_releasing_the_last_allocation_makes_it_completing() -> None:
    c = Cluster()
    c.node("n1", {"memory": 10})
    c.app("app-1")
    c.ask("app-1", "a", {"memory": 1})
    c.ask("app-1", "b", {"memory": 1})
    c.schedule()
    _drain(c)
    c.release("app-1", "a")
    assert _app(c).state == AppState.RUNNING  # b still runs
    c.release("app-1", "b")
    assert _app(c).state == AppState.COMPLETING
    assert _states(_drain(c).updated_apps) == ["Completing"]


def test_a_pending_ask_keeps_the_app_running() -> None:
    c = Cluster()
    c.node("n1", {"memory": 1})
    c.app("app-1")
    c.ask("app-1", "a", {"memory": 1})
    c.ask("app-1", "too-big", {"memory": 5})
    c.schedule()
    c.release("app-1", "a")
    assert _app(c).state == AppState.RUNNING
    c.release("app-1", "too-big")  # the last ask goes too
    assert _app(c).state == AppState.COMPLETING


def test_new_ask_while_completing_goes_back_to_running() -> None:
    c = Cluster()
    c.node("n1", {"memory": 10})
    _completing(c)
    c.clock.advance(10)
    c.ask("app-1", "again", {"memory": 1})
    assert _app(c).state == AppState.RUNNING
    assert _states(_drain(c).updated_apps) == ["Running"]
    # The Completing timer was cancelled: 30 s after the first Completing nothing happens.
    c.clock.advance(25)
    c.ctx.tick()
    assert _app(c).state == AppState.RUNNING


def test_completing_becomes_completed_after_30_seconds_and_not_before() -> None:
    c = Cluster()
    c.node("n1", {"memory": 10})
    _completing(c)
    c.clock.advance(29.9)
    c.ctx.tick()
    assert _app(c).state == AppState.COMPLETING
    assert _drain(c).updated_apps == []
    c.clock.advance(0.1)
    c.ctx.tick()
    [update] = _drain(c).updated_apps
    assert (update.state, update.time) == ("Completed", c.clock.now)


def test_completed_app_is_gone_from_the_partition_and_its_queue() -> None:
    c = Cluster()
    c.node("n1", {"memory": 10})
    _completing(c)
    queue = _app(c).queue
    c.clock.advance(31)
    c.ctx.tick()
    assert "app-1" not in c.partition.applications
    assert "app-1" not in queue.applications
    c.ask("app-1", "late", {"memory": 1})
    assert _drain(c).rejected_allocations == []  # held: its application may be on its way again
    c.clock.advance(HOLD_SECONDS)
    c.ctx.tick()
    out = _drain(c)
    [rejected] = out.rejected_allocations
    assert (rejected.key, rejected.app_id) == ("late", "app-1")
    assert "not known" in rejected.reason
    assert c.partition.root.pending.is_zero()


def test_completed_app_id_can_be_reused() -> None:
    c = Cluster()
    c.node("n1", {"memory": 10})
    _completing(c)
    c.clock.advance(31)
    c.ctx.tick()
    c.app("app-1")
    assert _drain(c).accepted_apps == ["app-1"]
    assert _app(c).state == AppState.NEW


def test_completed_becomes_expired_after_three_days() -> None:
    c = Cluster()
    c.node("n1", {"memory": 10})
    _completing(c)
    c.clock.advance(30)
    c.ctx.tick()
    completed_at = c.clock.now
    _drain(c)
    c.clock.advance(THREE_DAYS - 1)
    c.ctx.tick()
    assert _drain(c).updated_apps == []
    c.clock.advance(1)
    c.ctx.tick()
    [update] = _drain(c).updated_apps
    assert (update.app_id, update.state, update.time) == ("app-1", "Expired", completed_at + THREE_DAYS)
    # Expired only once.
    c.clock.advance(THREE_DAYS)
    c.ctx.tick()
    assert _drain(c).updated_apps == []


def test_the_update_stream_carries_every_state_in_order() -> None:
    c = Cluster()
    c.node("n1", {"memory": 10})
    c.app("app-1")
    c.ask("app-1", "a", {"memory": 1})
    c.clock.advance(1)
    c.schedule()
    c.clock.advance(1)
    c.release("app-1", "a")
    c.clock.advance(1)
    c.ask("app-1", "b", {"memory": 1})
    c.schedule()
    c.clock.advance(1)
    c.release("app-1", "b")
    c.clock.advance(30)
    c.ctx.tick()
    c.clock.advance(THREE_DAYS)
    c.ctx.tick()
    updates = [u for u in _drain(c).updated_apps if u.app_id == "app-1"]
    assert [u.state for u in updates] == [
        "Accepted",
        "Running",
        "Completing",
        "Running",
        "Completing",
        "Completed",
        "Expired",
    ]
    times = [u.time - 1000.0 for u in updates]
    assert times == [0.0, 1.0, 2.0, 3.0, 4.0, 34.0, 34.0 + THREE_DAYS]


def test_updates_are_drained_once() -> None:
    c = Cluster()
    c.app("app-1")
    c.ask("app-1", "a", {"memory": 1})
    assert _states(_drain(c).updated_apps) == ["Accepted"]
    assert _drain(c).updated_apps == []


# RM removal -------------------------------------------------------------------------------------------


def test_rm_removal_releases_allocations_and_completes_the_app() -> None:
    c = Cluster()
    c.node("n1", {"memory": 10})
    c.app("app-1")
    c.ask("app-1", "a", {"memory": 2})
    c.ask("app-1", "b", {"memory": 3})
    c.ask("app-1", "pending", {"memory": 50})
    c.schedule()
    _drain(c)
    _remove_app(c, "app-1")
    out = _drain(c)
    assert sorted((r.key, r.termination) for r in out.released) == [
        ("a", Termination.STOPPED_BY_RM),
        ("b", Termination.STOPPED_BY_RM),
    ]
    assert all(r.message == "Application app-1 Removed" for r in out.released)
    assert _states(out.updated_apps) == ["Completing", "Completed"]
    assert "app-1" not in c.partition.applications
    assert c.partition.nodes["n1"].allocated.get("memory") == 0
    assert c.partition.root.allocated.is_zero()
    assert c.partition.root.pending.is_zero()
    # Gone for good: no later timer reports it again.
    c.clock.advance(THREE_DAYS + 60)
    c.ctx.tick()
    assert _drain(c).updated_apps == []


def test_rm_removal_of_an_accepted_app() -> None:
    c = Cluster()
    c.app("app-1")
    c.ask("app-1", "a", {"memory": 1})
    _drain(c)
    _remove_app(c, "app-1")
    out = _drain(c)
    assert out.released == []
    assert _states(out.updated_apps) == ["Completing", "Completed"]
    assert "app-1" not in c.partition.applications


def test_rm_removal_of_a_new_app_sends_no_update() -> None:
    c = Cluster()
    c.app("app-1")
    _drain(c)
    _remove_app(c, "app-1")
    out = _drain(c)
    assert out.updated_apps == []
    assert out.rejected_apps == []
    assert "app-1" not in c.partition.applications


def test_rm_removal_of_a_completing_app() -> None:
    c = Cluster()
    c.node("n1", {"memory": 10})
    _completing(c)
    _remove_app(c, "app-1")
    assert _states(_drain(c).updated_apps) == ["Completed"]
    assert "app-1" not in c.partition.applications


def test_rm_removal_of_an_unknown_app_sends_nothing() -> None:
    c = Cluster()
    c.node("n1", {"memory": 10})
    _completing(c)
    c.clock.advance(30)
    c.ctx.tick()
    _drain(c)
    _remove_app(c, "app-1")  # the RM removes it after seeing Completed
    _remove_app(c, "ghost")
    out = _drain(c)
    assert out.rejected_apps == []
    assert out.updated_apps == []


# maxapplications --------------------------------------------------------------------------------------

LIMITS = """
partitions:
  - name: default
    queues:
      - name: root
        submitacl: "*"
        queues:
          - name: parent
            maxapplications: 2
            queues:
              - name: one
                maxapplications: 1
              - name: two
                maxapplications: 2
"""


def _limited() -> Cluster:
    c = Cluster(LIMITS)
    c.node("n1", {"memory": 100})
    return c


def _submit(c: Cluster, app_id: str, queue: str) -> None:
    c.app(app_id, queue)
    c.ask(app_id, f"{app_id}-a", {"memory": 1})
    c.clock.advance(1)  # distinct submission times: fifo order is the submission order


def _allocated_apps(out: ResultBatch) -> list[str]:
    return [a.application_id for a in out.new_allocations]


def test_leaf_maxapplications_holds_back_a_second_app() -> None:
    c = _limited()
    _submit(c, "first", "root.parent.one")
    _submit(c, "second", "root.parent.one")
    c.schedule()
    out = _drain(c)
    assert _allocated_apps(out) == ["first"]
    assert _app(c, "first").state == AppState.RUNNING
    assert _app(c, "second").state == AppState.ACCEPTED
    assert _app(c, "second").allocations == {}
    assert "Running" not in _states(out.updated_apps, "second")
    # More asks for the running app are still served; the waiting one still gets nothing.
    c.ask("first", "first-b", {"memory": 1})
    c.schedule()
    assert _allocated_apps(_drain(c)) == ["first"]
    assert _app(c, "second").state == AppState.ACCEPTED


def test_waiting_app_runs_on_the_next_schedule_after_the_first_completes() -> None:
    c = _limited()
    _submit(c, "first", "root.parent.one")
    _submit(c, "second", "root.parent.one")
    c.schedule()
    _drain(c)
    c.release("first", "first-a")
    assert _app(c, "first").state == AppState.COMPLETING
    assert _drain(c).new_allocations == []  # nothing happens until the next cycle
    c.schedule()
    out = _drain(c)
    assert _allocated_apps(out) == ["second"]
    assert _app(c, "second").state == AppState.RUNNING
    assert _states(out.updated_apps, "second") == ["Running"]


def test_removing_the_running_app_lets_the_waiting_one_run() -> None:
    c = _limited()
    _submit(c, "first", "root.parent.one")
    _submit(c, "second", "root.parent.one")
    c.schedule()
    _remove_app(c, "first")
    c.schedule()
    assert "second" in _allocated_apps(_drain(c))


def test_parent_maxapplications_holds_across_leaves() -> None:
    c = _limited()
    _submit(c, "x1", "root.parent.one")
    _submit(c, "y1", "root.parent.two")
    _submit(c, "y2", "root.parent.two")  # leaf two allows 2, but the parent is full
    c.schedule()
    out = _drain(c)
    assert sorted(_allocated_apps(out)) == ["x1", "y1"]
    assert _app(c, "y2").state == AppState.ACCEPTED
    assert _app(c, "y2").allocations == {}
    parent = c.partition.find_queue("root.parent")
    assert parent is not None and parent.running_apps == 2
    c.release("x1", "x1-a")
    c.schedule()
    assert _allocated_apps(_drain(c)) == ["y2"]
    assert _app(c, "y2").state == AppState.RUNNING
    assert parent.running_apps == 2


def test_completing_app_taking_a_new_ask_is_never_held_back() -> None:
    c = _limited()
    _submit(c, "first", "root.parent.one")
    _submit(c, "second", "root.parent.one")
    c.schedule()
    c.release("first", "first-a")
    c.schedule()  # second takes the slot
    _drain(c)
    c.ask("first", "first-b", {"memory": 1})
    assert _app(c, "first").state == AppState.RUNNING
    c.schedule()
    assert _allocated_apps(_drain(c)) == ["first"]


def test_maxapplications_holds_back_an_app_with_several_asks() -> None:
    c = _limited()
    _submit(c, "first", "root.parent.one")
    _submit(c, "second", "root.parent.one")
    c.ask("second", "second-b", {"memory": 1})
    c.schedule()
    out = _drain(c)
    assert _allocated_apps(out) == ["first"]
    assert _app(c, "second").state == AppState.ACCEPTED


def test_the_completing_timeout_looks_only_at_completing_applications() -> None:
    """The tick's timeout walks the partition's Completing applications (an index the state changes
    keep), not all of them: it must still complete each one on time, in the order they got there, and
    never one that left the partition or Completing meanwhile."""
    c = Cluster()
    c.node("n1", {"memory": 10})
    for app_id in ("app-1", "app-2", "app-3"):
        _running(c, app_id)
    c.release("app-2", "a")
    c.clock.advance(5)
    c.release("app-1", "a")
    c.release("app-3", "a")
    _drain(c)
    assert set(c.partition.lifecycle.completing) == {"app-1", "app-2", "app-3"}
    c.ask("app-3", "again", {"memory": 1})  # back to Running: out of the index
    assert set(c.partition.lifecycle.completing) == {"app-1", "app-2"}
    c.clock.advance(25.5)  # app-2's 30 s are over, app-1's not yet
    c.ctx.tick()
    assert _states(_drain(c).updated_apps, "app-2") == ["Completed"]
    assert set(c.partition.lifecycle.completing) == {"app-1"}
    c.clock.advance(5)
    c.ctx.tick()
    out = _drain(c).updated_apps
    assert (_states(out, "app-1"), _states(out, "app-3")) == (["Completed"], [])
    assert c.partition.lifecycle.completing == {}
    assert _app(c, "app-3").state == AppState.RUNNING
