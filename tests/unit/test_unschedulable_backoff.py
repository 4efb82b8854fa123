"""YuniKorn's application.unschedasks.backoff and .backoff.delay: an application whose asks no node
takes, that many in one attempt, is not tried again until the delay has passed (the injected clock);
other applications are scheduled meanwhile, and 0 (the default) never backs off."""

from __future__ import annotations

import pytest

from core.config import load_config
from core.config.properties import DEFAULT_UNSCHED_BACKOFF_DELAY, UINT64_MAX
from core.scheduler.cycle import scheduling
from tests.unit.domain_helpers import Cluster

CONFIG = """
partitions:
  - name: default
    queues:
      - name: root
        submitacl: "*"
        queues:
          - name: jobs
            properties:
              application.unschedasks.backoff: "%(backoff)s"
              application.unschedasks.backoff.delay: 30s
"""


def _cluster(backoff: str) -> Cluster:
    c = Cluster(CONFIG % {"backoff": backoff})
    c.node("n1", {"memory": 10})
    c.node("n1b", {"memory": 10})
    c.app("big", "root.jobs")
    c.app("small", "root.jobs")
    for i in range(3):
        c.ask("big", f"big-{i}", {"memory": 15})  # within the cluster's room, but no node takes one
    return c


def _placed(c: Cluster) -> list[str]:
    return [a.key for b in c.ctx.drain_results() for a in b.new_allocations]


def test_an_application_backs_off_after_that_many_unschedulable_asks_until_the_delay_passes() -> None:
    c = _cluster("2")
    c.schedule()
    big = c.partition.applications["big"]
    assert big.backoff_until == c.clock.now + 30  # two asks found no node: it backs off
    c.node("n2", {"memory": 100})  # now one would fit
    c.ask("small", "small-0", {"memory": 1})
    c.schedule()
    assert _placed(c) == ["small-0"]  # others go on; the backing-off application is not tried
    c.clock.advance(29)
    c.schedule()
    assert _placed(c) == []
    c.clock.advance(1)
    c.schedule()
    assert _placed(c) == ["big-0", "big-1", "big-2"]  # the delay passed: tried again, n2 takes them


def test_no_backoff_by_default_and_bad_values_warn() -> None:
    c = _cluster("0")
    c.schedule()
    assert c.partition.applications["big"].backoff_until == 0.0
    c.node("n2", {"memory": 100})
    c.schedule()
    assert _placed(c) == ["big-0", "big-1", "big-2"]
    loaded = load_config(CONFIG % {"backoff": "-1"})
    assert any("application.unschedasks.backoff" in str(w) and "using 0" in str(w) for w in loaded.warnings)
    leaf = load_config(CONFIG % {"backoff": str(UINT64_MAX)})
    assert not leaf.warnings
    assert DEFAULT_UNSCHED_BACKOFF_DELAY == 30.0  # YuniKorn's default


def test_an_application_whose_backoff_ends_while_a_cycle_goes_on_over_slices_is_tried_in_it(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    """A cycle out of time goes on in the next slice, later: an application it passed as backing off
    is looked at again there (the cycle drops applications with nothing left to try only within a
    slice), so its ask goes in its FIFO turn, not after every other application's."""
    c = Cluster(CONFIG % {"backoff": "1"})
    c.node("n1", {"memory": 50})
    c.node("n2", {"memory": 50})
    c.app("big", "root.jobs")
    c.clock.advance(1)
    c.app("other", "root.jobs")
    c.ask("big", "big-0", {"memory": 60})  # no node: big backs off for the delay (30 s)
    c.ask("big", "big-1", {"memory": 1})
    for i in range(6):
        c.ask("other", f"other-{i}", {"memory": 1})
    monkeypatch.setattr(scheduling, "MAX_CYCLE_SECONDS", -1.0)  # every slice out of time at once
    monkeypatch.setattr(scheduling, "CHECK_TIME_EVERY", 1)
    order: list[str] = []
    for slice_ in range(4):
        c.schedule()
        order.extend(_placed(c))
        assert c.partition.open_cycle is not None  # the same cycle, slice after slice
        if slice_ >= 1:  # slice 0 tried big-0; slice 1 passed big, backing off, and placed other-0
            c.clock.advance(31)
    assert order[:3] == ["other-0", "big-1", "other-1"]  # big's turn as soon as its backoff is over
