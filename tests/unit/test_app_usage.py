"""What an application used, as YuniKorn tracks it: each ended allocation's resource times the whole
seconds it was held, by the instance type of its node, kept apart for preempted allocations and gang
placeholders; shown as the application's resourceHistory, summed by queue and user for the metrics, and
logged as YK_APP_SUMMARY when the application ends."""

from __future__ import annotations

from structlog.testing import capture_logs

from core.config import load_config
from core.objects.allocation import Allocation
from core.objects.app_usage import PLACEHOLDER, PREEMPTED, USED
from core.resources import Resource
from core.scheduler.commands import (
    AppAdd,
    AppRemove,
    NodeAction,
    NodeChange,
    ReleaseRequest,
    UpdateAllocations,
    UpdateApplications,
    UpdateConfig,
    UpdateNodes,
)
from core.scheduler.results import Termination
from core.server.prometheus import render
from core.views import app_views, metrics_view
from tests.unit.domain_helpers import ONE_LEAF, Cluster


def _cluster() -> Cluster:
    c = Cluster()
    attributes = {"si/instance-type": "m5.large"}
    typed = NodeChange("big", NodeAction.CREATE, c.pname(), attributes, Resource({"memory": 100, "vcore": 8}))
    c.ctx.apply(UpdateNodes(c.rm_id, (typed,)))
    return c


def test_ended_allocations_count_their_resource_times_whole_seconds_by_instance_type() -> None:
    c = _cluster()
    c.app("app-1", user="alice")
    c.ask("app-1", "a", {"memory": 60, "vcore": 2})
    c.schedule()  # on "big", the only node with room
    c.node("plain", {"memory": 100})
    c.ask("app-1", "b", {"memory": 30})
    c.schedule()  # on "plain", the emptier node: no instance type
    app = c.partition.applications["app-1"]
    assert {a.key: a.node_id for a in app.allocations.values()} == {"a": "big", "b": "plain"}
    c.clock.advance(10.9)
    c.release("app-1", "a")  # 10 whole seconds
    c.clock.advance(5.0)
    c.release("app-1", "b")  # 15.9 s: 15
    history = app_views.application_info(c.partition, app)["resourceHistory"]
    assert history == {
        USED: {"m5.large": {"memory": 600, "vcore": 20}, "UNKNOWN": {"memory": 450}}
    }  # preempted and placeholder omitted while empty, as YuniKorn's omitempty
    totals = c.partition.usage_totals
    assert totals.by_queue[("root.default", USED, "memory")] == 1050
    assert totals.by_user[("alice", USED, "vcore")] == 20
    text = render(metrics_view.gauges(c.ctx), c.ctx.metrics)
    assert (
        'pykorn_user_resource_seconds_total{cluster="rm-1",partition="default",user="alice",kind="resourceUsage",'
        'resource="memory"} 1050'
    ) in text


def test_a_preempted_allocation_and_a_placeholder_count_apart() -> None:
    c = _cluster()
    c.app("app-1")
    c.ask("app-1", "victim", {"memory": 10})
    placeholder = Allocation(
        "ph", "app-1", c.pname(), Resource({"memory": 20}), task_group="g", placeholder=True
    )
    c.ctx.apply(UpdateAllocations(c.rm_id, allocations=(placeholder,)))
    c.schedule()
    app = c.partition.applications["app-1"]
    assert set(app.allocations) == {"victim", "ph"}
    app.allocations["victim"].releasing = True  # what the preemption ledger marks on a victim
    c.clock.advance(3)
    c.release("app-1", "victim")
    c.release("app-1", "ph")
    assert app.usage is not None
    assert app.usage.dao() == {
        PREEMPTED: {"m5.large": {"memory": 30}},
        PLACEHOLDER: {"m5.large": {"memory": 60}},
    }


