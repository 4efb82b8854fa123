"""When the history's writer writes (core.history.pacing, core.history.writer): it leaves the records
be while the scheduler's loop is busy, writes batches growing from small ones while the loop is idle,
and large ones once the oldest record has waited its delay, the buffer is half full, or the core is
stopping; a stop writes everything held in the time it is given."""

from __future__ import annotations

import threading
import time
from pathlib import Path

from core.history.buffer import Buffer
from core.history.pacing import LoopActivity
from core.history.rows import RAW_EVENT
from core.history.store import HistoryStore
from core.history.writer import BATCH, IDLE_BATCH, IDLE_MOST, HistoryWriter
from tests.unit.domain_helpers import ONE_LEAF, Cluster


class Ticks:
    """A monotonic clock the test moves."""

    def __init__(self) -> None:
        self.now = 100.0

    def __call__(self) -> float:
        return self.now


class Activity(LoopActivity):
    """The loop's activity as the test sets it."""

    def __init__(self, busy: bool) -> None:
        super().__init__(threading.get_ident())
        self.is_busy = busy
        self.looks = 0

    def busy(self, stop: threading.Event) -> bool:
        self.looks += 1
        return self.is_busy


def _writer(tmp_path: Path, ticks: Ticks, busy: bool, limit: int = 1_000) -> HistoryWriter:
    writer = HistoryWriter(HistoryStore(f"sqlite:///{tmp_path}/h.db"), Buffer(limit, clock=ticks), delay=2.0)
    writer.activity = Activity(busy)
    return writer


def test_the_oldest_record_s_wait_is_counted_from_when_it_came() -> None:
    ticks = Ticks()
    buffer = Buffer(10, clock=ticks)
    assert buffer.waited() == 0.0
    buffer.put([("event", {"n": 1})])
    ticks.now += 1.5
    buffer.put([("event", {"n": 2})])
    ticks.now += 1.0
    assert buffer.waited() == 2.5
    buffer.done(1)  # the first written: the second is the oldest now
    assert buffer.waited() == 1.0


def test_a_busy_loop_is_left_alone_until_the_oldest_record_has_waited_the_delay(tmp_path: Path) -> None:
    ticks = Ticks()
    writer = _writer(tmp_path, ticks, busy=True)
    writer.buffer.put([("event", {"n": i}) for i in range(10)])
    assert writer.due() == 0
    ticks.now += 1.9
    assert writer.due() == 0
    ticks.now += 0.1
    assert writer.due() == BATCH


def test_an_idle_loop_gets_batches_growing_from_small_ones(tmp_path: Path) -> None:
    writer = _writer(tmp_path, Ticks(), busy=False)
    writer.buffer.put([("event", {"n": i}) for i in range(10)])
    assert [writer.due() for _ in range(3)] == [IDLE_BATCH, 2 * IDLE_BATCH, 4 * IDLE_BATCH]
    assert max(writer.due() for _ in range(10)) == IDLE_MOST
    writer.activity.is_busy = True  # type: ignore[union-attr]
    assert writer.due() == 0
    writer.activity.is_busy = False  # type: ignore[union-attr]
    assert writer.due() == IDLE_BATCH  # small again after the loop was busy


def test_a_half_full_buffer_or_a_stop_is_written_whatever_the_loop_does(tmp_path: Path) -> None:
    writer = _writer(tmp_path, Ticks(), busy=True, limit=100)
    writer.buffer.put([("event", {"n": i}) for i in range(49)])
    assert writer.due() == 0
    writer.buffer.put([("event", {"n": 49})])
    assert writer.due() == BATCH
    looks = writer.activity.looks  # type: ignore[union-attr]
    writer.buffer.done(50)
    writer.buffer.put([("event", {"n": 50})])
    writer.stopping()
    assert writer.due() == BATCH
    assert writer.activity.looks == looks  # type: ignore[union-attr]  # stopping: no look needed


def test_a_stop_writes_everything_held_in_the_time_it_is_given(tmp_path: Path) -> None:
    """Review of 285b1f7: the stop gave the writer 0.05 s, and the records the pacing had held back
    (up to two seconds of a busy core's) were lost."""
    c = Cluster(ONE_LEAF)
    events = [(c.rm_id, *e[1:]) for e in _node_events(c, 20_000)]
    writer = _writer(tmp_path, Ticks(), busy=True, limit=100_000)
    writer.buffer.put([(RAW_EVENT, e) for e in events])
    writer.start(threading.get_ident())
    writer.activity = Activity(busy=True)  # the loop stays busy to the end
    writer.stop(30.0)
    assert len(writer.buffer) == 0 and writer.written == 20_000
    assert HistoryStore(writer.store.url).counts()["events"] == 20_000


def _node_events(c: Cluster, count: int) -> list[tuple[object, ...]]:
    """`count` distinct NODE events as the core's log holds them."""
    from core.events import ChangeDetail, ChangeType, EventType
    from core.resources import Resource

    nothing, now = Resource({}), time.time()  # within the retention
    return [
        (
            c.rm_id,
            EventType.NODE,
            f"n{i}",
            ChangeType.ADD,
            ChangeDetail.DETAILS_NONE,
            "",
            now + i,
            "",
            nothing,
        )
        for i in range(count)
    ]


def test_the_activity_of_a_thread_that_waits_is_idle_and_of_one_that_computes_busy() -> None:
    stop, done = threading.Event(), threading.Event()

    def waits() -> None:
        done.wait()

    def computes() -> None:
        while not done.is_set():
            sum(range(1000))

    try:
        waiter = threading.Thread(target=waits, daemon=True)
        waiter.start()
        assert waiter.ident is not None
        assert not LoopActivity(waiter.ident, window=0.05).busy(stop)
        worker = threading.Thread(target=computes, daemon=True)
        worker.start()
        assert worker.ident is not None
        activity = LoopActivity(worker.ident, window=0.05, busy_above=0.05)
        # A host short of CPUs may leave the worker off one look; it computes in the next ones.
        assert any(activity.busy(stop) for _ in range(20))
        assert activity.window > 0.05  # looking again later while the loop stays busy
    finally:
        done.set()
