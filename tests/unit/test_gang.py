"""Gang scheduling in the core, driven directly: placeholders, replacement in two steps, timeouts."""

from __future__ import annotations

from collections.abc import Mapping

from core.objects.allocation import Allocation
from core.objects.application import AppState
from core.objects.gang import DEFAULT_PLACEHOLDER_TIMEOUT, GangStyle
from core.resources import Resource, sum_resources
from core.scheduler.commands import AppAdd, NodeAction, ReleaseRequest, UpdateAllocations, UpdateApplications
from core.scheduler.preemption.required_node import choose_victims
from core.scheduler.results import ResultBatch, Termination
from core.views.app_views import application_view
from tests.unit.domain_helpers import Cluster

MEM = {"memory": 2}
TIMEOUT_MS = 60_000


def _gang_app(
    c: Cluster, members: int, style: str = "", timeout_ms: int = TIMEOUT_MS, app_id: str = "job"
) -> None:
    size = Resource({"memory": 2 * members})
    add = AppAdd(
        app_id, c.pname(), "root.default", user="u",
        placeholder_ask=size, gang_style=GangStyle(style) if style else None,
        placeholder_timeout_ms=timeout_ms,
    )  # fmt: skip
    c.ctx.apply(UpdateApplications(c.rm_id, adds=(add,)))


def _task(
    c: Cluster, key: str, placeholder: bool, resource: Mapping[str, int] = MEM, app_id: str = "job"
) -> Allocation:
    res = Resource(resource)
    return Allocation(key, app_id, c.pname(), res, task_group="workers", placeholder=placeholder)


def _send(c: Cluster, *asks: Allocation) -> None:
    c.ctx.apply(UpdateAllocations(c.rm_id, allocations=asks))


def _confirm(c: Cluster, key: str, termination: str, app_id: str = "job") -> None:
    release = ReleaseRequest(c.pname(), app_id, key, termination=Termination(termination))
    c.ctx.apply(UpdateAllocations(c.rm_id, releases=(release,)))


def _drain(c: Cluster) -> ResultBatch:
    merged = ResultBatch(c.rm_id)
    for batch in c.ctx.drain_results():
        for name in vars(merged):
            if name != "rm_id":
                getattr(merged, name).extend(getattr(batch, name))
    return merged


def _states(batch: ResultBatch) -> list[str]:
    return [u.state for u in batch.updated_apps]


def _timer_fires(c: Cluster) -> ResultBatch:
    """The placeholder timeout passes; what the core then says."""
    c.clock.advance(TIMEOUT_MS / 1000)
    c.ctx.tick()
    return _drain(c)


def _gang_on_one_node(memory: int, members: int, style: str = "", real: int = 0) -> Cluster:
    """A gang of `members` placeholders on node n1 of `memory`, `real` real tasks of 1 sent with it,
    one cycle run and its answers read."""
    c = Cluster()
    c.node("n1", {"memory": memory})
    _gang_app(c, members=members, style=style)
    _placeholders(c, members)
    if real:
        _send(c, *(_task(c, f"real-{i}", False, {"memory": 1}) for i in range(real)))
    c.schedule()
    _drain(c)
    return c


def _placeholders(c: Cluster, members: int) -> None:
    _send(c, *(_task(c, f"ph-{i}", placeholder=True) for i in range(members)))


def test_the_gang_runs_only_once_every_placeholder_is_allocated() -> None:
    c = Cluster()
    c.node("n1", {"memory": 4})
    _gang_app(c, members=3)
    _placeholders(c, 3)
    c.schedule()
    out = _drain(c)
    assert sorted(a.key for a in out.new_allocations) == ["ph-0", "ph-1"]
    assert _states(out) == ["Accepted"]  # two of three: the gang has not started
    c.node("n2", {"memory": 4})
    c.schedule()
    out = _drain(c)
    assert [a.key for a in out.new_allocations] == ["ph-2"]
    assert _states(out) == ["Running"]
    assert c.partition.find_queue("root.default").allocated.get("memory") == 6  # type: ignore[union-attr]