def test_the_summary_is_logged_once_when_the_application_ends_with_yunikorns_text() -> None:
    c = _cluster()
    c.clock.advance(100)  # the fake clock starts at 1000 s
    c.app("app-1", user="bob")
    c.ask("app-1", "a", {"memory": 10})
    c.schedule()
    c.clock.advance(7)
    with capture_logs() as logs:
        c.release("app-1", "a")  # Completing now
        c.clock.advance(30)
        c.ctx.tick()  # the completing timeout: Completed, out of the partition
        c.ctx.tick()
    [line] = [entry for entry in logs if entry["event"].startswith("YK_APP_SUMMARY")]
    assert line["event"] == (
        "YK_APP_SUMMARY: {ApplicationID: app-1, SubmissionTime: 1100000, StartTime: 1100000, "
        "FinishTime: 1137000, User: bob, Queue: root.default, State: Completed, RmID: rm-1, "
        "ResourceUsage: TrackedResource{m5.large:memory=70}, PreemptedResource: TrackedResource{}, "
        "PlaceholderResource: TrackedResource{}}"
    )
    assert line["resourceUsage"] == {"m5.large": {"memory": 70}} and line["finishTime"] == 1137000
    assert line["log_level"] == "info" and line["applicationID"] == "app-1"
    # Logged, the usage goes (YuniKorn's cleanupTrackedResource): the completed application shows none.
    [done] = c.partition.lifecycle.completed
    assert app_views.application_info(c.partition, done)["resourceHistory"] == {}


def test_an_application_that_never_ran_logs_no_summary() -> None:
    c = _cluster()
    c.app("app-1")
    c.ask("app-1", "a", {"memory": 1000})  # never fits
    with capture_logs() as logs:
        c.ctx.apply(UpdateApplications(c.rm_id, removes=(AppRemove("app-1", c.pname()),)))
    assert not [entry for entry in logs if entry["event"].startswith("YK_APP_SUMMARY")]
    assert "app-1" not in c.partition.applications


def test_a_real_task_in_a_placeholders_place_counts_from_when_the_swap_is_confirmed() -> None:
    """YuniKorn's ReplaceAllocation binds the real task when its RM confirms the placeholder's release:
    the placeholder's time runs until then, the task's from then."""
    c = _cluster()
    gang_app = AppAdd(
        "job", c.pname(), "root.default", user="u", placeholder_ask=Resource({"memory": 10}),
        placeholder_timeout_ms=600_000,
    )  # fmt: skip
    c.ctx.apply(UpdateApplications(c.rm_id, adds=(gang_app,)))
    ph = Allocation("ph", "job", c.pname(), Resource({"memory": 10}), task_group="g", placeholder=True)
    c.ctx.apply(UpdateAllocations(c.rm_id, allocations=(ph,)))
    c.schedule()  # the placeholder runs
    c.clock.advance(4)
    real = Allocation("real", "job", c.pname(), Resource({"memory": 10}), task_group="g")
    c.ctx.apply(UpdateAllocations(c.rm_id, allocations=(real,)))
    c.schedule()  # the swap begins: the core asks for the placeholder back
    c.clock.advance(6)  # the RM takes 6 s to release it
    confirm = ReleaseRequest(c.pname(), "job", "ph", termination=Termination.PLACEHOLDER_REPLACED)
    c.ctx.apply(UpdateAllocations(c.rm_id, releases=(confirm,)))
    c.clock.advance(10)
    c.release("job", "real")
    app = c.partition.applications["job"]
    assert app.usage is not None
    assert app.usage.dao() == {
        USED: {"m5.large": {"memory": 100}},  # 10 s from the confirmation, not 16 from the swap's start
        PLACEHOLDER: {"m5.large": {"memory": 100}},  # the placeholder held until its release: 10 s
    }


def test_a_queue_that_goes_takes_its_usage_totals_with_it() -> None:
    """The per-queue series of the usage metrics end with their queue (a dynamic queue's, or one a
    reload removes), so they do not pile up; the user's go on."""
    two = ONE_LEAF.replace(
        "          - name: default\n", "          - name: default\n          - name: gone\n"
    )
    c = Cluster(two)
    c.node("n1", {"memory": 100})
    c.app("app-1", "root.gone", user="alice")
    c.ask("app-1", "a", {"memory": 10})
    c.schedule()
    c.clock.advance(3)
    c.ctx.apply(UpdateApplications(c.rm_id, removes=(AppRemove("app-1", c.pname()),)))
    totals = c.partition.usage_totals
    assert totals.by_queue == {("root.gone", USED, "memory"): 30}
    c.ctx.apply(UpdateConfig(c.rm_id, load_config(ONE_LEAF).config))  # root.gone leaves the configuration
    assert c.partition.find_queue("root.gone") is None
    assert totals.by_queue == {} and totals.by_user == {("alice", USED, "memory"): 30}
