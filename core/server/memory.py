"""Giving memory back to the system once no resource manager is left.

After the last RM's state is dropped the core holds almost nothing of its own, yet its resident size
stays near its peak for two reasons, both measured in docs/reliability.md:

- the collector runs its oldest generation rarely (`tune_garbage_collector`), so cycles among the
  dropped applications, asks and allocations wait for it;
- freed small objects leave the allocator's arenas and glibc's heap partly used, and glibc keeps
  free pages at the top of its heap unless asked to return them.

A full collection and `malloc_trim(0)` address both. The moment is chosen because no RM waits on the
core then, so the pause (tens of milliseconds for a large heap) costs nobody a decision.
"""

from __future__ import annotations

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
