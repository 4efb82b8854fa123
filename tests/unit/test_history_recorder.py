"""The history's write path without its thread: the core's events turned into records and written to a
real SQLite database; and the bounded buffer between the loop and the thread."""

from __future__ import annotations

import asyncio
from pathlib import Path
from typing import Any

import pytest

from core.config import load_config
from core.history.buffer import Buffer
from core.history.recorder import HistoryRecorder
from core.history.rows import CONFIG_APPLIED, RAW_EVENT, prepared
from core.history.store import HistoryStore, Op
from core.history.writer import HistoryWriter
from core.objects.allocation import Allocation
from core.resources import Resource
from core.scheduler.cluster import ClusterContext
from core.scheduler.commands import RegisterRM, ReleaseRequest, UpdateAllocations, UpdateConfig
from core.scheduler.results import Termination
from tests.unit.domain_helpers import ONE_LEAF, Cluster, FakeClock, drained


def _recorded(tmp_path: Path, config: str = ONE_LEAF) -> tuple[Cluster, HistoryRecorder]:
    c = Cluster(config)
    store = HistoryStore(f"sqlite:///{tmp_path}/h.db")
    store.migrate()
    return c, HistoryRecorder(store, c.ctx, clock=c.clock)


def _write(recorder: HistoryRecorder) -> None:
    """What the engine's step and the thread would do: the events into the log, read, written."""
    recorder.context.drain_results()
    recorder._drain()
    batch = recorder.buffer.take(10**6)
    recorder.store.write(prepared(batch, recorder.store.last_config))
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
    batch = recorder.buffer.take(10**6)
    recorder.store.write(prepared(batch, recorder.store.last_config))
    recorder.store.write(prepared(batch))  # a batch tried again after a failure that had in fact committed
    assert recorder.store.counts()["applications"] == 1
    assert recorder.store.counts()["allocations"] == 1
    before = recorder.store.counts()["events"]
    recorder.store.write(prepared(batch))
    assert recorder.store.counts()["events"] == before


def test_queue_samples(tmp_path: Path) -> None:
    c, recorder = _one_running(tmp_path, "job", 2)
    recorder.sample()
    _write(recorder)
    samples = recorder.store.queue_usage("default", "root.default", 0, c.clock() + 1)
    assert samples[0]["allocated"] == {"memory": 2}


def test_the_buffer_holds_up_to_its_bound_then_drops_the_oldest_and_counts_them() -> None:
    buffer = Buffer(limit=3)
    buffer.put([Op("event", {"n": i}) for i in range(5)])
    assert buffer.dropped == 2
    assert [params["n"] for _, params in buffer.take(10)] == [2, 3, 4]
    buffer.done(2)
    assert [params["n"] for _, params in buffer.take(10)] == [4]


def test_a_batch_is_written_in_its_order_so_an_end_after_its_start_is_kept(tmp_path: Path) -> None:
    """Review of e99f140: a batch grouped by kind ran every end before any start."""
    store = HistoryStore(f"sqlite:///{tmp_path}/h.db")
    store.migrate()
    key = ("rm", "default", "job")
    start = ("alloc_start", (*key, "a1", 1.0, "root.q", "u", "n1", "", '{"memory": 1}'))
    store.write(
        [("alloc_end", (*key, "a0", 1.0, "STOPPED")), start, ("alloc_end", (*key, "a1", 2.0, "STOPPED"))]
    )
    store.write([("app_new", (*key, "root.q", "u", "[]", "{}", 0.5)), ("app_running", (*key, 1.0))])
    found = store.application("default", "job")
    assert found is not None and found["state"] == "Running"
    (a1,) = found["allocations"]
    assert (a1["allocation_key"], a1["ended"], a1["termination"]) == ("a1", 2.0, "STOPPED")


def test_a_duplicate_submission_leaves_the_live_application_as_it_is(tmp_path: Path) -> None:
    c, recorder = _recorded(tmp_path)
    c.node("n1", {"memory": 10})
    c.app("job", user="alice")
    c.ask("job", "a1", {"memory": 2})
    c.schedule()
    c.app("job", user="mallory")  # the same ID again: refused, the live one runs on
    _write(recorder)
    found = recorder.store.application("default", "job")
    assert found is not None
    assert (found["state"], found["user"], found["finished"]) == ("Running", "alice", None)
    assert [a["ended"] for a in found["allocations"]] == [None]


def test_a_refused_application_keeps_what_it_was_submitted_as(tmp_path: Path) -> None:
    c, recorder = _recorded(tmp_path, ONE_LEAF.replace('submitacl: "*"', 'submitacl: "alice"'))
    c.app("nowhere", user="bob", groups=("ml",))  # bob may not submit: refused
    _write(recorder)
    found = recorder.store.application("default", "nowhere")
    assert found is not None
    assert (found["state"], found["queue"], found["user"], found["groups"]) == (
        "Rejected", "root.default", "bob", ["ml"],
    )  # fmt: skip
    assert found["finished"] is not None and found["reason"]


