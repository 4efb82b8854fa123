"""The event ring: numbering, paging, dropping the oldest, and listeners."""

from __future__ import annotations

import asyncio

from core.events import ChangeDetail, ChangeType, Event, EventLog, EventType, Follower
from core.resources import Resource


def _event(n: int) -> Event:
    return Event(
        "rm-1", EventType.NODE, f"node-{n}", ChangeType.ADD, ChangeDetail.DETAILS_NONE, "node added", float(n)
    )


def test_events_are_numbered_in_order_and_paged_by_number() -> None:
    log = EventLog(capacity=10)
    assert (log.lowest_id, log.highest_id, log.since(0, 5)) == (0, -1, [])
    ids = [log.add(_event(n)) for n in range(4)]
    assert ids == [0, 1, 2, 3]
    assert [i for i, _ in log.since(1, 2)] == [1, 2]
    assert [e.object_id for _, e in log.since(2, 100)] == ["node-2", "node-3"]
    assert log.since(4, 10) == [] and log.since(0, 0) == []


def test_a_full_ring_drops_the_oldest_and_says_where_it_starts() -> None:
    log = EventLog(capacity=3)
    for n in range(7):
        log.add(_event(n))
    assert (log.lowest_id, log.highest_id) == (4, 6)
    assert [i for i, _ in log.since(0, 10)] == [4, 5, 6]  # what fell out is gone, not renumbered
    assert [e.object_id for e in log] == ["node-4", "node-5", "node-6"]


def test_listeners_hear_of_each_addition_with_the_newest_number_until_they_unsubscribe() -> None:
    log = EventLog()
    log.add(_event(0))
    seen: list[int] = []
    unsubscribe = log.subscribe(seen.append)
    log.add(_event(1))
    log.extend([_event(2), _event(3)])  # a batch (a scheduling step's events): one call, its newest
    log.extend([])
    unsubscribe()
    unsubscribe()  # twice is harmless
    log.add(_event(4))
    assert seen == [1, 3]
    assert [i for i, _ in log.since(2, 2)] == [2, 3]


def test_events_recorded_as_plain_tuples_read_back_as_events() -> None:
    log = EventLog()
    raw = (
        "rm-1",
        EventType.APP,
        "app-1",
        ChangeType.ADD,
        ChangeDetail.APP_ALLOC,
        "",
        2.0,
        "a1",
        Resource({"vcore": 1}),
    )
    log.extend([raw])
    ((event_id, event),) = log.since(0, 1)
    assert event_id == 0 and isinstance(event, Event)
    assert (event.object_id, event.change_detail, event.reference_id, dict(event.resource)) == (
        "app-1",
        ChangeDetail.APP_ALLOC,
        "a1",
        {"vcore": 1},
    )
    assert list(log) == [event]


async def test_a_follower_reads_held_then_new_events_through_a_burst() -> None:
    log = EventLog(capacity=100)
    for n in range(3):
        log.add(_event(n))
    follower = Follower(log, accept=lambda e: e.object_id != "node-1", start=0)
    for n in range(3, 90):  # a burst far larger than any per-reader buffer: nothing is lost
        log.add(_event(n))
    got = [item for _ in range(89) if (item := await follower.next()) is not None]
    assert [i for i, _ in got] == [0, *range(2, 90)]  # node-1 filtered out, every other one in order
    assert not follower.cut_off


async def test_a_follower_is_cut_off_when_the_ring_drops_what_it_has_not_read() -> None:
    log = EventLog(capacity=5)
    follower = Follower(log)  # from the next event on
    log.add(_event(0))
    assert await follower.next() == (0, _event(0))
    for n in range(1, 8):  # 7 more into a ring of 5: events 1 and 2 are gone unread
        log.add(_event(n))
    assert await follower.next() is None
    assert follower.cut_off and follower.cursor == 1  # the first event it missed


async def test_ending_a_follower_lets_its_reader_finish_what_was_recorded() -> None:
    log = EventLog()
    follower = Follower(log)
    log.add(_event(0))
    follower.end()
    log.add(_event(1))  # after the end: not handed on
    assert await follower.next() == (0, _event(0))
    assert await follower.next() is None
    assert not follower.cut_off
    follower.close()
    follower.close()


async def test_a_waiting_follower_wakes_for_a_new_event() -> None:
    log = EventLog()
    follower = Follower(log)
    waiting = asyncio.create_task(follower.next())
    await asyncio.sleep(0)
    assert not waiting.done()
    log.add(_event(7))
    assert await asyncio.wait_for(waiting, 1) == (0, _event(7))
