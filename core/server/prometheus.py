"""Scheduler metrics in the Prometheus text format, named as YuniKorn names them (`yunikorn_` prefix).

Counters and histograms are what the engine counted (core.scheduler.metrics); gauges (queue resources,
application and node counts) are what core.views.metrics_view read from the state at scrape time. This
module only formats them.
"""

from __future__ import annotations

from collections.abc import Iterable

from core.scheduler.metrics import Histogram, SchedulerMetrics
from core.views.metrics_view import Gauges

Samples = Iterable[tuple[str, dict[str, str], float]]  # (name suffix, labels, value)


def _labels(pairs: dict[str, str]) -> str:
    if not pairs:
        return ""
    escaped = (
        f'{k}="{v.replace(chr(92), chr(92) * 2).replace(chr(34), chr(92) + chr(34))}"'
        for k, v in pairs.items()
    )
    return "{" + ",".join(escaped) + "}"


def _number(value: float) -> str:
    """Exactly: integers in full (25769803776, not 2.57698e+10), other floats as Python writes them."""
    if isinstance(value, int) or float(value).is_integer():
        return str(int(value))
    return repr(float(value))


def _family(name: str, kind: str, help_text: str, samples: Samples) -> list[str]:
    lines = [f"# HELP {name} {help_text}", f"# TYPE {name} {kind}"]
    lines += [f"{name}{suffix}{_labels(labels)} {_number(value)}" for suffix, labels, value in samples]
    return lines


def _histogram(
    name: str, help_text: str, hists: Iterable[tuple[dict[str, str], Histogram]] | Histogram
) -> list[str]:
    series = [({}, hists)] if isinstance(hists, Histogram) else list(hists)
    samples: list[tuple[str, dict[str, str], float]] = []
    for labels, hist in series:
        running = 0
        for bound, count in zip(hist.buckets, hist.counts, strict=True):
            running += count
            samples.append(("_bucket", {**labels, "le": _number(bound)}, running))
        samples.append(("_bucket", {**labels, "le": "+Inf"}, hist.count))
        samples.append(("_sum", labels, hist.total))
        samples.append(("_count", labels, hist.count))
    return _family(name, "histogram", help_text, samples)


def render(gauges: Gauges, metrics: SchedulerMetrics) -> str:
    return "\n".join(yunikorn_families(gauges, metrics) + pykorn_families(gauges, metrics)) + "\n"


def yunikorn_families(gauges: Gauges, metrics: SchedulerMetrics) -> list[str]:
    """YuniKorn's metrics (pkg/metrics), by its names, labels and units, so its dashboards read them."""
    lines: list[str] = []
    lines += _family(
        "yunikorn_scheduler_container_allocation_attempt_total", "counter",
        "Total number of attempts to allocate containers. State of the attempt includes `allocated`, "
        "`rejected`, `error`, `released`",
        (("", {"state": state}, n) for state, n in sorted(metrics.allocation_attempts.items())),
    )  # fmt: skip
    lines += _family(
        "yunikorn_scheduler_application_submission_total", "counter",
        "Total number of application submissions. State of the attempt includes `new`, `accepted` and "
        "`rejected`.",
        (("", {"result": result}, n) for result, n in sorted(_submissions(metrics).items())),
    )  # fmt: skip
    lines += _family(
        "yunikorn_scheduler_application_total", "gauge",
        "Total number of applications. State of the application includes `running`, `resuming`, "
        "`failing`, `completing`, `completed` and `failed`.",
        (("", {"state": state}, n) for state, n in sorted(gauges.apps.items())),
    )  # fmt: skip
    lines += _family(
        "yunikorn_scheduler_node", "gauge",
        "Total number of nodes. State of the node includes `active` and `failed`.",
        [
            # As YuniKorn's: every registered node is active, a draining one too (counted again there);
            # decommissioned only rises; failed counts nodes refused for a partition that is not there.
            ("", {"state": "active"}, gauges.nodes_schedulable + gauges.nodes_draining),
            ("", {"state": "decommissioned"}, metrics.nodes_decommissioned),
            ("", {"state": "draining"}, gauges.nodes_draining),
            ("", {"state": "failed"}, metrics.nodes_failed),
        ],
    )  # fmt: skip
    timings = metrics.timings
    lines += _histogram(
        "yunikorn_scheduler_scheduling_latency_milliseconds",
        "Latency of the main scheduling routine, in seconds.", timings.scheduling,
    )  # fmt: skip
    lines += _histogram(
        "yunikorn_scheduler_scheduling_cycle_milliseconds", "Time taken for a scheduling cycle, in seconds.",
        timings.cycle,
    )  # fmt: skip
    lines += _histogram(
        "yunikorn_scheduler_node_sorting_latency_milliseconds", "Latency of all nodes sorting, in seconds.",
        [({"level": level}, hist) for level, hist in sorted(timings.sorting.items())],
    )  # fmt: skip
    lines += _histogram(
        "yunikorn_scheduler_trynode_latency_milliseconds",
        "Latency of node condition checks for container allocations, such as placement constraints, in "
        "seconds.", timings.try_node,
    )  # fmt: skip
    lines += _histogram(
        "yunikorn_scheduler_trynode_evaluation_milliseconds",
        "Time taken to evaluate nodes for a pod, in seconds.", timings.try_node_evaluation,
    )  # fmt: skip
    lines += _histogram(
        "yunikorn_scheduler_trypreemption_latency_milliseconds",
        "Latency of preemption condition checks for container allocations, in seconds.",
        timings.try_preemption,
    )  # fmt: skip
    for resource, per_range in sorted(gauges.node_usage.items()):
        lines += _family(
            f"yunikorn_scheduler_{format_metric_name(resource)}_node_usage_total", "gauge",
            "Total resource usage of node, by resource name.",
            [("", {"range": USAGE_RANGES[i]}, n) for i, n in enumerate(per_range)],
        )  # fmt: skip
    lines += _queue_families(gauges)
    lines += _event_families(gauges.events_made)
    return lines


