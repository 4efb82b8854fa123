"""Live log levels (the core's and the shim's `log.level` and `log.<subsystem>.level`): what each
logger name writes after a change, and calls below every level cost no processing."""

from __future__ import annotations

import json
import logging
from collections.abc import Iterator

import pytest
import structlog

from rmclient.logging_setup import LIVE, configure_logging, set_live_levels


@pytest.fixture
def live_logs() -> Iterator[None]:
    saved = structlog.get_config()
    try:
        yield
    finally:
        structlog.configure(**saved)
        set_live_levels(logging.INFO, {})


def _events(capsys: pytest.CaptureFixture[str]) -> list[tuple[str, str]]:
    lines = [json.loads(line) for line in capsys.readouterr().err.splitlines()]
    return [(line["event"], line["level"]) for line in lines]


def test_each_logger_name_writes_at_its_own_level(
    live_logs: None, capsys: pytest.CaptureFixture[str]
) -> None:
    configure_logging("info", json=True, live=True)
    set_live_levels(logging.ERROR, {"pykorn.k8s.informer": logging.DEBUG})
    informer, other = structlog.get_logger("pykorn.k8s.informer"), structlog.get_logger("pykorn.k8s")
    informer.debug("informer detail")
    other.debug("other detail")
    other.info("other info")
    other.error("other error")
    informer.log(logging.DEBUG, "informer by number")
    other.log(logging.WARNING, "other warning by number")
    assert _events(capsys) == [
        ("informer detail", "debug"), ("other error", "error"), ("informer by number", "debug"),
    ]  # fmt: skip


def test_a_level_lowered_at_run_time_takes_effect_on_loggers_already_used(
    live_logs: None, capsys: pytest.CaptureFixture[str]
) -> None:
    configure_logging("warning", json=True, live=True)
    log = structlog.get_logger("pykorn.core")
    log.info("before")
    set_live_levels(logging.DEBUG, {})
    log.debug("after")
    set_live_levels(logging.WARNING, {})
    log.info("silenced again")
    assert _events(capsys) == [("after", "debug")]


def test_calls_below_every_level_are_not_processed(
    live_logs: None, capsys: pytest.CaptureFixture[str]
) -> None:
    """The core and the shim make debug calls on every pod: with no logger at debug they must return
    before the processor chain (whose first step would only drop them)."""
    configure_logging("info", json=True, live=True)
    reached: list[str] = []

    def count(logger: object, method: str, event: structlog.types.EventDict) -> structlog.types.EventDict:
        reached.append(method)
        return event

    processors = structlog.get_config()["processors"]
    structlog.configure(processors=[count, *processors])
    log = structlog.get_logger("pykorn.core")
    log.debug("not wanted")
    log.info("wanted")
    assert reached == ["info"]
    set_live_levels(logging.INFO, {"pykorn.core.scheduler": logging.DEBUG})
    assert LIVE.floor == logging.DEBUG
    log.debug("processed, then dropped by name")
    assert reached == ["info", "debug"]
    assert _events(capsys) == [("wanted", "info")]
