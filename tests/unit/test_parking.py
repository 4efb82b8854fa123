"""Asks that cannot run are parked: cycles skip them until something changes that could let them run
(core.objects.parking). What a user sees: such an ask is not tried again (its pending reason is not
noted again), it runs as soon as the change comes, and other asks are never held up by it."""

from __future__ import annotations

import json
import math
from typing import Any

import pytest

from core.objects.allocation import Allocation
from core.resources import Resource
from core.scheduler import cluster
from core.scheduler.commands import NodeAction, UpdateAllocations
from core.scheduler.cycle import scheduling
from core.scheduler.cycle.parking import first_time_after
from core.scheduler.partition import Partition
from core.views.app_views import ask_info
from si.v1.tags import TAG_NAMESPACE, TAG_POD_ANTI_AFFINITY, TAG_REQUIRED_NODE
from tests.unit.domain_helpers import Cluster

CONFIG = """
partitions:
  - name: default
    queues:
      - name: root
        submitacl: "*"
        queues:
          - name: a
          - name: capped
            resources: {max: {memory: 10}}
"""


def _allocated(c: Cluster) -> list[tuple[str, str]]:
    return [(a.key, a.node_id) for b in c.ctx.drain_results() for a in b.new_allocations]


def _tries(c: Cluster, app: str, key: str) -> int:
    """How often the ask was tried and found still pending (its allocationLog entry's count)."""
    ask = c.partition.applications[app].asks[key]
    return ask.reason_count


def test_an_ask_no_node_has_room_for_is_not_tried_again_until_room_frees_on_a_node() -> None:
    c = Cluster(CONFIG)
    c.node("n1", {"memory": 10, "vcore": 10})
    c.node("n2", {"memory": 10, "vcore": 10})
    c.app("app", "root.a")
    c.ask("app", "small-1", {"memory": 6, "vcore": 1})
    c.ask("app", "small-2", {"memory": 6, "vcore": 1})
    c.schedule()
    assert sorted(_allocated(c)) == [("small-1", "n1"), ("small-2", "n2")]
    c.ask("app", "big", {"memory": 8, "vcore": 1})  # 4 free on each node: fits the cluster, no node
    for _ in range(3):
        c.schedule()
    assert _allocated(c) == []
    assert _tries(c, "app", "big") == 1  # parked after its first try
    assert "big" in c.partition.applications["app"].parked
    c.ask("app", "tiny", {"memory": 2, "vcore": 1})  # others are placed meanwhile
    c.schedule()
    assert _allocated(c) == [("tiny", "n1")]
    assert _tries(c, "app", "big") == 1  # a placement frees no room: still parked
    c.release("app", "small-2")
    c.schedule()
    assert _allocated(c) == [("big", "n2")]


def test_an_ask_bigger_than_every_node_says_so_and_runs_once_a_node_big_enough_comes() -> None:
    c = Cluster(CONFIG)
    c.node("n1", {"memory": 10, "vcore": 10})
    c.app("app", "root.a")
    c.ask("app", "huge", {"memory": 16, "vcore": 1})
    c.ask("app", "fits", {"memory": 4, "vcore": 1})
    c.node("n2", {"memory": 10, "vcore": 10})  # the cluster holds 20: the max allows it, no node does
    c.schedule()
    assert _allocated(c) == [("fits", "n1")]
    ask = c.partition.applications["app"].asks["huge"]
    # Said without a pass over the nodes: each lacks the memory.
    assert ask.pending_reason == "no node has room for it (0/2 nodes are available: 2 insufficient memory)"
    assert ask_info(c.partition, ask)["allocationLog"][0]["message"] == ask.pending_reason
    c.node_action("n2", NodeAction.UPDATE, {"memory": 20, "vcore": 10})  # the node grows
    c.schedule()
    assert _allocated(c) == [("huge", "n2")]


def test_an_ask_over_its_queue_max_waits_parked_until_an_allocation_there_ends() -> None:
    c = Cluster(CONFIG)
    c.node("n1", {"memory": 100, "vcore": 10})
    c.app("app", "root.capped")
    c.ask("app", "first", {"memory": 8, "vcore": 1})
    c.ask("app", "second", {"memory": 8, "vcore": 1})
    c.schedule()
    assert _allocated(c) == [("first", "n1")]
    c.schedule()
    c.schedule()
    assert _tries(c, "app", "second") == 1
    reason = c.partition.applications["app"].asks["second"].pending_reason
    assert reason.startswith("over queue root.capped's max")
    c.release("app", "first")
    c.schedule()
    assert _allocated(c) == [("second", "n1")]


