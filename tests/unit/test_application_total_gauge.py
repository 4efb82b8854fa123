"""yunikorn_scheduler_application_total as yunikorn-core counts it (pkg/metrics, be3bb487): completed
and failed only rise (enter_Completed / enter_Failed add one; an application expiring later takes
nothing away); the other states follow the applications in them."""

from __future__ import annotations

from core.objects.app_lifecycle import COMPLETING_TIMEOUT, TERMINATED_TIMEOUT
from core.scheduler.results import Termination
from core.views.metrics_view import gauges
from tests.unit.event_facts import cluster, release, running


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
    assert set(gauges(c.ctx).apps) == {"running", "resuming", "failing", "completing", "completed", "failed"}
