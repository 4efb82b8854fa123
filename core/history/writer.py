"""The history's writer: a thread of its own that takes the records the event loop buffered
(core.history.recorder), makes their rows (core.history.rows) and writes them, in batches, one
transaction each, off the scheduling path.

- When: it gives way to a busy loop (core.history.pacing). While the loop's thread is idle it writes
  IDLE_BATCH records per transaction, doubling to IDLE_MOST while the loop stays idle; once the
  oldest record has waited `delay`, the buffer is half full or the core is stopping, BATCH per
  transaction whatever the loop does.
- Failing: a batch the database refuses or does not answer stays in front and is tried again after a
  pause (doubling up to MAX_PAUSE), so writes resume where they stopped once the database is back.
  Every statement is idempotent (core.history.tables), so a batch written twice is harmless. A record
  the database refuses for what it holds, or that no row can be made of, is dropped and counted on its
  own: it never holds up the records behind it.
- Pruning: records older than the retention deleted once an hour.
"""

from __future__ import annotations

import threading
import time
from collections.abc import Callable

import structlog
from sqlalchemy.exc import DataError, IntegrityError

from core.history.buffer import Buffer
from core.history.pacing import LoopActivity
from core.history.rows import prepared
from core.history.store import HistoryStore, Record

log = structlog.get_logger("pykorn.history")

# Records per transaction: while the loop is idle a small batch first, growing to IDLE_MOST while it
# stays idle (one begun just before the loop gets busy again is over within a few milliseconds; the
# writer looks at the loop between two); when pressed (the oldest record has waited its delay, the
# buffer is half full, the core stops) a large one.
IDLE_BATCH, IDLE_MOST, BATCH = 100, 400, 2_000
MAX_PAUSE = 30.0  # seconds between two attempts at a database that fails, at most
PRUNE_EVERY = 3600.0  # seconds


