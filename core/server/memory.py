"""Giving memory back to the system when load leaves: an RM's state dropped (it left, or registered
again), a large configuration refused, a large request handled.

After such a drop the core's resident size stays near its peak for two reasons, both measured in
docs/reliability.md:

- the collector runs its oldest generation rarely (`tune_garbage_collector`), so cycles among the
  dropped applications, asks and allocations wait for it;
- freed small objects leave the allocator's arenas and glibc's heap partly used, and glibc keeps
  free pages at the top of its heap unless asked to return them.

A full collection and `malloc_trim(0)` address both. The collection walks what the other RMs hold
(about 100 ms with 100,000 allocations live), and every RM waits meanwhile: `MemoryReleaser` runs it
a moment after it is asked for and at most once every MIN_INTERVAL seconds, however often it is
asked (a client sending refused configurations in a loop gets one pause every two seconds at most).
"""

from __future__ import annotations

import asyncio
import ctypes
import ctypes.util
import gc
import resource
import time
from collections.abc import Callable
from pathlib import Path

import structlog

log = structlog.get_logger("pykorn.memory")

_STATM = Path("/proc/self/statm")
_PAGE = resource.getpagesize()


def resident_bytes() -> int | None:
    """The process's resident set now (Linux), or None where /proc does not say."""
    try:
        return int(_STATM.read_text().split()[1]) * _PAGE
    except (OSError, IndexError, ValueError):
        return None


def _libc_trim() -> Callable[[], None] | None:
    """glibc's malloc_trim(0), or None on a C library without it (musl, macOS)."""
    name = ctypes.util.find_library("c")
    if name is None:
        return None
    try:
        trim = ctypes.CDLL(name).malloc_trim
    except (OSError, AttributeError):
        return None
    trim.argtypes = [ctypes.c_size_t]
    trim.restype = ctypes.c_int

    def trim_all() -> None:
        trim(0)  # 0: keep no padding at the top of the heap

    return trim_all


_TRIM = _libc_trim()


def release_memory(reason: str) -> None:
    """Collect every generation, then hand free heap pages back to the system, and log what it gave."""
    before = resident_bytes()
    started = time.perf_counter()
    unreachable = gc.collect()
    if _TRIM is not None:
        _TRIM()
    after = resident_bytes()
    log.info(
        "memory released",
        reason=reason,
        unreachable=unreachable,
        trimmed=_TRIM is not None,
        rss_before_mb=None if before is None else round(before / 2**20, 1),
        rss_after_mb=None if after is None else round(after / 2**20, 1),
        seconds=round(time.perf_counter() - started, 3),
    )


RELEASE_DELAY = 1.0  # seconds after the first ask: what was dropped has gone by then
MIN_INTERVAL = 2.0  # seconds between two releases at least


class MemoryReleaser:
    """release_memory, coalesced: one run for every ask made before it, none within MIN_INTERVAL of
    the last. `request` must be called on the loop's thread (call_soon_threadsafe from others)."""

    def __init__(self, loop: asyncio.AbstractEventLoop) -> None:
        self._loop = loop
        self._reasons: list[str] = []
        self._handle: asyncio.TimerHandle | None = None
        self._last = -MIN_INTERVAL

    def request(self, reason: str) -> None:
        if reason not in self._reasons:
            self._reasons.append(reason)
        if self._handle is None:
            wait = max(RELEASE_DELAY, self._last + MIN_INTERVAL - self._loop.time())
            self._handle = self._loop.call_later(wait, self._run)

    def _run(self) -> None:
        self._handle = None
        self._last = self._loop.time()
        reasons, self._reasons = self._reasons, []
        release_memory("; ".join(reasons))
