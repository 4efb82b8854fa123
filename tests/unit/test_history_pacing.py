"""When the history's writer writes (core.history.pacing, core.history.recorder): it leaves the records
be while the scheduler's loop is busy, writes small batches while the loop is idle, and large ones once
the oldest record has waited its delay, the buffer is half full, or the core is stopping."""

from __future__ import annotations

import threading
from pathlib import Path

from core.history.buffer import Buffer
from core.history.pacing import LoopActivity
from core.history.recorder import BATCH, IDLE_BATCH, HistoryRecorder
from core.history.store import HistoryStore
from tests.unit.domain_helpers import ONE_LEAF, Cluster


class Ticks:
    """A monotonic clock the test moves."""

    def __init__(self) -> None:
        self.now = 100.0

    def __call__(self) -> float:
        return self.now


class Activity:
    """The loop's activity as the test sets it."""

    def __init__(self, busy: bool) -> None:
        self.is_busy = busy
        self.looks = 0

    def busy(self, stop: threading.Event) -> bool:
        self.looks += 1
        return self.is_busy


def _recorder(tmp_path: Path, ticks: Ticks, busy: bool, limit: int = 1_000) -> HistoryRecorder:
    store = HistoryStore(f"sqlite:///{tmp_path}/h.db")
    recorder = HistoryRecorder(store, Cluster(ONE_LEAF).ctx, buffer_limit=limit, delay=2.0)
    recorder.buffer = Buffer(limit, clock=ticks)
    recorder._activity = Activity(busy)  # type: ignore[assignment]
    return recorder


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
    recorder = _recorder(tmp_path, ticks, busy=True)
    recorder.buffer.put([("event", {"n": i}) for i in range(10)])
    assert recorder._due() == 0
    ticks.now += 1.9
    assert recorder._due() == 0
    ticks.now += 0.1
    assert recorder._due() == BATCH


def test_an_idle_loop_gets_small_batches(tmp_path: Path) -> None:
    recorder = _recorder(tmp_path, Ticks(), busy=False)
    recorder.buffer.put([("event", {"n": i}) for i in range(10)])
    assert recorder._due() == IDLE_BATCH


def test_a_half_full_buffer_or_a_stop_is_written_whatever_the_loop_does(tmp_path: Path) -> None:
    recorder = _recorder(tmp_path, Ticks(), busy=True, limit=100)
    recorder.buffer.put([("event", {"n": i}) for i in range(49)])
    assert recorder._due() == 0
    recorder.buffer.put([("event", {"n": 49})])
    assert recorder._due() == BATCH
    looks = recorder._activity.looks  # type: ignore[union-attr]
    recorder.buffer.done(50)
    recorder.buffer.put([("event", {"n": 50})])
    recorder._stop.set()
    assert recorder._due() == BATCH
    assert recorder._activity.looks == looks  # type: ignore[union-attr]  # stopping: no look needed


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
