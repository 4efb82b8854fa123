"""Cluster-wide REST views, shaped as YuniKorn's ws/v1 DAO objects: clusters, history, node
utilisation buckets, placement rules, and the full state dump.

Transport-free like core.views.dao: each function reads the state once and returns plain JSON values.
"""

from __future__ import annotations

import math
import sys
import threading
import traceback
from typing import Any

from core.config.schema import RuleName
from core.config.validation import RECOVERY_QUEUE
from core.placement.rules import Rule, RuleFilter
from core.resources import INT64_MAX, Resource
from core.scheduler.cluster import ClusterContext
from core.scheduler.partition import Partition
from core.views import app_views, dao

Json = dict[str, Any]
CLUSTER_NAME = "kubernetes"  # what YuniKorn reports for every partition's cluster


def clusters(context: ClusterContext) -> list[Json]:
    """ClusterDAOInfo per partition: when the core started, the RMs' build information."""
    build = [dict(info) for _, info in sorted(context.rm_build.items())]
    out: list[Json] = []
    for part in context.partitions.values():
        info: Json = {
            "partition": part.name,
            "clusterName": CLUSTER_NAME,
            "startTime": _nanos(context.start_time),
        }
        if build:
            info["rmBuildInformation"] = build
        out.append(info)
    return out


def application_history(context: ClusterContext) -> list[Json]:
    return [
        {"timestamp": _nanos(r.time), "totalApplications": str(r.applications)}
        for r in context.history.records
    ]


def container_history(context: ClusterContext) -> list[Json]:
    return [
        {"timestamp": _nanos(r.time), "totalContainers": str(r.containers)} for r in context.history.records
    ]


def node_utilizations(context: ClusterContext) -> list[Json]:
    """Per partition and resource type, the nodes in ten buckets of used capacity (0-10% ... 90-100%),
    as YuniKorn's /scheduler/node-utilizations."""
    return [_partition_node_utilization(part) for part in context.partitions.values()]


def _partition_node_utilization(part: Partition) -> Json:
    buckets: dict[str, list[list[str]]] = {}
    for node_id, node in sorted(part.nodes.items()):
        for resource, capacity in node.capacity.items():
            used = node.allocated.get(resource)
            percent = used * 100 / capacity if capacity > 0 else 0.0
            index = min(9, int(max(0.0, math.ceil(percent / 10) - 1)))  # (0,10] -> 0 ... (90,100] -> 9
            buckets.setdefault(resource, [[] for _ in range(10)])[index].append(node_id)
    utilizations = [
        {
            "type": resource,
            "utilization": [_bucket(k, names) for k, names in enumerate(lists)],
        }
        for resource, lists in sorted(buckets.items())
    ]
    out: Json = {"clusterId": part.rm_id, "partition": part.name}
    if utilizations:
        out["utilizations"] = utilizations
    return out


def _bucket(k: int, names: list[str]) -> Json:
    bucket: Json = {"bucketName": f"{k * 10}-{(k + 1) * 10}%"}
    if names:
        bucket["numOfNodes"] = len(names)
        bucket["nodeNames"] = names
    return bucket


def cluster_utilization(part: Partition) -> list[Json]:
    """ClusterUtilDAOInfo: per resource type the partition's total, used and usage ("42%")."""
    total = part.total_capacity
    used = Resource()
    for node in part.nodes.values():
        used.add_in_place(node.allocated)
    if not any(total.values()) or not used.as_dict():
        return [{"type": "N/A", "total": -1, "used": -1, "usage": "N/A"}]
    return [
        {
            "type": name,
            "total": min(cap, INT64_MAX),
            "used": min(used.get(name), INT64_MAX),
            "usage": f"{used.get(name) * 100 // cap}%",
        }
        for name, cap in sorted(total.items())
        if cap > 0
    ]


def placement_rules(part: Partition) -> list[Json]:
    """RuleDAO per rule in force, as YuniKorn's /placementrules: the configured rules (or the implicit
    provided rule when none is configured), then the recovery rule YuniKorn always ends the list with."""
    recovery: Json = {"name": "recovery", "parameters": {"queue": RECOVERY_QUEUE}}
    return [*(_rule(rule) for rule in part.placement.rules), recovery]