def _one_running(tmp_path: Path, app_id: str, memory: int) -> tuple[Cluster, HistoryRecorder]:
    """alice's application `app_id` running one allocation, a1, on n1; written."""
    c, recorder = _recorded(tmp_path)
    c.node("n1", {"memory": 10})
    c.app(app_id, user="alice")
    c.ask(app_id, "a1", {"memory": memory})
    c.schedule()
    _write(recorder)
    return c, recorder


def test_a_resized_allocation_ends_one_row_and_starts_one_at_its_new_size(tmp_path: Path) -> None:
    c, recorder = _one_running(tmp_path, "job", 2)
    c.clock.advance(10)
    resized = Allocation("a1", "job", c.pname(), Resource({"memory": 4}), node_id="n1")
    c.ctx.apply(UpdateAllocations(c.rm_id, allocations=(resized,)))  # the RM runs it at a new size
    _write(recorder)
    found = recorder.store.application("default", "job")
    assert found is not None
    rows = sorted(found["allocations"], key=lambda a: a["started"])
    assert [(r["resources"], r["termination"]) for r in rows] == [
        ({"memory": 2}, "RESIZED"), ({"memory": 4}, None),
    ]  # fmt: skip


def test_written_records_leave_the_buffer_even_after_an_overflow_meanwhile() -> None:
    """Review of e99f140: done() after a drop removed newer records that were never written."""
    buffer = Buffer(limit=4)
    buffer.put([("event", {"n": i}) for i in range(4)])
    batch = buffer.take(4)  # 0..3 being written
    buffer.put([("event", {"n": i}) for i in range(4, 6)])  # 0 and 1 pushed out meanwhile
    buffer.done(len(batch))
    assert [params["n"] for _, params in buffer.take(10)] == [4, 5]


def test_a_configuration_change_is_recorded_with_who_sent_it_and_the_diff_and_a_same_text_is_not(
    tmp_path: Path,
) -> None:
    c, recorder = _recorded(tmp_path)
    raised = ONE_LEAF.replace("memory: 100", "memory: 200")
    c.ctx.apply(UpdateConfig(c.rm_id, load_config(raised).config, who="CN=ops (ipv4:10.1.2.3:4)"))
    c.ctx.apply(UpdateConfig(c.rm_id, load_config(raised).config, who="CN=ops (ipv4:10.1.2.3:4)"))
    _write(recorder)
    (change,) = recorder.store.config_changes(c.rm_id)
    assert (change["who"], change["change"]) == ("CN=ops (ipv4:10.1.2.3:4)", "updated")
    assert "-              max: {memory: 100, vcore: 100}" in change["diff"]
    assert "+              max: {memory: 200, vcore: 100}" in change["diff"]
    # A core that starts again on this database: the RM registers with the text in force, no change;
    # then with another text, compared with the one recorded last.
    for text, recorded in ((raised, 1), (ONE_LEAF, 2)):
        fresh = ClusterContext(FakeClock(c.clock() + 10 * recorded))
        restarted = HistoryRecorder(recorder.store, fresh, clock=fresh.clock)
        Cluster(text, ctx=fresh)  # registers
        _write(restarted)
        assert len(recorder.store.config_changes(c.rm_id)) == recorded
    newest = recorder.store.config_changes(c.rm_id)[0]
    assert (
        newest["change"] == "registered" and "+              max: {memory: 100, vcore: 100}" in newest["diff"]
    )


def test_a_diff_of_texts_without_a_last_newline_keeps_its_lines_apart() -> None:
    """Review of 295af7a: the last line of each text ran into the next line of the diff."""
    (row,) = prepared([(CONFIG_APPLIED, ("rm", 1.0, "updated", "me", "a: 1\nmax: 1", "a: 1\nmax: 2"))])
    diff = row[1][3].splitlines()
    assert "-max: 1" in diff and "+max: 2" in diff


def test_a_record_no_row_can_be_made_of_is_dropped_and_counted_and_the_others_are_written(
    tmp_path: Path,
) -> None:
    """Review of 295af7a: such a record was taken for a database failure and held every record
    behind it forever."""
    store = HistoryStore(f"sqlite:///{tmp_path}/h.db")
    store.migrate()
    writer = HistoryWriter(store, Buffer(100))
    bad = (RAW_EVENT, ("rm", "NODE", "n1"))  # too short to be an event
    good = ("app_new", ("rm", "default", "job", "root.q", "u", "[]", "{}", 1.0))
    writer.buffer.put([bad, good])
    writer._write(writer.buffer.take(10))
    assert (writer.unwritable, writer.written, writer.buffer.dropped, len(writer.buffer)) == (1, 1, 1, 0)
    assert store.counts()["applications"] == 1


def test_allocations_gone_before_their_turn_is_read_keep_their_nodes(tmp_path: Path) -> None:
    """Review of 295af7a: each such allocation searched the whole turn for its node (quadratic)."""
    c, recorder = _recorded(tmp_path)
    for n in range(4):
        c.node(f"n{n}", {"memory": 1000})
    c.app("job", user="alice")
    for i in range(100):  # the queue's max
        c.ask("job", f"a{i}", {"memory": 1})
    c.schedule()
    for i in range(100):  # all released before the turn is read
        c.release("job", f"a{i}")
    _write(recorder)
    found = recorder.store.application("default", "job")
    assert found is not None and len(found["allocations"]) == 100
    assert {a["node"] for a in found["allocations"]} == {"n0", "n1", "n2", "n3"}


