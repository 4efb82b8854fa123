"""Metrics as yunikorn-core means them (pkg/metrics and its call sites, be3bb487), read from the scrape:
application_total's completed and failed only rise (enter_Completed / enter_Failed add one; an
application expiring later takes nothing away), the other states follow the applications in them;
yunikorn_queue_app, submissions and maxRunningApps likewise."""

from __future__ import annotations

from core.config import load_config
from core.objects.app_lifecycle import COMPLETING_TIMEOUT, TERMINATED_TIMEOUT
from core.scheduler.commands import RegisterRM
from core.scheduler.results import Termination
from core.server.prometheus import render
from core.views.metrics_view import gauges
from tests.unit.domain_helpers import Cluster
from tests.unit.event_facts import CONFIG, MEM, NO_DEFAULT, NODE, app, cluster, release, reload, running


def test_a_completed_application_stays_counted_after_it_expires() -> None:
    c = cluster()
    running(c, "app", "t0")
    assert gauges(c.ctx).apps["running"] == 1
    release(c, "app", "t0", Termination.STOPPED_BY_RM)  # Completing, then Completed after its timeout
    c.clock.advance(COMPLETING_TIMEOUT + 1)
    c.ctx.tick()
    counted = gauges(c.ctx).apps
    assert (counted["running"], counted["completing"], counted["completed"]) == (0, 0, 1)
    c.clock.advance(TERMINATED_TIMEOUT + 1)  # Expired, and forgotten by the partition
    c.ctx.tick()
    assert not c.partition.lifecycle.completed
    assert gauges(c.ctx).apps["completed"] == 1
    scrape = render(gauges(c.ctx), c.ctx.metrics).splitlines()
    assert 'yunikorn_scheduler_application_total{state="completed"} 1' in scrape
    assert 'yunikorn_queue_app{queue="root.default",state="completed"} 1' in scrape
    assert 'yunikorn_queue_app{queue="root.default",state="running"} 0' in scrape
    assert set(gauges(c.ctx).apps) == {"running", "resuming", "failing", "completing", "completed", "failed"}


def _queue_apps(c: Cluster, queue: str) -> dict[str, int]:
    return {state: n for (name, state), n in gauges(c.ctx).queue_apps.items() if name == queue}


def test_a_queues_application_series_follow_yunikorns_counts() -> None:
    """yunikorn_queue_app (pkg/metrics queue.go): a state's series appears once an application entered
    it and stays, at 0 when none is left; rejected, completed and failed only rise."""
    c = cluster()
    app(c, "app", "root.default")
    assert _queue_apps(c, "root.default") == {"new": 1}
    running(c, "app", "t0")
    assert _queue_apps(c, "root.default") == {"new": 0, "accepted": 0, "running": 1}
    release(c, "app", "t0", Termination.STOPPED_BY_RM)
    c.clock.advance(COMPLETING_TIMEOUT + 1)
    c.ctx.tick()
    c.clock.advance(TERMINATED_TIMEOUT + 1)
    c.ctx.tick()
    assert _queue_apps(c, "root.default") == {
        "new": 0,
        "accepted": 0,
        "running": 0,
        "completing": 0,
        "completed": 1,
    }


def test_a_refused_application_counts_as_rejected_on_the_queue_it_asked_for() -> None:
    c = cluster()
    c.app("app", "root.small", user="u")
    c.app("other", "root.small", user="u")  # maxapplications 1: the second waits, Accepted
    reload(c, CONFIG.replace('        submitacl: "*"\n', '        submitacl: "nobody"\n'))
    c.app("late", "root.small", user="u")  # the ACL refuses it now
    assert _queue_apps(c, "root.small")["rejected"] == 1


def _submissions(c: Cluster) -> dict[str, int]:
    lines = render(gauges(c.ctx), c.ctx.metrics).splitlines()
    prefix = "yunikorn_scheduler_application_submission_total{result="
    return {
        line[len(prefix) + 1 : line.index('"}')]: int(line.split()[-1])
        for line in lines
        if line.startswith(prefix)
    }


def test_submissions_count_as_yunikorns() -> None:
    """application.go SetQueue counts "new" (so a refused application is only "rejected");
    application_state.go enter_Accepted counts "accepted"."""
    c = cluster()
    reload(c, NO_DEFAULT)
    app(c, "refused", "root.nowhere")
    assert _submissions(c) == {"accepted": 0, "new": 0, "rejected": 1}
    c.node("n1", NODE)
    app(c, "placed", "root.other")
    assert _submissions(c) == {"accepted": 0, "new": 1, "rejected": 1}
    c.ask("placed", "t0", MEM)  # its first ask: Accepted
    c.schedule()
    assert _submissions(c) == {"accepted": 1, "new": 1, "rejected": 1}


def test_counts_that_only_rise_survive_the_rm_registering_again() -> None:
    """An RM that registers again (a restarted shim) rebuilds its partitions here; YuniKorn keeps its
    queues then, and its queue counters never fall (yunikorn_queue_app_total is never unregistered)."""
    c = cluster()
    running(c, "app", "t0")
    release(c, "app", "t0", Termination.STOPPED_BY_RM)
    c.clock.advance(COMPLETING_TIMEOUT + 1)
    c.ctx.tick()
    completed = 'yunikorn_queue_app{queue="root.default",state="completed"} 1'
    total = 'yunikorn_queue_app_total{queue="root.default",state="completed"} 1'
    assert {completed, total} <= set(render(gauges(c.ctx), c.ctx.metrics).splitlines())
    c.ctx.apply(RegisterRM(c.rm_id, load_config(CONFIG).config))
    scrape = set(render(gauges(c.ctx), c.ctx.metrics).splitlines())
    assert {completed, total, 'yunikorn_scheduler_application_total{state="completed"} 1'} <= scrape


TEMPLATED = """
partitions:
  - name: default
    placementrules:
      - name: provided
        create: true
    queues:
      - name: root
        submitacl: "*"
        queues:
          - name: teams
            parent: true
            childtemplate:
              resources: {max: {memory: 8}}
          - name: open
            parent: true
"""


def test_max_running_apps_is_on_queues_made_from_a_template_but_not_on_other_dynamic_ones() -> None:
    """queue.go applyTemplate sets maxRunningApps (0 when the template has none) on a queue it makes;
    a dynamic queue without a template gets the series only once it has a limit."""
    c = Cluster(TEMPLATED)
    c.app("a", "root.teams.red", user="u")
    c.app("b", "root.open.blue", user="u")
    scrape = render(gauges(c.ctx), c.ctx.metrics)
    assert (
        'yunikorn_queue_resource{queue="root.teams.red",state="maxRunningApps",resource="apps"} 0' in scrape
    )
    assert 'queue="root.open.blue",state="maxRunningApps"' not in scrape
    assert 'yunikorn_queue_resource{queue="root.open",state="maxRunningApps",resource="apps"} 0' in scrape
