"""Giving memory back once no RM is left: cycles are collected and the release is logged with sizes."""

from __future__ import annotations

import gc
import weakref

from structlog.testing import capture_logs

from core.server.memory import release_memory, resident_bytes


class _Node:
    def __init__(self) -> None:
        self.other: _Node | None = None


def test_release_collects_cycles_and_logs_the_resident_size() -> None:
    a, b = _Node(), _Node()
    a.other, b.other = b, a
    alive = weakref.ref(a)
    del a, b
    gc.disable()  # only the release may collect the cycle
    try:
        with capture_logs() as logs:
            release_memory("test")
    finally:
        gc.enable()
    assert alive() is None
    (entry,) = [e for e in logs if e["event"] == "memory released"]
    assert entry["reason"] == "test"
    assert entry["unreachable"] >= 2
    assert entry["rss_after_mb"] > 0


def test_resident_size_is_read_from_the_system() -> None:
    size = resident_bytes()
    assert size is not None and size > 10 * 2**20