def test_a_parked_ask_that_is_withdrawn_is_forgotten() -> None:
    c = Cluster(CONFIG)
    c.node("n1", {"memory": 10, "vcore": 10})
    c.app("app", "root.a")
    c.ask("app", "huge", {"memory": 16, "vcore": 1})
    c.schedule()
    assert ("app", "huge") in c.partition.parking
    c.release("app", "huge")
    assert ("app", "huge") not in c.partition.parking
    assert len(c.partition.parking) == 0
    c.node("n2", {"memory": 20, "vcore": 10})
    c.schedule()
    assert _allocated(c) == []


def test_a_parked_ask_reserves_a_node_once_it_has_waited_the_reservation_delay() -> None:
    c = Cluster(CONFIG)
    c.node("n1", {"memory": 10, "vcore": 10})
    c.node("n2", {"memory": 10, "vcore": 10})
    c.app("app", "root.a")
    c.ask("app", "six", {"memory": 6, "vcore": 1})
    c.ask("app", "five", {"memory": 5, "vcore": 1})
    c.schedule()
    c.ask("app", "big", {"memory": 8, "vcore": 1})
    c.schedule()
    assert ("app", "big") in c.partition.parking
    assert c.partition.reservations == {}
    c.clock.advance(2.5)  # nothing changed but time: it may reserve now
    c.schedule()
    assert list(c.partition.reservations) == [("app", "big")]