def pykorn_families(gauges: Gauges, metrics: SchedulerMetrics) -> list[str]:
    """pykorn's own metrics, under its own names."""
    lines: list[str] = []
    lines += _histogram(
        "pykorn_scheduling_latency_seconds", "One scheduling slice, in seconds.", metrics.cycle_latency
    )
    lines += _histogram(
        "pykorn_allocation_latency_seconds",
        "From an ask's creation to its allocation, in seconds.", metrics.allocation_latency,
    )  # fmt: skip
    lines += _family(
        "pykorn_response_streams_cut_total", "counter",
        "Response streams the core ended because their resource manager did not read them.",
        [("", {}, metrics.streams_cut)],
    )  # fmt: skip
    lines += _family(
        "pykorn_placeholder_releases_total", "counter",
        "Gang placeholders the core asked its resource manager to release: replaced by a real task, or "
        "timeout (not needed in time, left over when the application completed, or too small).",
        [("", {"reason": why}, n) for why, n in metrics.placeholder_releases.items()],
    )  # fmt: skip
    for who, rows in (("queue", gauges.queue_usage), ("user", gauges.user_usage)):
        lines += _family(
            f"pykorn_{who}_resource_seconds_total", "counter",
            f"What ended allocations used, per {who}: each allocation's resource times the whole seconds "
            "it was held (YuniKorn's tracked resource usage), by kind: resourceUsage, preemptedResource, "
            "placeholderResource.",
            [("", {"cluster": rm, "partition": p, who: name, "kind": kind, "resource": res}, n)
             for rm, p, name, kind, res, n in rows],
        )  # fmt: skip
    if metrics.health_checks is not None:
        lines += _family(
            "pykorn_scheduler_health_check_failed", "gauge",
            "Each health check (YuniKorn's and pykorn's) that failed at the last periodic check "
            "(health.checkInterval), by name and description. See /ws/v1/scheduler/healthcheck.",
            [("", {"name": name, "description": about}, 1) for name, about in metrics.health_failed],
        )  # fmt: skip
        lines += _family(
            "pykorn_scheduler_healthy", "gauge",
            "1 when every health check passed at the last periodic check, else 0.",
            [("", {}, 0 if metrics.health_failed else 1)],
        )  # fmt: skip
    closed = metrics.rest_connections_closed
    reasons = ("header_timeout", "evicted", "evicted_idle", "refused")
    lines += _family(
        "pykorn_rest_connections_closed_total", "counter",
        "REST connections closed for the cap and timeouts: header_timeout, evicted (no header yet, pushed "
        "out by a new connection at the cap), evicted_idle (idle between requests, likewise) or refused "
        "(the cap reached with every connection busy, and not a probe's path).",
        [("", {"reason": why}, closed.get(why, 0)) for why in reasons],
    )  # fmt: skip
    lines += _family(
        "pykorn_queue_resource", "gauge", "Queue resources by state, per resource manager and partition.",
        (
            ("", {"cluster": rm_id, "partition": part, "queue": queue, "state": state, "resource": resource},
             quantity)
            for rm_id, part, queue, state, resource, quantity in gauges.partition_queue_resources
        ),
    )  # fmt: skip
    lines += _family(
        "pykorn_pending_asks", "gauge",
        "Pending asks by how they wait: no_node (no node has room: more nodes would help), held (a "
        "limit, a gang or a required node of their own holds them), untried (not looked at yet).",
        (("", {"cluster": rm, "partition": p, "waiting": waiting}, n)
         for (rm, p, waiting), n in sorted(gauges.pending_asks.items())),
    )  # fmt: skip
    lines += _family(
        "pykorn_preemption_victims_total", "counter", "Allocations preempted, by kind.",
        (("", {"kind": kind}, n) for kind, n in sorted(gauges.preempted.items())),
    )  # fmt: skip
    return lines