def _rule(rule: Rule) -> Json:
    parameters = {"create": "true" if rule.create else "false"}
    if rule.name == RuleName.TAG:
        parameters["tagName"] = rule.value
    elif rule.name == RuleName.FIXED:
        parameters["queue"] = rule.value
        qualified = rule.value == "root" or rule.value.startswith("root.")
        parameters["qualified"] = "true" if qualified else "false"
    out: Json = {"name": rule.name, "parameters": parameters}
    shown = _filter(rule.filter)
    if shown is not None:
        out["filter"] = shown
    if rule.parent is not None:
        out["parentRule"] = _rule(rule.parent)
    return out


def _filter(rule_filter: RuleFilter) -> Json | None:
    """YuniKorn's FilterDAO: the lists hold the names the filter kept (invalid ones dropped), an
    expression its text; an empty filter is not shown."""
    if rule_filter.empty:
        return None
    out: Json = {"type": "allow" if rule_filter.allow else "deny"}
    for key, exp_key, side in (("userList", "userExp", rule_filter.users),
                               ("groupList", "groupExp", rule_filter.groups)):  # fmt: skip
        if side.names:
            out[key] = list(side.names)
        if side.expression is not None:
            out[exp_key] = side.expression.pattern
    return out


def stack() -> str:
    """Every thread's stack, as text (YuniKorn's /ws/v1/stack dumps its goroutines)."""
    frames = sys._current_frames()
    lines: list[str] = []
    for thread in threading.enumerate():
        frame = frames.get(thread.ident or -1)
        lines.append(f"thread {thread.name} (ident {thread.ident}, daemon {thread.daemon}):")
        if frame is not None:
            lines.extend(line.rstrip("\n") for line in traceback.format_stack(frame))
        lines.append("")
    return "\n".join(lines) + "\n"


def _nanos(seconds: float) -> int:
    return int(seconds * 1e9)


def dominant_node_utilization(part: Partition) -> Json:
    """The deprecated /scheduler/node-utilization: NodesUtilDAOInfo for the resource type the root
    queue uses most of (against what the nodes hold); {} when nothing is used."""
    total, used = part.total_capacity, part.root.allocated
    ratios = {name: used.get(name) / cap for name, cap in total.items() if cap > 0 and used.get(name) > 0}
    if not ratios:
        return {}
    dominant = max(sorted(ratios), key=lambda name: ratios[name])
    found = _partition_node_utilization(part).get("utilizations", [])
    return next((u for u in found if u["type"] == dominant), {})


def full_state_dump(
    context: ClusterContext, now: float, configs: dict[str, Json], events: list[Json]
) -> Json:
    """AggregatedStateInfo: the whole state in one document. `configs`: each RM's queue configuration
    as /ws/v1/config renders it in JSON; `events`: the event records held."""
    parts = list(context.partitions.values())
    config: Json | None = None
    if configs:
        config = {
            **next(iter(configs.values())),
            "DeadlockDetectionEnabled": False,
            "DeadlockTimeoutSeconds": 0,
        }
    dump: Json = {
        "timestamp": _nanos(now),
        "partitions": [dao.partition_info(p) for p in parts],
        "applications": [
            app_views.application_info(p, a) for p in parts for _, a in sorted(p.applications.items())
        ],
        "appHistory": application_history(context),
        "nodes": [{"partitionName": p.name, "nodesInfo": dao.nodes(p)} for p in parts],
        "clusterInfo": clusters(context),
        "containerHistory": container_history(context),
        "queues": [dao.queue_tree(p) for p in parts],
        "rmDiagnostics": {rm_id: dict(info) for rm_id, info in sorted(context.rm_build.items())},
        "logLevel": "info",
        "config": config,
        "placementRules": [{"partition": p.name, "rules": placement_rules(p)} for p in parts],
        "pykorn": {"configs": configs, "events": events},
    }
    return {key: value for key, value in dump.items() if value}
