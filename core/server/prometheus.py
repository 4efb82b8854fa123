"""Scheduler metrics in the Prometheus text format, named as YuniKorn names them (`yunikorn_` prefix).

Counters and histograms are what the engine counted (core.metrics); gauges (queue resources,
application and node counts) are read from the state at scrape time, so a scrape is one consistent
snapshot. Labels stay bounded: queue names and resource types come from the configuration and the
nodes' resource types, never per application or per node.
"""

from __future__ import annotations

from collections.abc import Iterable

from core.cluster import ClusterContext
from core.metrics import Histogram, SchedulerMetrics
from core.preemption.ledger import PreemptionKind

QUEUE_STATES = ("guaranteed", "max", "allocated", "pending", "preempting")


def _labels(pairs: dict[str, str]) -> str:
    if not pairs:
        return ""
    escaped = (
        f'{k}="{v.replace(chr(92), chr(92) * 2).replace(chr(34), chr(92) + chr(34))}"'
        for k, v in pairs.items()
    )
    return "{" + ",".join(escaped) + "}"


def _family(
    name: str, kind: str, help_text: str, samples: Iterable[tuple[str, dict[str, str], float]]
) -> list[str]:
    lines = [f"# HELP {name} {help_text}", f"# TYPE {name} {kind}"]
    lines += [f"{name}{suffix}{_labels(labels)} {value:g}" for suffix, labels, value in samples]
    return lines


def _histogram(name: str, help_text: str, hist: Histogram) -> list[str]:
    samples: list[tuple[str, dict[str, str], float]] = []
    running = 0
    for bound, count in zip(hist.buckets, hist.counts, strict=True):
        running += count
        samples.append(("_bucket", {"le": f"{bound:g}"}, running))
    samples.append(("_bucket", {"le": "+Inf"}, hist.count))
    samples.append(("_sum", {}, hist.total))
    samples.append(("_count", {}, hist.count))
    return _family(name, "histogram", help_text, samples)


def render(context: ClusterContext, metrics: SchedulerMetrics) -> str:
    lines: list[str] = []
    lines += _family(
        "yunikorn_scheduler_container_allocation_attempt_total", "counter",
        "Allocation attempts by result: allocated, rejected (refused on arrival), released.",
        (("", {"state": state}, n) for state, n in sorted(metrics.allocation_attempts.items())),
    )  # fmt: skip
    lines += _histogram(
        "yunikorn_scheduler_scheduling_latency_seconds", "One scheduling slice, in seconds.",
        metrics.cycle_latency,
    )  # fmt: skip
    lines += _histogram(
        "yunikorn_scheduler_trying_to_allocation_latency_seconds",
        "From an ask's arrival to its allocation, in seconds.", metrics.allocation_latency,
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
    closed = metrics.rest_connections_closed
    lines += _family(
        "pykorn_rest_connections_closed_total", "counter",
        "REST connections closed before sending a request: header_timeout, evicted (pushed out by a "
        "new connection at the cap) or refused (the cap reached with every connection busy).",
        [("", {"reason": why}, closed.get(why, 0)) for why in ("header_timeout", "evicted", "refused")],
    )  # fmt: skip
    lines += _family("yunikorn_queue_resource", "gauge", "Queue resources by state.", _queue_samples(context))
    lines += _family(
        "yunikorn_scheduler_application_total", "gauge", "Applications by state.", _app_samples(context)
    )
    lines += _family("yunikorn_scheduler_node", "gauge", "Nodes by state.", _node_samples(context))
    preempted = dict.fromkeys(PreemptionKind, 0)
    for part in context.partitions.values():
        for kind, n in part.preemption.counts.items():
            preempted[kind] += n
    lines += _family(
        "yunikorn_scheduler_preemption_victims_total", "counter", "Allocations preempted, by kind.",
        (("", {"kind": kind}, n) for kind, n in sorted(preempted.items())),
    )  # fmt: skip
    return "\n".join(lines) + "\n"


def _queue_samples(context: ClusterContext) -> Iterable[tuple[str, dict[str, str], float]]:
    for part in context.partitions.values():
        for queue in part.tree:
            values = {
                "guaranteed": queue.guaranteed, "max": queue.max, "allocated": queue.allocated,
                "pending": queue.pending, "preempting": queue.preempting,
            }  # fmt: skip
            for state in QUEUE_STATES:
                for resource, quantity in sorted((values[state] or {}).items()):
                    labels = {"cluster": part.rm_id, "partition": part.name,
                              "queue": queue.full_name, "state": state, "resource": resource}  # fmt: skip
                    yield "", labels, quantity


def _app_samples(context: ClusterContext) -> Iterable[tuple[str, dict[str, str], float]]:
    counts: dict[str, int] = {}
    for part in context.partitions.values():
        for app in part.applications.values():
            counts[app.state.value.lower()] = counts.get(app.state.value.lower(), 0) + 1
    for state, n in sorted(counts.items()):
        yield "", {"state": state}, n


def _node_samples(context: ClusterContext) -> Iterable[tuple[str, dict[str, str], float]]:
    schedulable = draining = 0
    for part in context.partitions.values():
        for node in part.nodes.values():
            if node.schedulable:
                schedulable += 1
            else:
                draining += 1
    yield "", {"state": "active"}, schedulable
    yield "", {"state": "draining"}, draining
