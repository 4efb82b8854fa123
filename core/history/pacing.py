"""When the history's writer thread writes: while the scheduler's loop is busy, it waits.

The writer holds the interpreter's lock while it turns records into rows and hands them to the
database driver; on a busy core that is time taken from scheduling. So it writes while the loop's
thread is mostly idle (its CPU time over a short window, read from the kernel's clock of that
thread), and whatever the loop does once the oldest record held has waited `delay` seconds or the
buffer is half full: under load that never lets up the history still keeps up, `delay` behind.
"""

from __future__ import annotations

import threading
import time

import structlog

log = structlog.get_logger("pykorn.history")


class LoopActivity:
    """How busy a thread (the event loop's) is, from its CPU clock."""

    def __init__(
        self, thread_id: int, window: float = 0.01, longest: float = 0.5, busy_above: float = 0.3
    ) -> None:
        # Seconds a look lasts: `window` after an idle one, doubling up to `longest` while the loop
        # stays busy. Each look ends with the writer taking the interpreter's lock from the loop for
        # a moment, and on a host short of CPUs each such moment can cost the loop a time slice.
        self.shortest, self.longest = window, longest
        self.window = window
        self.busy_above = busy_above  # the share of one CPU above which the loop counts as busy
        self._clock: int | None = None
        try:
            self._clock = time.pthread_getcpuclockid(thread_id)
        except (AttributeError, OSError) as exc:  # no per-thread clock: the loop always counts as idle
            log.warning("history writer cannot see the loop's CPU time; it writes at once", error=repr(exc))

    def busy(self, stop: threading.Event) -> bool:
        """Whether the loop's thread used more than `busy_above` of a CPU over the next `window`
        seconds (the look waits that long, or until `stop` is set). The look is a fresh one, with
        the writer off the interpreter's lock: over a stretch while it wrote, the loop, kept off the
        lock, would look idler than it is."""
        if self._clock is None:
            return False
        try:
            cpu, wall = time.clock_gettime(self._clock), time.monotonic()
            if stop.wait(self.window):
                return False
            used = time.clock_gettime(self._clock) - cpu
        except OSError:  # the thread is gone (the core is stopping)
            return False
        busy = used > self.busy_above * (time.monotonic() - wall)
        self.window = min(self.longest, self.window * 2) if busy else self.shortest
        return busy
