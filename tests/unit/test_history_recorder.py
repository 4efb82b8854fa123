"""The history's write path without its thread: the core's events turned into records and written to a
real SQLite database; and the bounded buffer between the loop and the thread."""

from __future__ import annotations

from pathlib import Path

from core.history.recorder import Buffer, HistoryRecorder
from core.history.store import HistoryStore, Op
from core.scheduler.commands import ReleaseRequest, UpdateAllocations
from core.scheduler.results import Termination
from tests.unit.domain_helpers import Cluster, drained


def _recorded(tmp_path: Path) -> tuple[Cluster, HistoryRecorder]:
    c = Cluster()
    store = HistoryStore(f"sqlite:///{tmp_path}/h.db")
    store.migrate()
    return c, HistoryRecorder(store, c.ctx, clock=c.clock)


def _write(recorder: HistoryRecorder) -> None:
    """What the engine's step and the thread would do: the events into the log, read, written."""
    recorder.context.drain_results()
    recorder._drain()
    batch = recorder.buffer.take(10**6, wait=0)
    recorder.store.write(batch)
    recorder.buffer.done(len(batch))


def test_an_application_and_its_allocations_in_the_history(tmp_path: Path) -> None:
    c, recorder = _recorded(tmp_path)
    c.node("n1", {"memory": 10})
    c.app("job", user="alice", groups=("ml",))
    c.ask("job", "a1", {"memory": 2})
    c.ask("job", "a2", {"memory": 2})
    c.schedule()
    drained(c)
    c.clock.advance(30)
    stopped = ReleaseRequest(c.pname(), "job", "a1", termination=Termination.STOPPED_BY_RM)
    c.ctx.apply(UpdateAllocations(c.rm_id, releases=(stopped,)))
    _write(recorder)
    store = recorder.store
    total, apps = store.applications()
    assert total == 1
    (app,) = apps
    assert (app["app_id"], app["queue"], app["user"], app["groups"], app["state"]) == (
        "job", "root.default", "alice", ["ml"], "Running",
    )  # fmt: skip
    found = store.application("default", "job")
    assert found is not None
    rows = {a["allocation_key"]: a for a in found["allocations"]}
    assert set(rows) == {"a1", "a2"}
    assert rows["a1"]["node"] == "n1" and rows["a1"]["ended"] == rows["a1"]["started"] + 30
    assert rows["a1"]["termination"] == "STOPPED" and rows["a2"]["ended"] is None
    assert [e["change_detail"] for e in found["events"]][:2] == ["APP_NEW", "APP_ACCEPTED"]
    # Usage: a1's 2 memory for 30 s, a2's so far.
    usage = store.usage("user", 0, c.clock() + 1, c.clock())
    assert usage[0]["user"] == "alice" and usage[0]["resourceSeconds"]["memory"] == 2 * 30 + 2 * 30


def test_the_same_facts_written_twice_leave_the_same_rows(tmp_path: Path) -> None:
    c, recorder = _recorded(tmp_path)
    c.node("n1", {"memory": 10})
    c.app("job")
    c.ask("job", "a1", {"memory": 2})
    c.schedule()
    drained(c)
    recorder._drain()
    batch = recorder.buffer.take(10**6, wait=0)
    recorder.store.write(batch)
    recorder.store.write(batch)  # a batch tried again after a failure that had in fact committed
    assert recorder.store.counts()["applications"] == 1
    assert recorder.store.counts()["allocations"] == 1
    before = recorder.store.counts()["events"]
    recorder.store.write(batch)
    assert recorder.store.counts()["events"] == before


def test_queue_samples(tmp_path: Path) -> None:
    c, recorder = _recorded(tmp_path)
    c.node("n1", {"memory": 10})
    c.app("job")
    c.ask("job", "a1", {"memory": 2})
    c.schedule()
    recorder.sample()
    _write(recorder)
    samples = recorder.store.queue_usage("default", "root.default", 0, c.clock() + 1)
    assert samples[0]["allocated"] == {"memory": 2}


def test_the_buffer_holds_up_to_its_bound_then_drops_the_oldest_and_counts_them() -> None:
    buffer = Buffer(limit=3)
    buffer.put([Op("event", {"n": i}) for i in range(5)])
    assert buffer.dropped == 2
    assert [params["n"] for _, params in buffer.take(10, wait=0)] == [2, 3, 4]
    buffer.done(2)
    assert [params["n"] for _, params in buffer.take(10, wait=0)] == [4]