class HistoryWriter:
    def __init__(
        self,
        store: HistoryStore,
        buffer: Buffer,
        clock: Callable[[], float] = time.time,
        retention: float = 30 * 86400.0,
        delay: float = 2.0,
    ) -> None:
        self.store = store
        self.buffer = buffer
        self.clock = clock
        self.retention = retention
        self.delay = delay  # seconds the oldest record waits for an idle loop, at most
        self.written = 0  # records written (the metrics)
        self.failures = 0  # batches the database refused or did not answer
        self.healthy = True  # the last batch was written
        self.unwritable = 0  # records no row could be made of (a fault of pykorn's), dropped
        self.ready = False  # the schema is this pykorn's (migrated before the first write)
        self.migrated = threading.Event()  # ready, for a waiter on another thread
        self.activity: LoopActivity | None = None  # the loop's thread (start()); None: never busy
        self._idle_batch = IDLE_BATCH
        self._stopping = threading.Event()  # write everything now, whatever the loop does
        self._stop = threading.Event()  # and end once the buffer is empty
        self._abandoned = threading.Event()  # the stop's time ran out: no more writes, the thread ends
        # Records of the batch being written that were counted unwritable (kept, so their ids stay theirs)
        self._counted: dict[int, Record] = {}
        self._thread = threading.Thread(target=self._run, name="pykorn-history", daemon=True)

    def start(self, loop_thread: int) -> None:
        self.activity = LoopActivity(loop_thread)
        self._thread.start()

    def stopping(self) -> None:
        """The core is stopping: write what is held at full speed from now on."""
        self._stopping.set()
        self.buffer.wake()

    def stop(self, seconds: float) -> None:
        """Write what is held in up to `seconds`, then close the database; what is left is said."""
        self._stopping.set()
        self._stop.set()
        self.buffer.wake()
        if self._thread.is_alive():
            self._thread.join(seconds)
        if len(self.buffer):
            log.warning("history records not written at the stop", left=len(self.buffer))
        if self._thread.is_alive():  # within a write: it ends after it, and closes the database then
            self._abandoned.set()
        else:
            self.store.close()

    # The thread ------------------------------------------------------------------------------
    def _run(self) -> None:
        try:
            self._write_all()
        finally:
            if self._abandoned.is_set():
                self.store.close()

    def _write_all(self) -> None:
        if not self._migrate():
            return
        pause = 0.5
        pruned_at = 0.0
        while not (self._stop.is_set() and not len(self.buffer)) and not self._abandoned.is_set():
            self.buffer.wait(0.5)
            most = self.due() if len(self.buffer) else 0
            batch = self.buffer.take(most) if most else []
            if batch:
                try:
                    self._write(batch)
                except Exception as exc:  # the database refused or did not answer: held, tried again
                    self.failures += 1
                    if self.healthy:
                        log.warning("history database write failed; records held", error=repr(exc)[:300])
                    self.healthy = False
                    if self._stop.wait(pause):
                        return  # stopping: what is held is said at the stop
                    pause = min(MAX_PAUSE, pause * 2)
                    continue
                if not self.healthy:
                    log.info("history database writes resumed", held=len(self.buffer))
                self.healthy, pause = True, 0.5
            if self.retention > 0 and time.monotonic() - pruned_at > PRUNE_EVERY:
                pruned_at = time.monotonic()
                self._prune()

    def _migrate(self) -> bool:
        """The schema first: a database down at the start is waited for. False: stopped meanwhile."""
        pause = 0.5
        while not self.ready:
            try:
                self.store.migrate()
                self.ready = True
                self.migrated.set()
            except Exception as exc:
                self.healthy = False
                log.warning("history database not reachable; records held", error=repr(exc)[:300])
                if self._stop.wait(pause):
                    return False
                pause = min(MAX_PAUSE, pause * 2)
        return True

    def due(self) -> int:
        """How many records to write now: BATCH when stopping, when the oldest record has waited
        `delay` or the buffer is half full; while the loop is idle, a batch that doubles from
        IDLE_BATCH while it stays so (looking may take the activity's window); else none."""
        buffer = self.buffer
        if self._stopping.is_set() or buffer.waited() >= self.delay or len(buffer) * 2 >= buffer.limit:
            return BATCH
        if self.activity is not None and self.activity.busy(self._stopping):
            self._idle_batch = IDLE_BATCH
            return BATCH if self._stopping.is_set() else 0
        most, self._idle_batch = self._idle_batch, min(IDLE_MOST, self._idle_batch * 2)
        return BATCH if self._stopping.is_set() else most

    def _write(self, batch: list[Record]) -> None:
        """One batch, one transaction; records the database refuses for what they hold, one by one.
        Any other failure is the database's: raised, the batch held."""
        rows = prepared(batch, self.store.last_config, self._unwritable)
        try:
            self.store.write(rows)
        except (DataError, IntegrityError) as exc:  # a record the database will never take
            log.warning("history batch refused; written one by one", error=repr(exc)[:300])
            refused = self._write_each(rows)
        else:
            refused = 0
        self.buffer.done(len(batch))
        self.buffer.refused(refused)
        self.written += len(rows) - refused
        self._counted.clear()

    def _write_each(self, rows: list[Record]) -> int:
        """Each row on its own; how many the database refused (dropped: trying them again would stop
        every write after them)."""
        refused = 0
        for row in rows:
            try:
                self.store.write([row])
            except (DataError, IntegrityError) as exc:
                refused += 1
                log.warning("history record refused by the database; dropped", kind=row[0],
                            error=repr(exc)[:300])  # fmt: skip
        return refused

    def _unwritable(self, record: Record, exc: Exception) -> None:
        """A record no row could be made of: dropped, counted, said (a fault of pykorn's); once, however
        often its batch is tried again after a database failure."""
        if id(record) in self._counted:
            return
        self._counted[id(record)] = record
        self.unwritable += 1
        self.buffer.refused(1)
        log.error("history record could not be made into a row; dropped", kind=record[0],
                  error=repr(exc)[:300])  # fmt: skip

    def _prune(self) -> None:
        try:
            gone = self.store.prune(self.clock() - self.retention)
        except Exception as exc:
            log.warning("history pruning failed", error=repr(exc)[:300])
            return
        if gone:
            log.info("history pruned", records=gone, retention_days=round(self.retention / 86400, 2))