def _submissions(metrics: SchedulerMetrics) -> dict[str, int]:
    """YuniKorn's submission results: new and rejected as placed or refused, accepted as entered."""
    return {**metrics.app_submissions, "accepted": metrics.app_counts.entered["accepted"]}


def format_metric_name(name: str) -> str:
    """As YuniKorn's formatMetricName: bytes not allowed in a metric name become '_'."""
    cleaned = "".join(c if (c.isascii() and (c.isalnum() or c in "_:")) else "_" for c in name)
    return "_" + cleaned if cleaned[:1].isdigit() else cleaned


USAGE_RANGES = ("[0,10%]", "(10%,20%]", "(20%,30%]", "(30%,40%]", "(40%,50%]", "(50%,60%]", "(60%,70%]",
                "(70%,80%]", "(80%,90%]", "(90%,100%]")  # fmt: skip


def _queue_families(gauges: Gauges) -> list[str]:
    """YuniKorn's per-queue metrics. Queues are named by path; when several resource managers share
    the core, the same path in each is summed (pykorn_queue_resource has them apart)."""
    lines = _family(
        "yunikorn_queue_app", "gauge",
        "Queue application metrics. State of the application includes `new`, `accepted`, `rejected`, "
        "`running`, `failing`, `failed`, `resuming`, `completing`, `completed`.",
        (("", {"queue": q, "state": st}, n) for (q, st), n in sorted(gauges.queue_apps.items())),
    )  # fmt: skip
    for name, counts in sorted(gauges.queue_containers.items()):
        lines += _family(
            f"yunikorn_{format_metric_name(name)}_queue_container", "counter",
            "Queue container metrics. State of the attempt includes `allocated`, `released`.",
            (("", {"state": st}, n) for st, n in sorted(counts.items())),
        )  # fmt: skip
    lines += _family(
        "yunikorn_queue_resource", "gauge",
        "Queue resource metrics. State of the resource includes `guaranteed`, `max`, `allocated`, "
        "`pending`, `preempting`, `maxRunningApps`.",
        (
            ("", {"queue": q, "state": st, "resource": r}, n)
            for (q, st, r), n in sorted(gauges.queue_resources.items())
        ),
    )  # fmt: skip
    lines += _family(
        "yunikorn_queue_app_total", "counter",
        "Total number of applications that reached a terminal state. State includes `completed`, "
        "`failed`, `rejected`.",
        (("", {"queue": q, "state": st}, n) for (q, st), n in sorted(gauges.queue_apps_ended.items())),
    )  # fmt: skip
    return lines


def _event_families(made: int) -> list[str]:
    """YuniKorn's event system gauges. pykorn records every event straight into its ring (nothing is
    channelled apart or dropped on the way), so created, channeled, processed, stored and collected
    are one count."""
    lines: list[str] = []
    for name, value, what in (
        ("total_created", made, "total events created"), ("total_channeled", made, "total events channeled"),
        ("total_not_channeled", 0, "total events not channeled"),
        ("total_processed", made, "total events processed"),
        ("total_stored", made, "total events stored"),
        ("total_not_stored", 0, "total events not stored"),
        ("total_collected", made, "total events collected"),
    ):  # fmt: skip
        lines += _family(f"yunikorn_event_{name}", "gauge", what, [("", {}, value)])
    return lines


def history_families(dropped: int, written: int, buffered: int, healthy: bool) -> str:
    """The history database's write path (`pykorn core --history`): records dropped because the
    database was behind for too long, written, and waiting; whether the last write went through."""
    lines = _family(
        "pykorn_history_records_dropped_total", "counter",
        "History records dropped: the database was slow or down beyond the buffer's bound",
        [("", {}, dropped)],
    )  # fmt: skip
    lines += _family(
        "pykorn_history_records_written_total", "counter", "History records written", [("", {}, written)]
    )
    lines += _family(
        "pykorn_history_buffered_records",
        "gauge",
        "History records waiting to be written",
        [("", {}, buffered)],
    )
    lines += _family(
        "pykorn_history_database_up", "gauge", "1 when the last history write went through",
        [("", {}, 1 if healthy else 0)],
    )  # fmt: skip
    return "\n".join(lines) + "\n"
