"""Warnings about what RMs send are summarised per kind of reason and rate limited per RM."""

from __future__ import annotations

import structlog
from structlog.testing import capture_logs
from structlog.typing import FilteringBoundLogger

from core.log_digest import BURST, SAMPLES, RejectionDigest, WarningLimiter


class Clock:
    def __init__(self) -> None:
        self.now = 0.0

    def __call__(self) -> float:
        return self.now


def _logger() -> FilteringBoundLogger:
    logger: FilteringBoundLogger = structlog.get_logger("test")
    return logger


def test_rejections_of_one_kind_are_one_line_with_a_count_and_samples() -> None:
    digest = RejectionDigest()
    for i in range(10_000):
        digest.add((f"app-{i}", f"ask-{i}"), f"application app-{i} is not known", "allocations")
    for i in range(3):
        digest.add((f"app-{i}",), "queue root.x does not exist", "applications")
    with capture_logs() as lines:
        digest.log(WarningLimiter(clock=Clock()), _logger(), "rm-1", stream="allocation")
    assert [(line["event"], line["count"], line["reason"]) for line in lines] == [
        ("allocations rejected", 10_000, "application <id> is not known"),
        ("applications rejected", 3, "queue root.x does not exist"),
    ]
    assert lines[0]["samples"] == [f"app-{i}/ask-{i}" for i in range(SAMPLES)]
    assert lines[0]["rmID"] == "rm-1" and lines[0]["stream"] == "allocation"
    # Logged once: the digest is empty for the next message.
    with capture_logs() as again:
        digest.log(WarningLimiter(clock=Clock()), _logger(), "rm-1")
    assert again == []


def test_warnings_past_the_burst_are_counted_and_reported_with_the_next_line() -> None:
    clock = Clock()
    limiter = WarningLimiter(rate=10.0, burst=BURST, clock=clock)
    with capture_logs() as lines:
        for i in range(BURST + 25):
            limiter.warn(_logger(), "request refused", "noisy", n=i)
        limiter.warn(_logger(), "request refused", "quiet")  # another RM has its own bucket
    assert len(lines) == BURST + 1
    assert lines[-1]["rmID"] == "quiet" and "suppressedBefore" not in lines[-1]
    clock.now = 0.1  # one line's worth of tokens back
    with capture_logs() as later:
        limiter.warn(_logger(), "request refused", "noisy")
        limiter.warn(_logger(), "request refused", "noisy")
    assert len(later) == 1 and later[0]["suppressedBefore"] == 25


def test_a_forgotten_rm_starts_again_with_a_full_bucket() -> None:
    clock = Clock()
    limiter = WarningLimiter(rate=1.0, burst=2, clock=clock)
    with capture_logs() as lines:
        for _ in range(5):
            limiter.warn(_logger(), "x", "rm-1")
        limiter.forget("rm-1")
        for _ in range(5):
            limiter.warn(_logger(), "x", "rm-1")
    assert len(lines) == 4
    assert all("suppressedBefore" not in line for line in lines)


def test_a_one_letter_id_is_taken_out_where_it_stands_alone_not_from_every_word() -> None:
    digest = RejectionDigest()
    digest.add(("a", "b"), "ask b of application a: application a is already completed", "allocations")
    digest.add(("x", "b"), "ask b of application x: application x is already completed", "allocations")
    digest.add(("a.b",), "queue a.b is a leaf: app a is elsewhere", "applications")
    with capture_logs() as lines:
        digest.log(WarningLimiter(clock=Clock()), _logger(), "rm-1")
    assert [(line["reason"], line["count"]) for line in lines] == [
        ("ask <id> of application <id>: application <id> is already completed", 2),
        ("queue <id> is a leaf: app a is elsewhere", 1),
    ]