def test_a_real_task_takes_a_placeholders_place_in_two_steps_on_the_same_node() -> None:
    c = Cluster()
    c.node("n1", {"memory": 4})
    c.node("n2", {"memory": 4})
    _gang_app(c, members=2)
    _placeholders(c, 2)
    # The real tasks come at once; they wait for the gang instead of taking the free room.
    _send(c, _task(c, "real-0", False, {"memory": 1}), _task(c, "real-1", False, {"memory": 1}))
    c.schedule()
    out = _drain(c)
    assert sorted(a.key for a in out.new_allocations) == ["ph-0", "ph-1"]
    node_of = {a.key: a.node_id for a in out.new_allocations}
    # Step one: the core asks for the placeholders back, and sends no real allocation yet.
    c.schedule()
    out = _drain(c)
    assert out.new_allocations == []
    replaced = {r.key: r for r in out.released}
    assert set(replaced) == {"ph-0", "ph-1"}
    assert {r.termination for r in replaced.values()} == {"PLACEHOLDER_REPLACED"}
    assert c.ctx.metrics.placeholder_releases == {"replaced": 2, "timeout": 0}
    # Step two: the RM confirms one release; its real task goes out on the placeholder's node.
    _confirm(c, "ph-0", "PLACEHOLDER_REPLACED")
    out = _drain(c)
    assert len(out.new_allocations) == 1
    real = out.new_allocations[0]
    assert real.node_id == node_of["ph-0"] and real.placeholder_used
    assert out.released == []  # a confirmation is not echoed
    queue = c.partition.find_queue("root.default")
    assert queue is not None and queue.allocated.get("memory") == 2 + 1  # one placeholder, one real task
    view = application_view(c.partition, "job")
    assert view.get("placeholderData", []) == [
        {"taskGroupName": "workers", "count": 2, "minResource": {"memory": 2}, "replaced": 1, "timedout": 0}
    ]
    assert view["applicationState"] == "Running"


def test_real_tasks_wait_with_a_reason_while_the_gang_is_incomplete() -> None:
    c = Cluster()
    c.node("n1", {"memory": 2})
    _gang_app(c, members=2)
    _placeholders(c, 2)
    _send(c, _task(c, "real-0", False, {"memory": 1}))
    c.schedule()
    c.schedule()
    out = _drain(c)
    assert [a.key for a in out.new_allocations] == ["ph-0"]
    assert not [r for r in out.released if r.key.startswith("ph")]
    real = c.partition.applications["job"].asks["real-0"]
    assert "gang is not complete" in real.pending_reason


def test_soft_timeout_releases_the_placeholders_resumes_and_then_runs_the_real_tasks() -> None:
    c = _gang_on_one_node(memory=4, members=3, style="Soft", real=1)
    out = _timer_fires(c)
    assert _states(out) == ["Resuming"]
    assert out.updated_apps[0].message == "ResourceReservationTimeout"
    timed_out = {r.key: r.termination for r in out.released}
    assert timed_out == {"ph-0": "TIMEOUT", "ph-1": "TIMEOUT", "ph-2": "TIMEOUT"}  # ph-2 was pending
    assert c.ctx.metrics.placeholder_releases == {"replaced": 0, "timeout": 3}
    c.schedule()
    assert _drain(c).new_allocations == []  # the real task waits until the placeholders are gone
    _confirm(c, "ph-0", "TIMEOUT")
    _confirm(c, "ph-1", "TIMEOUT")
    out = _drain(c)
    assert _states(out) == ["Accepted"]
    assert out.released == []
    c.schedule()
    out = _drain(c)
    assert [a.key for a in out.new_allocations] == ["real-0"]
    assert _states(out) == ["Running"]
    group = application_view(c.partition, "job").get("placeholderData", [])[0]
    assert (group["count"], group["replaced"], group["timedout"]) == (3, 0, 3)


def test_hard_timeout_fails_the_application_and_removes_its_real_tasks() -> None:
    c = _gang_on_one_node(memory=2, members=2, style="Hard", real=1)
    out = _timer_fires(c)
    assert _states(out) == ["Failing"]
    assert {r.key: r.termination for r in out.released} == {
        "ph-0": "TIMEOUT", "ph-1": "TIMEOUT", "real-0": "TIMEOUT",
    }  # fmt: skip
    _confirm(c, "ph-0", "TIMEOUT")
    out = _drain(c)
    assert _states(out) == ["Failed"]
    assert "job" not in c.partition.applications
    assert c.partition.root.allocated.is_zero()


