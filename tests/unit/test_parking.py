"""Asks that cannot run are parked: cycles skip them until something changes that could let them run
(core.objects.parking). What a user sees: such an ask is not tried again (its pending reason is not
noted again), it runs as soon as the change comes, and other asks are never held up by it."""

from __future__ import annotations

from typing import Any

import pytest

from core.objects.allocation import Allocation
from core.scheduler import cluster, scheduling
from core.scheduler.commands import NodeAction
from core.scheduler.partition import Partition
from core.views.dao import ask_info
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
