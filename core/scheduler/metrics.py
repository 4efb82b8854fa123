"""What the engine counts as it works (cheap increments): allocation attempts and latency histograms.

core.server.prometheus renders them, with gauges read from the state at scrape time, in the
Prometheus text format.
"""

from __future__ import annotations

import bisect
from collections.abc import Sequence

from core.objects.app_counts import AppCounts

# Seconds: from a tenth of a millisecond to ten seconds, as the scheduling cycle ranges.
LATENCY_BUCKETS = (0.0001, 0.0005, 0.001, 0.005, 0.01, 0.05, 0.1, 0.5, 1.0, 5.0, 10.0)
# YuniKorn's latency histograms: ExponentialBuckets(0.0001, 10, 8). Their names say milliseconds but
# upstream observes seconds; so do these, so that YuniKorn's dashboards read them the same way.
YUNIKORN_BUCKETS = (0.0001, 0.001, 0.01, 0.1, 1.0, 10.0, 100.0, 1000.0)


class Histogram:
    def __init__(self, buckets: Sequence[float] = LATENCY_BUCKETS) -> None:
        self.buckets = tuple(buckets)
        self.counts = [0] * len(self.buckets)  # not cumulative; summed when rendered
        self.total = 0.0
        self.count = 0

    def observe(self, value: float) -> None:
        # Most observations on the scheduling path fall in the first bucket: no search for those.
        if value <= self.buckets[0]:
            self.counts[0] += 1
        else:
            index = bisect.bisect_left(self.buckets, value)
            if index < len(self.counts):
                self.counts[index] += 1
        self.total += value
        self.count += 1


class SchedulerMetrics:
    """What the engine counts; one per core."""

    def __init__(self) -> None:
        self.allocation_attempts: dict[str, int] = {"allocated": 0, "rejected": 0, "error": 0, "released": 0}
        self.cycle_latency = Histogram()  # one scheduling slice, seconds
        self.allocation_latency = Histogram()  # from an ask's arrival to its allocation, seconds
        self.streams_cut = 0  # response streams ended because their RM did not read them
        # Gang placeholders the core asked the RM to release: "replaced" by a real task, or "timeout"
        # (the placeholder timer, a completed application, or a real task larger than the placeholder).
        self.placeholder_releases: dict[str, int] = {"replaced": 0, "timeout": 0}
        # REST connections the core closed before they sent a request (core/server/rest_connections.py),
        # by reason: header_timeout, evicted, refused.
        self.rest_connections_closed: dict[str, int] = {}

        # YuniKorn's scheduler metrics (pkg/metrics): what the scheduling loop measured, in seconds.
        self.timings = SchedulingTimings()
        self.app_submissions: dict[str, int] = {"new": 0, "rejected": 0}  # "accepted": app_counts'
        # The states applications entered, cluster-wide and per queue path: counts that never fall.
        self.app_counts = AppCounts()
        self.nodes_decommissioned = 0
        self.nodes_failed = 0  # nodes an RM sent that could not be added (YuniKorn's failed nodes)
        # The last periodic health check (core.server.health_loop): how many checks ran, and which of
        # them failed (by name and description); None before the first.
        self.health_checks: int | None = None
        self.health_failed: list[tuple[str, str]] = []

    def count(self, result: str, n: int = 1) -> None:
        self.allocation_attempts[result] = self.allocation_attempts.get(result, 0) + n


class SchedulingTimings:
    """The scheduling loop's latencies as YuniKorn measures them: one partition's pass (`scheduling`,
    idle ones too), a call of the loop (`cycle`, at idle every tick), the queue descent that picks the
    next ask, the walk over the nodes for an ask and the try on the node that took it, preemption."""

    def __init__(self) -> None:
        self.scheduling = Histogram(YUNIKORN_BUCKETS)
        self.cycle = Histogram(YUNIKORN_BUCKETS)
        self.sorting = {"queue": Histogram(YUNIKORN_BUCKETS), "app": Histogram(YUNIKORN_BUCKETS)}
        self.try_node = Histogram(YUNIKORN_BUCKETS)  # placing an ask on the node that takes it
        self.try_node_evaluation = Histogram(YUNIKORN_BUCKETS)  # the walk over the nodes for one ask
        self.try_preemption = Histogram(YUNIKORN_BUCKETS)