def test_a_real_task_larger_than_its_placeholder_releases_it() -> None:
    c = Cluster()
    c.node("n1", {"memory": 8})
    _gang_app(c, members=1)
    _placeholders(c, 1)
    c.schedule()
    _send(c, _task(c, "big", False, {"memory": 3}))
    c.schedule()
    out = _drain(c)
    assert [(r.key, r.termination) for r in out.released] == [("ph-0", "TIMEOUT")]
    assert "resource incompatible" in out.released[0].message
    messages = [e.message for e in c.ctx.events]
    assert any(
        "are not matching placeholder 'map[memory:2]' allocation with ID 'ph-0'" in m for m in messages
    )
    _confirm(c, "ph-0", "TIMEOUT")
    c.schedule()
    assert [a.key for a in _drain(c).new_allocations] == ["big"]  # no placeholder left: scheduled normally


def test_placeholders_not_replaced_when_the_timer_fires_after_the_gang_ran_are_released() -> None:
    c = Cluster()
    c.node("n1", {"memory": 4})
    _gang_app(c, members=2)
    _placeholders(c, 2)
    _send(c, _task(c, "real-0", False))
    c.schedule()
    c.schedule()
    _confirm(c, "ph-1" if "ph-1" in _replaced(c) else "ph-0", "PLACEHOLDER_REPLACED")
    _drain(c)
    out = _timer_fires(c)
    assert [r.termination for r in out.released] == ["TIMEOUT"]
    assert _states(out) == []  # the application keeps running its real task


def _replaced(c: Cluster) -> set[str]:
    app = c.partition.applications["job"]
    return {a.key for a in app.allocations.values() if a.replaced_by is not None}


def test_leftover_placeholders_go_when_the_application_completes() -> None:
    c = Cluster()
    c.node("n1", {"memory": 4})
    _gang_app(c, members=2, timeout_ms=10 * TIMEOUT_MS)
    _placeholders(c, 2)
    _send(c, _task(c, "real-0", False))
    c.schedule()
    c.schedule()
    (ph,) = _replaced(c)
    _confirm(c, ph, "PLACEHOLDER_REPLACED")
    _drain(c)
    c.release("job", "real-0")  # the only real task ends
    out = _drain(c)
    assert _states(out) == ["Completing"]
    c.clock.advance(30)
    c.ctx.tick()
    out = _drain(c)
    assert [r.termination for r in out.released] == ["TIMEOUT"]
    assert _states(out) == []  # Completed only once the placeholder is gone
    (left,) = [r.key for r in out.released]
    _confirm(c, left, "TIMEOUT")
    c.ctx.tick()
    assert _states(_drain(c)) == ["Completed"]


def test_recovery_counts_placeholders_and_real_allocations_once() -> None:
    c = Cluster()
    c.node("n1", {"memory": 8})
    _gang_app(c, members=2)
    recovered = [
        Allocation("ph-0", "job", c.pname(), Resource(MEM), node_id="n1", task_group="g", placeholder=True),
        Allocation("real-1", "job", c.pname(), Resource(MEM), node_id="n1", task_group="g"),
    ]
    _send(c, *recovered)
    _drain(c)
    queue = c.partition.find_queue("root.default")
    assert queue is not None and queue.allocated.get("memory") == 4
    assert c.partition.nodes["n1"].allocated.get("memory") == 4
    assert c.partition.applications["job"].state == AppState.RUNNING
    assert application_view(c.partition, "job").get("placeholderData", [])[0]["count"] == 1


def test_no_timeout_sent_means_fifteen_minutes() -> None:
    c = Cluster()
    c.node("n1", {"memory": 2})
    _gang_app(c, members=2, timeout_ms=0)
    _placeholders(c, 2)
    c.schedule()
    _drain(c)
    c.clock.advance(DEFAULT_PLACEHOLDER_TIMEOUT - 1)
    c.ctx.tick()
    assert _states(_drain(c)) == []
    c.clock.advance(1)
    c.ctx.tick()
    assert _states(_drain(c)) == ["Resuming"]


def test_a_placeholder_is_the_first_victim_at_its_priority_and_never_one_already_given_up() -> None:
    c = Cluster()
    c.node("n1", {"memory": 4})
    _gang_app(c, members=2)
    _placeholders(c, 1)
    c.schedule()
    c.clock.advance(10)  # the real task is younger: by age alone it would go first
    c.app("other")
    c.ask("other", "real-task", MEM)
    c.schedule()
    node = c.partition.nodes["n1"]
    daemon = Allocation("ds", "other", c.pname(), Resource(MEM))
    victims = choose_victims(node, daemon)
    assert victims is not None and [v.key for v in victims] == ["ph-0"]
    c.partition.applications["job"].allocations["ph-0"].released_by_core = True  # e.g. timed out
    victims = choose_victims(node, daemon)
    assert victims is not None and [v.key for v in victims] == ["real-task"]


