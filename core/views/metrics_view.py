"""The scheduler's state as the gauges of its metrics: counts read from the partitions at scrape time, so
one scrape is one consistent snapshot. core/server/prometheus.py formats them with the engine's
counters (core/scheduler/metrics.py); nothing here knows the text format.

Labels stay bounded: queues are named by path and resource types come from the configuration and the
nodes, never per application or per node.
"""

from __future__ import annotations

import math
from collections.abc import Iterable
from dataclasses import dataclass, field

from core.objects.app_counts import RISING
from core.objects.queue import Queue
from core.scheduler.cluster import ClusterContext
from core.scheduler.partition.preemption_ledger import PreemptionKind
from core.scheduler.results import Waiting

QUEUE_STATES = ("guaranteed", "max", "allocated", "pending", "preempting")
# The application states YuniKorn's application gauge always reports, 0 when none is in it.
APP_STATES = ("running", "resuming", "failing", "completing", "completed", "failed")
_ENDED = ("completed", "failed")
_WAITING = {Waiting.NO_NODE.value: "no_node", Waiting.HELD.value: "held", "": "untried"}
USAGE_BUCKETS = 10  # node usage in tenths: [0,10%], (10%,20%], ... (90%,100%]


@dataclass
class Gauges:
    apps: dict[str, int] = field(default_factory=lambda: dict.fromkeys(APP_STATES, 0))  # state -> count
    nodes_schedulable: int = 0
    nodes_draining: int = 0
    node_usage: dict[str, list[int]] = field(default_factory=dict)  # resource -> nodes per usage tenth
    # Per queue path, summed over the RMs that share the core (YuniKorn's names have no RM label):
    queue_apps: dict[tuple[str, str], int] = field(default_factory=dict)  # (queue, app state) -> count
    queue_containers: dict[str, dict[str, int]] = field(default_factory=dict)  # leaf -> allocated/released
    queue_resources: dict[tuple[str, str, str], int] = field(default_factory=dict)  # (queue, state, type)
    queue_apps_ended: dict[tuple[str, str], int] = field(default_factory=dict)  # (queue, terminal state)
    # Per RM and partition: (rmID, partition, queue, state, resource type, quantity).
    partition_queue_resources: list[tuple[str, str, str, str, str, int]] = field(default_factory=list)
    preempted: dict[PreemptionKind, int] = field(default_factory=lambda: dict.fromkeys(PreemptionKind, 0))
    events_made: int = 0
    # Pending asks per (rmID, partition, how they wait): no_node (FAILED: more nodes would help), held
    # (SKIPPED: a limit, a gang, a required node of their own), untried (not looked at yet).
    pending_asks: dict[tuple[str, str, str], int] = field(default_factory=dict)
    # What ended allocations used, resource-seconds (core.objects.app_usage): per (rmID, partition, leaf
    # queue or user, kind, resource type).
    queue_usage: list[tuple[str, str, str, str, str, int]] = field(default_factory=list)
    user_usage: list[tuple[str, str, str, str, str, int]] = field(default_factory=list)


def gauges(context: ClusterContext) -> Gauges:
    found = Gauges(events_made=context.events.highest_id + 1)
    counts = context.metrics.app_counts
    for ended in _ENDED:  # those that only rise: every application that ever entered the state
        found.apps[ended] = counts.entered.get(ended, 0)
    counts.forget_queues({queue.full_name for part in context.partitions.values() for queue in part.tree})
    found.queue_apps_ended = dict(counts.queue_totals)
    # yunikorn_queue_app: the states entered in each live queue path (kept at 0) and the counts that
    # only rise, per path for every RM; the applications in each state now are added per queue below.
    found.queue_apps = {
        (name, state): n for name, states in counts.queue_states.items() for state, n in states.items()
        if state != "expired"  # not a state YuniKorn's gauge has: an expired application is just gone
    }  # fmt: skip
    for part in context.partitions.values():
        totals = part.usage_totals
        found.queue_usage += [(part.rm_id, part.name, *key, n) for key, n in sorted(totals.by_queue.items())]
        found.user_usage += [(part.rm_id, part.name, *key, n) for key, n in sorted(totals.by_user.items())]
        waits = dict.fromkeys(_WAITING.values(), 0)
        for app in part.applications.values():  # the states an application moves in and out of
            state = app.state.value.lower()
            if state in found.apps and state not in _ENDED:
                found.apps[state] += 1
            for ask in app.asks.values():
                waits[_WAITING.get(ask.waiting, "untried")] += 1
        for waiting, n in waits.items():
            found.pending_asks[(part.rm_id, part.name, waiting)] = n
        for node in part.nodes.values():
            if node.schedulable:
                found.nodes_schedulable += 1
            else:
                found.nodes_draining += 1
            for resource, capacity in node.capacity.items():
                share = node.allocated.get(resource) / capacity if capacity > 0 else 0.0
                tenth = min(USAGE_BUCKETS - 1, max(0, math.ceil(share * USAGE_BUCKETS) - 1))
                found.node_usage.setdefault(resource, [0] * USAGE_BUCKETS)[tenth] += 1
        for queue in part.tree:
            _count_queue(found, part.rm_id, part.name, queue)
        for kind, n in part.preemption.counts.items():
            found.preempted[kind] += n
    return found


def _count_queue(found: Gauges, rm_id: str, partition: str, queue: Queue) -> None:
    name = queue.full_name
    for app in queue.applications.values():  # the rising states are the cluster's counts (gauges)
        state = app.state.value.lower()
        if state not in RISING:
            found.queue_apps[(name, state)] = found.queue_apps.get((name, state), 0) + 1
    if queue.is_leaf:
        counts = found.queue_containers.setdefault(name, {"allocated": 0, "released": 0})
        counts["allocated"] += queue.containers_allocated
        counts["released"] += queue.containers_released
    for state, resource, quantity in queue_resources(queue):
        key3 = (name, state, resource)
        found.queue_resources[key3] = found.queue_resources.get(key3, 0) + quantity
        found.partition_queue_resources.append((rm_id, partition, name, state, resource, quantity))


def queue_resources(queue: Queue) -> Iterable[tuple[str, str, int]]:
    """A queue's resources by state and type, and its maxapplications (as YuniKorn's maxRunningApps)."""
    values = {
        "guaranteed": queue.guaranteed, "max": queue.max, "allocated": queue.allocated,
        "pending": queue.pending, "preempting": queue.preempting,
    }  # fmt: skip
    for state in QUEUE_STATES:
        for resource, quantity in sorted((values[state] or {}).items()):
            yield state, resource, quantity
    # As YuniKorn's: on every configured queue and every queue made from a child template (0:
    # unlimited), on another dynamic one only once it has a limit.
    if queue.managed or queue.templated or queue.max_applications:
        yield "maxRunningApps", "apps", queue.max_applications