def test_a_cycle_out_of_time_leaves_the_rest_to_the_next_slice(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(scheduling, "MAX_CYCLE_SECONDS", 0.0)  # out of time at its first look at the clock
    c = Cluster(CONFIG)
    c.node("n1", {"memory": 100, "vcore": 100})
    c.app("app", "root.a")
    for i in range(40):
        c.ask("app", f"ask-{i}", {"memory": 1, "vcore": 1})
    c.schedule()
    assert len(_allocated(c)) == scheduling.CHECK_TIME_EVERY
    assert c.ctx.unfinished  # the engine schedules again at once, after the event loop had a turn
    while c.ctx.unfinished:
        c.schedule()
    assert c.partition.applications["app"].asks == {}


def test_the_engine_runs_a_cycle_only_for_partitions_their_rm_changed(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    a = Cluster(CONFIG, rm_id="rm-a")
    b = Cluster(CONFIG, rm_id="rm-b", ctx=a.ctx)
    a.ctx.skip_quiet_partitions = True  # as the engine runs it
    cycles: list[str] = []
    real = scheduling.allocate

    def counting(part: Partition, *args: Any) -> list[Allocation]:
        cycles.append(part.rm_id)
        return real(part, *args)

    monkeypatch.setattr(cluster, "allocate", counting)
    for c in (a, b):
        c.node("n1", {"memory": 10, "vcore": 10})
        c.app("app", "root.a")
        c.ask("app", "huge", {"memory": 50, "vcore": 1})  # pending for good
    a.schedule()
    assert sorted(cycles) == ["rm-a", "rm-b"]
    cycles.clear()
    b.ask("app", "small", {"memory": 1, "vcore": 1})  # rm-b sends something: only its partition
    a.schedule()
    assert cycles == ["rm-b"]
    cycles.clear()
    a.ctx.tick()  # the engine's tick: delays may have passed everywhere
    a.schedule()
    assert sorted(cycles) == ["rm-a", "rm-b"]


# What a review found parking could strand, each now woken.
PREEMPTING = """
partitions:
  - name: default
    preemption: {enabled: true}
    queues:
      - name: root
        submitacl: "*"
        queues:
          - name: a
            resources: {guaranteed: {memory: 5}}
            properties: {preemption.delay: 1s}
          - name: b
"""


def _put(c: Cluster, key: str, app: str, memory: int, node: str = "", preempts: bool = False) -> None:
    ask = Allocation(
        key, app, c.pname(), Resource({"memory": memory, "vcore": 1}), node_id=node,
        allow_preempt_self=True, allow_preempt_other=preempts,
    )  # fmt: skip
    c.ctx.apply(UpdateAllocations(c.rm_id, allocations=(ask,)))


def _ticks(c: Cluster, count: int) -> None:
    for _ in range(count):
        c.schedule()
        c.clock.advance(0.5)
        c.ctx.tick()


def test_an_ask_parked_above_its_guarantee_preempts_once_its_queue_uses_less() -> None:
    c = Cluster(PREEMPTING)
    c.node("n1", {"memory": 10, "vcore": 10})
    c.node("n2", {"memory": 20})  # no vcore: takes nothing
    c.app("app-a", "root.a")
    c.app("app-b", "root.b")
    _put(c, "A1", "app-a", 2, "n1")
    _put(c, "A2", "app-a", 2, "n1")
    _put(c, "B1", "app-b", 6, "n1")
    _put(c, "R", "app-b", 8)  # reserves n1 after the delay
    _ticks(c, 6)
    _put(c, "X", "app-a", 3, preempts=True)  # 4 + 3 would pass root.a's guarantee of 5: no preemption
    _ticks(c, 6)
    x = c.partition.applications["app-a"].asks["X"]
    assert ("app-a", "X") in c.partition.parking and not x.preempting
    c.ctx.drain_results()
    c.release("app-a", "A1")  # 2 + 3 is within the guarantee now
    _ticks(c, 6)
    assert x.preempting  # victims chosen for it in queue b
    released = [r.key for b in c.ctx.drain_results() for r in b.released]
    assert "B1" in released


def test_a_parked_ask_runs_once_a_reservation_is_given_up_where_it_fits() -> None:
    c = Cluster(PREEMPTING.replace("guaranteed: {memory: 5}", "guaranteed: {memory: 100}"))
    c.node("n1", {"memory": 10, "vcore": 10})
    c.node("n2", {"memory": 10})
    c.app("app", "root.a")
    c.ask("app", "fill", {"memory": 4, "vcore": 1}, node_id="n1")
    c.schedule()
    c.ask("app", "R", {"memory": 8, "vcore": 1})
    _ticks(c, 6)
    assert c.partition.reservations == {("app", "R"): "n1"}
    _put(c, "P", "app", 3, preempts=True)  # n1 has room, but is reserved; n2 has no vcore
    _ticks(c, 6)
    assert ("app", "P") in c.partition.parking
    c.ctx.drain_results()
    c.release("app", "R")  # withdrawn: n1 is free of its reservation, nothing placed or ended
    c.schedule()
    assert _allocated(c) == [("P", "n1")]


def test_an_ask_with_pod_rules_still_reserves_a_node_after_the_delay() -> None:
    c = Cluster(CONFIG)
    c.node("n1", {"memory": 10, "vcore": 10})
    c.node("n2", {"memory": 10, "vcore": 10})
    c.app("app", "root.a")
    c.ask("app", "f1", {"memory": 6, "vcore": 1}, node_id="n1")
    c.ask("app", "f2", {"memory": 6, "vcore": 1}, node_id="n2")
    anti = json.dumps({"requiredDuringSchedulingIgnoredDuringExecution": [
        {"labelSelector": {"matchLabels": {"x": "nobody"}}, "topologyKey": "kubernetes.io/hostname"}
    ]})  # fmt: skip
    tags = {TAG_NAMESPACE: "ns", TAG_POD_ANTI_AFFINITY: anti}
    ask = Allocation("P", "app", c.pname(), Resource({"memory": 8, "vcore": 1}), tags=tags)
    c.ctx.apply(UpdateAllocations(c.rm_id, allocations=(ask,)))
    _ticks(c, 2)
    assert c.partition.reservations == {}
    _ticks(c, 6)  # nothing else happens: the delay alone lets it reserve
    assert list(c.partition.reservations) == [("app", "P")]


def test_slices_go_on_where_the_cycle_stopped_so_asks_never_parked_cannot_hold_up_the_rest(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    monkeypatch.setattr(scheduling, "MAX_CYCLE_SECONDS", 0.0)  # out of time every 16 asks tried
    c = Cluster(CONFIG)
    c.node("full", {"memory": 10, "vcore": 10})
    c.node("free", {"memory": 10, "vcore": 10})
    c.app("app", "root.a")
    c.ask("app", "filler", {"memory": 10, "vcore": 1}, node_id="full")  # running there already
    c.ctx.drain_results()
    for i in range(40):  # bound to the full node, first in order: retried every cycle, never parked
        ask = Allocation(
            f"daemon-{i}", "app", c.pname(), Resource({"memory": 1, "vcore": 1}), priority=10,
            tags={TAG_REQUIRED_NODE: "full"},
        )  # fmt: skip
        c.ctx.apply(UpdateAllocations(c.rm_id, allocations=(ask,)))
    c.ask("app", "plain", {"memory": 1, "vcore": 1})
    for _ in range(4):
        c.schedule()
    assert _allocated(c) == [("plain", "free")]


def test_a_timer_is_set_where_the_scheduler_finds_the_ask_ready() -> None:
    """first_time_after gives the first float time at which the scheduler's own subtraction says the
    delay has passed (> for the reservation delay, >= for the preemption delay)."""
    for start in (0.1, 1000.0, 1234.567891, 1e9 + 0.3):
        for delay in (2.0, 5.0, 0.3, 30.0):
            strict = first_time_after(start, delay, strictly=True)
            assert strict - start > delay and not math.nextafter(strict, 0) - start > delay
            loose = first_time_after(start, delay, strictly=False)
            assert loose - start >= delay and not math.nextafter(loose, 0) - start >= delay