def test_a_real_task_sent_before_its_groups_placeholders_waits_for_them() -> None:
    c = Cluster()
    c.node("n1", {"memory": 8})
    _gang_app(c, members=2)
    _send(c, _task(c, "driver", False))  # the originator's ask arrives first, as a shim may send it
    c.schedule()
    assert _drain(c).new_allocations == []
    assert "gang is not complete" in c.partition.applications["job"].asks["driver"].pending_reason
    _placeholders(c, 2)
    c.schedule()
    c.schedule()
    out = _drain(c)
    assert sorted(a.key for a in out.new_allocations) == ["ph-0", "ph-1"]
    assert [r.termination for r in out.released] == ["PLACEHOLDER_REPLACED"]  # the driver takes one


def test_a_confirmation_of_a_placeholder_already_gone_is_accepted_quietly() -> None:
    c = Cluster()
    c.node("n1", {"memory": 2})
    _gang_app(c, members=2, style="Hard")
    _placeholders(c, 2)
    c.schedule()
    _timer_fires(c)
    c.node_action("n1", NodeAction.DECOMMISSION)  # ph-0 goes with its node before the RM confirms
    assert _states(_drain(c)) == ["Failed"]
    _confirm(c, "ph-0", "TIMEOUT")  # the RM's confirmation arrives late: nothing to refuse
    assert _drain(c).rejected_allocations == []
    _confirm(c, "ph-9", "STOPPED_BY_RM")  # an RM release of something never sent is still refused
    assert [r.key for r in _drain(c).rejected_allocations] == ["ph-9"]


def test_a_real_task_whose_placeholder_goes_with_its_node_is_pending_again_and_runs_elsewhere() -> None:
    c = Cluster()
    c.node("a1", {"memory": 2})
    c.node("b1", {"memory": 2})
    _gang_app(c, members=2)
    _placeholders(c, 2)
    c.schedule()
    node_of = {a.key: a.node_id for a in _drain(c).new_allocations}
    _send(c, _task(c, "real-0", False))
    c.schedule()
    (swap,) = _drain(c).released
    c.node_action(node_of[swap.key], NodeAction.DECOMMISSION)  # before the RM confirms the swap
    _drain(c)
    app = c.partition.applications["job"]
    assert "real-0" in app.asks and app.replacing == {}  # waiting again, not stranded
    _confirm(c, swap.key, "PLACEHOLDER_REPLACED")  # the late confirmation changes nothing
    assert _drain(c).rejected_allocations == []
    c.schedule()  # the gang's other placeholder is still there: real-0 takes its place instead
    (other,) = _drain(c).released
    assert other.termination == "PLACEHOLDER_REPLACED" and other.key != swap.key
    _confirm(c, other.key, "PLACEHOLDER_REPLACED")
    (real,) = _drain(c).new_allocations
    assert (real.key, real.node_id) == ("real-0", node_of[other.key])
    for node in c.partition.nodes.values():  # node usage is what is on the node, and within it
        assert node.allocated == sum_resources(a.resource for a in node.allocations.values())
        assert node.allocated.fits_in(node.capacity)


def test_a_preempted_placeholder_is_neither_replaced_nor_timed_out() -> None:
    c = Cluster()
    c.node("n1", {"memory": 4})
    _gang_app(c, members=2)
    _placeholders(c, 2)
    c.schedule()
    _drain(c)
    c.app("other")
    daemon = Allocation(
        "ds", "other", c.pname(), Resource(MEM), tags={"yunikorn.apache.org/requiredNode": "n1"}
    )
    _send(c, daemon)
    c.schedule()
    (victim,) = [r for r in _drain(c).released if r.termination == "PREEMPTED_BY_SCHEDULER"]
    _send(c, _task(c, "real-0", False), _task(c, "real-1", False))
    c.schedule()
    swaps = [r.key for r in _drain(c).released if r.termination == "PLACEHOLDER_REPLACED"]
    assert swaps and victim.key not in swaps  # only the placeholder not being preempted is handed out
    assert victim.key not in [r.key for r in _timer_fires(c).released]  # and it is not released twice