def test_what_ended_while_the_core_was_away_is_closed_once_its_rm_has_sent_its_state_again(
    tmp_path: Path,
) -> None:
    """Review of e99f140: such rows stayed open (running, counting usage) until their application
    ended."""
    c, recorder = _recorded(tmp_path)
    c.node("n1", {"memory": 10})
    c.app("svc", user="alice")
    c.app("batch", user="bob")
    for app_id, key in (("svc", "a1"), ("svc", "a2"), ("batch", "b1")):
        c.ask(app_id, key, {"memory": 1})
    c.schedule()
    _write(recorder)
    # The core restarts on the same database; the RM registers and sends what still runs: svc's a1.
    fresh = ClusterContext(FakeClock(c.clock() + 100))
    restarted = HistoryRecorder(recorder.store, fresh, clock=fresh.clock)
    again = Cluster(ONE_LEAF, ctx=fresh)
    registered_at = fresh.clock()
    again.node("n1", {"memory": 10})
    again.app("svc", user="alice")
    running = Allocation("a1", "svc", again.pname(), Resource({"memory": 1}), node_id="n1")
    fresh.apply(UpdateAllocations(again.rm_id, allocations=(running,)))
    restarted.reconcile(again.rm_id, registered_at)  # what the loop does SETTLE seconds later
    _write(restarted)
    svc = recorder.store.application("default", "svc")
    assert svc is not None and svc["finished"] is None
    rows = {a["allocation_key"]: a for a in svc["allocations"]}
    assert (rows["a1"]["ended"], len(svc["allocations"])) == (None, 2)  # a1 still its one open row
    assert (rows["a2"]["ended"], rows["a2"]["termination"]) == (registered_at, "ENDED_WHILE_AWAY")
    batch = recorder.store.application("default", "batch")
    assert batch is not None and batch["finished"] == registered_at and "ended while" in batch["reason"]
    assert [(a["ended"], a["termination"]) for a in batch["allocations"]] == [
        (registered_at, "ENDED_WHILE_AWAY")
    ]


def test_a_reconciliation_reads_the_events_not_read_yet_first(tmp_path: Path) -> None:
    """Review of 6189c02: an end still among the turn's events went after the snapshot that no longer
    held its allocation, which closed the row as ended while away, at the registration's time."""
    c, recorder = _one_running(tmp_path, "svc", 1)
    registered_at = c.clock()
    c.clock.advance(60)
    stopped = ReleaseRequest(c.pname(), "svc", "a1", termination=Termination.STOPPED_BY_RM)
    c.ctx.apply(UpdateAllocations(c.rm_id, releases=(stopped,)))
    c.ctx.drain_results()  # the engine's step ends: its end is in the log's tap, not read yet
    recorder.reconcile(c.rm_id, registered_at + 1)
    _write(recorder)
    found = recorder.store.application("default", "svc")
    assert found is not None
    assert [(a["ended"], a["termination"]) for a in found["allocations"]] == [(registered_at + 60, "STOPPED")]


async def test_a_registration_replaces_the_reconciliation_of_the_one_before(tmp_path: Path) -> None:
    """Review of 6189c02: the first registration's reconciliation ran while the RM was sending its
    state again after the second, and closed what was still running."""
    c, recorder = _recorded(tmp_path)
    recorder._loop = asyncio.get_running_loop()
    recorder.settle = 0.05
    for text in (ONE_LEAF, ONE_LEAF.replace("memory: 100", "memory: 101")):
        c.ctx.apply(RegisterRM(c.rm_id, load_config(text).config))
        c.clock.advance(1)
    second = c.clock() - 1
    reconciles: list[Any] = []
    while not reconciles:  # the second's reconciliation, SETTLE later
        await asyncio.sleep(0.05)
        reconciles = [params for kind, params in recorder.buffer.take(100) if kind == "reconcile"]
    assert [params[1] for params in reconciles] == [second]


def test_a_record_no_row_can_be_made_of_is_counted_once_however_often_its_batch_is_tried(
    tmp_path: Path,
) -> None:
    """Review of 6189c02: each attempt after a database failure counted it again."""
    store = HistoryStore(f"sqlite:///{tmp_path}/missing/h.db")  # no such directory: every write fails
    writer = HistoryWriter(store, Buffer(100))
    sample = {"rm_id": "rm", "partition": "default", "queue": "root", "at": 1.0,
              "allocated": {"memory": 2**70}, "pending": {}}  # fmt: skip
    writer.buffer.put(
        [("queue_sample", sample), ("app_new", ("rm", "default", "j", "q", "u", "[]", "{}", 1.0))]
    )
    for _ in range(3):
        with pytest.raises(Exception, match="unable to open database"):
            writer._write(writer.buffer.take(10))
    assert (writer.unwritable, writer.buffer.dropped, len(writer.buffer)) == (1, 1, 2)
