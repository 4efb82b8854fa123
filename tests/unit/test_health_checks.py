"""YuniKorn's health checks over the domain: healthy after real traffic, and each invariant broken on
purpose makes its check fail with YuniKorn's name and a diagnosis naming what is wrong."""

from __future__ import annotations

from typing import Any

from core.objects.allocation import Allocation
from core.objects.partition_key import PartitionKey
from core.resources import Resource
from core.scheduler.commands import NodeAction, NodeChange, UpdateNodes
from core.server.health_loop import HealthLoop
from core.views.health_view import scheduler_health
from tests.unit.domain_helpers import Cluster

YUNIKORNS = [
    "Scheduling errors", "Failed nodes", "Negative resources", "Negative resources", "Consistency of data",
    "Consistency of data", "Reservation check", "Orphan allocation on node check",
    "Orphan allocation on app check",
]  # fmt: skip


def _running() -> Cluster:
    c = Cluster()
    c.node("n1", {"memory": 100})
    c.node("n2", {"memory": 100})
    c.app("app-1")
    for key in ("a", "b", "c"):
        c.ask("app-1", key, {"memory": 30})
    c.schedule()
    assert len(c.partition.applications["app-1"].allocations) == 3
    return c


def _failed(c: Cluster) -> list[tuple[str, str, str]]:
    health = scheduler_health(c.ctx)
    failed = [
        (h["Name"], h["Description"], h["DiagnosisMessage"])
        for h in health["HealthChecks"]
        if not h["Succeeded"]
    ]
    assert health["Healthy"] is (not failed)
    return failed


def _check(c: Cluster, name: str, description_has: str = "") -> dict[str, Any]:
    [found] = [
        h for h in scheduler_health(c.ctx)["HealthChecks"]
        if h["Name"] == name and description_has in h["Description"]
    ]  # fmt: skip
    return found


def test_after_real_traffic_every_check_passes_and_yunikorns_come_first_in_its_order() -> None:
    c = _running()
    health = scheduler_health(c.ctx)
    assert health["Healthy"] is True
    names = [h["Name"] for h in health["HealthChecks"]]
    assert names == [*YUNIKORNS, "Nodes within capacity (default)"]
    assert _check(c, "Reservation check")["DiagnosisMessage"] == "Reservation/node nr ratio: [0.000000]"
    assert _check(c, "Failed nodes")["DiagnosisMessage"] == "There were 0 failed nodes logged in the metrics"


def test_a_node_for_a_partition_that_is_not_there_fails_the_failed_nodes_check() -> None:
    c = _running()
    c.node("n1", {"memory": 100})  # already registered: refused, but not a failed node (as YuniKorn)
    c.node_action("ghost", NodeAction.UPDATE, {"memory": 1})  # not an addition: not a failed node
    assert _failed(c) == []
    elsewhere = NodeChange(
        "n9", NodeAction.CREATE, PartitionKey(c.rm_id, "nope"), {}, Resource({"memory": 1})
    )
    c.ctx.apply(UpdateNodes(c.rm_id, (elsewhere,)))
    assert _failed(c) == [
        (
            "Failed nodes",
            "Check for failed nodes entries in metrics",
            "There were 1 failed nodes logged in the metrics",
        )
    ]


def test_a_scheduling_error_fails_its_check() -> None:
    c = _running()
    c.ctx.metrics.count("error")
    [(name, _, message)] = _failed(c)
    assert name == "Scheduling errors" and message == "There were 1 scheduling errors logged in the metrics"


def test_a_negative_resource_on_a_node_and_in_the_partition_fails_both_checks() -> None:
    c = _running()
    node = c.partition.nodes["n2"]
    node.occupied = Resource({"memory": -5})  # a bug's footprint
    c.partition.root.allocated.sub_in_place(Resource({"memory": 500}))
    failed = {(name, message) for name, _, message in _failed(c)}
    assert ("Negative resources", 'Nodes with negative resources: ["n2"]') in failed
    assert ("Negative resources", 'Partitions with negative resources: ["default"]') in failed
    assert ("Consistency of data", 'Nodes with inconsistent data: ["n2"]') in failed  # occupied moved alone


def test_totals_that_do_not_add_up_fail_the_consistency_checks() -> None:
    c = _running()
    c.partition.total_capacity = Resource({"memory": 201})
    [(name, description, message)] = _failed(c)
    assert name == "Consistency of data" and "sum of the node resources" in description
    assert message == 'Partitions with inconsistent data: ["default"]'


def test_an_allocation_on_a_node_but_not_on_its_application_is_an_orphan_on_the_node() -> None:
    c = _running()
    stray = Allocation("stray", "app-1", c.pname(), Resource({"memory": 1}), node_id="n1")
    c.partition.nodes["n1"].allocations["stray"] = stray
    failed = {(name, message) for name, _, message in _failed(c)}
    assert ("Orphan allocation on node check", "Orphan allocations: [app-1/stray@n1]") in failed


def test_an_allocation_of_an_application_that_no_node_holds_is_an_orphan_on_the_application() -> None:
    c = _running()
    alloc = next(iter(c.partition.applications["app-1"].allocations.values()))
    del c.partition.nodes[alloc.node_id].allocations[alloc.key]
    failed = {(name, message) for name, _, message in _failed(c)}
    assert (
        "Orphan allocation on app check",
        f"OrphanAllocations: [app-1/{alloc.key}@{alloc.node_id}]",
    ) in failed


def test_a_node_over_its_capacity_fails_pykorns_own_check() -> None:
    c = _running()
    node = c.partition.nodes["n1"]
    node.capacity = Resource({"memory": 10})  # below what runs there, as after a bad resize
    failed = {name for name, _, _ in _failed(c)}
    assert "Nodes within capacity (default)" in failed


async def test_the_periodic_check_keeps_its_last_result_only_while_it_runs_and_not_after_the_stop() -> None:
    c = _running()
    loop = HealthLoop(c.ctx, interval=30.0)
    loop.start()
    assert loop.last is not None and loop.last["Healthy"] is True and c.ctx.metrics.health_checks == 10
    loop.set_interval(0.0)  # off: no result to go stale (REST then checks when asked)
    assert loop.last is None
    loop.close()
    loop.set_interval(5.0)  # an RM's update during the stop starts nothing
    assert loop.interval == 0.0
