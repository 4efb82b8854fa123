"""What YuniKorn's latency histograms count (pkg/scheduler/objects/application.go tryNodes, sorters.go,
context.go schedule; yunikorn-core be3bb487), counted here from the domain's scheduling."""

from __future__ import annotations

from tests.unit.event_facts import MEM, NODE, app, cluster


def test_a_walk_that_places_nothing_is_an_evaluation_without_a_try() -> None:
    c = cluster()
    c.node("n1", NODE)
    c.node("n2", NODE)
    app(c, "app", "root.default")
    c.ask("app", "fits", MEM)
    # Within the queues' room (the two nodes together), larger than either node: walked, not placed.
    c.ask("app", "too-big", {"memory": NODE["memory"] + MEM["memory"]})
    c.schedule()
    timings = c.ctx.metrics.timings
    assert timings.try_node_evaluation.count == 2  # both asks walked the nodes
    assert timings.try_node.count == 1  # one try placed an ask
    assert timings.sorting["app"].count >= 1  # the leaf's applications put in order


def test_partitions_are_timed_when_idle_but_not_without_nodes() -> None:
    c = cluster()
    c.schedule()
    assert c.ctx.metrics.timings.scheduling.count == 0  # no nodes: not scheduled, not timed
    c.node("n1", NODE)
    c.schedule()
    c.schedule()
    assert c.ctx.metrics.timings.scheduling.count == 2  # nothing pending: timed all the same
