"""The scheduler's health checks in YuniKorn's dao shape (SchedulerHealthDAOInfo: Healthy, and each
check's Name, Succeeded, Description, DiagnosisMessage), with YuniKorn's names, descriptions and
messages (yunikorn-core pkg/scheduler/health_checker.go), over all partitions together as YuniKorn's;
then pykorn's own: every node within its capacity. What the REST healthcheck answers and what the
periodic check (core.server.health_loop) logs."""

from __future__ import annotations

from typing import Any

from core.objects.allocation import Allocation
from core.resources import Resource
from core.scheduler.cluster import ClusterContext
from core.scheduler.partition import Partition

Check = dict[str, Any]


def check(succeeded: bool, name: str, description: str, message: str) -> Check:
    return {"Name": name, "Succeeded": succeeded, "Description": description, "DiagnosisMessage": message}


def scheduler_health(context: ClusterContext) -> dict[str, Any]:
    metrics = context.metrics
    errors = metrics.allocation_attempts.get("error", 0)
    checks = [
        check(errors == 0, "Scheduling errors", "Check for scheduling error entries in metrics",
              f"There were {errors} scheduling errors logged in the metrics"),
        check(metrics.nodes_failed == 0, "Failed nodes", "Check for failed nodes entries in metrics",
              f"There were {metrics.nodes_failed} failed nodes logged in the metrics"),
        *_context_checks(list(context.partitions.values())),
    ]  # fmt: skip
    return {"Healthy": all(c["Succeeded"] for c in checks), "HealthChecks": checks}


def _context_checks(parts: list[Partition]) -> list[Check]:
    negative_parts: list[str] = []
    negative_nodes: list[str] = []
    total_mismatch: list[str] = []
    node_mismatch: list[str] = []
    ratios: list[float] = []
    orphans_on_nodes: list[Allocation] = []
    orphans_on_apps: list[Allocation] = []
    for part in parts:
        if part.root.allocated.has_negative() or part.total_capacity.has_negative():
            negative_parts.append(part.name)
        node_sum = Resource()
        reserved = 0
        for node in part.nodes.values():
            node_sum.add_in_place(node.capacity)
            reserved += len(node.reservations)
            if node.capacity != node.allocated + node.occupied + node.available:
                node_mismatch.append(node.node_id)
            if any(r.has_negative() for r in (node.allocated, node.available, node.capacity, node.occupied)):
                negative_nodes.append(node.node_id)
            orphans_on_nodes.extend(_orphans_on_node(part, node.allocations.values()))
        for app in part.applications.values():
            for alloc in app.allocations.values():
                held_by = part.nodes.get(alloc.node_id)
                if held_by is None or held_by.allocations.get(alloc.key) is not alloc:
                    orphans_on_apps.append(alloc)
        ratios.append(reserved / len(part.nodes) if part.nodes else 0.0)
        if node_sum != part.total_capacity:  # a type missing on one side counts as 0 (EqualsOrEmpty)
            total_mismatch.append(part.name)
    return [
        check(not negative_parts, "Negative resources", "Check for negative resources in the partitions",
              f"Partitions with negative resources: {_quoted(negative_parts)}"),
        check(not negative_nodes, "Negative resources", "Check for negative resources in the nodes",
              f"Nodes with negative resources: {_quoted(negative_nodes)}"),
        check(not total_mismatch, "Consistency of data",
              "Check if total partition resource == sum of the node resources from the partition",
              f"Partitions with inconsistent data: {_quoted(total_mismatch)}"),
        check(not node_mismatch, "Consistency of data",
              "Check if node total resource = allocated resource + occupied resource + available resource",
              f"Nodes with inconsistent data: {_quoted(node_mismatch)}"),
        # As YuniKorn: always passed until it is known what ratio is not normal any more.
        check(True, "Reservation check", "Check the reservation nr compared to the number of nodes",
              f"Reservation/node nr ratio: [{' '.join(f'{r:f}' for r in ratios)}]"),
        check(not orphans_on_nodes, "Orphan allocation on node check",
              "Check if there are orphan allocations on the nodes",
              f"Orphan allocations: {_allocations(orphans_on_nodes)}"),
        check(not orphans_on_apps, "Orphan allocation on app check",
              "Check if there are orphan allocations on the applications",
              f"OrphanAllocations: {_allocations(orphans_on_apps)}"),
        *_capacity_checks(parts),
    ]  # fmt: skip


def _orphans_on_node(part: Partition, allocations: Any) -> list[Allocation]:
    """The node's allocations (not other schedulers') no application of the partition holds."""
    found = []
    for alloc in allocations:
        if alloc.foreign:
            continue
        app = part.applications.get(alloc.application_id)
        # A real task taking a placeholder's place is on its node while the placeholder's release is on
        # its way: held by its application as `replacing` until then, not an orphan.
        if app is None or (
            app.allocations.get(alloc.key) is not alloc and app.replacing.get(alloc.key) is not alloc
        ):
            found.append(alloc)
    return found


def _capacity_checks(parts: list[Partition]) -> list[Check]:
    """pykorn's own: what the engine vouches for on every allocation, that no node holds more than it has."""
    out = []
    for part in parts:
        over = [n.node_id for n in part.nodes.values() if not n.fits_capacity(n.allocated)]
        out.append(
            check(not over, f"Nodes within capacity ({part.name})", "no node holds more than its capacity",
                  f"over capacity: {over}" if over else "")
        )  # fmt: skip
    return out


def _quoted(names: list[str]) -> str:
    """A list of names as Go's %q prints a []string: ["a" "b"]."""
    return "[" + " ".join(f'"{name}"' for name in names) + "]"


def _allocations(allocs: list[Allocation]) -> str:
    return "[" + " ".join(f"{a.application_id}/{a.key}@{a.node_id}" for a in allocs) + "]"
