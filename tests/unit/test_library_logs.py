"""What libraries log through the standard `logging` module comes out as our own log lines: one JSON
object per line, with the library's logger name and an exception's first line, never a traceback."""

from __future__ import annotations

import json
import logging
from collections.abc import Iterator

import pytest
import structlog

from rmclient.logging_setup import configure_logging


@pytest.fixture
def json_logs() -> Iterator[None]:
    """The daemons' configuration, made in the test itself (so that it writes to the stderr capsys
    captures during the test), and structlog's restored after."""
    saved = structlog.get_config()
    try:
        yield
    finally:
        structlog.configure(**saved)


def _lines(capsys: pytest.CaptureFixture[str]) -> list[dict[str, object]]:
    return [json.loads(line) for line in capsys.readouterr().err.splitlines()]


def test_a_library_error_with_a_traceback_is_one_line(
    json_logs: None, capsys: pytest.CaptureFixture[str]
) -> None:
    configure_logging("info", json=True)
    try:
        raise ValueError("the first line\nand a second")
    except ValueError:
        logging.getLogger("some.library").exception("failed on %s", "request 7")
    [event] = _lines(capsys)
    assert event["event"] == "failed on request 7"
    assert event["logger"] == "some.library"
    assert event["error"] == "ValueError: the first line"
    assert event["level"] == "error"


def test_garbage_sent_to_an_http_port_is_a_warning(
    json_logs: None, capsys: pytest.CaptureFixture[str]
) -> None:
    """A gRPC client pointed at the REST port: aiohttp logs the HTTP/2 preface it cannot parse."""
    configure_logging("info", json=True)
    from aiohttp.http_exceptions import BadHttpMessage

    try:
        raise BadHttpMessage("Pause on PRI/Upgrade")
    except BadHttpMessage:
        logging.getLogger("aiohttp.server").exception("Error handling request from %s", "127.0.0.1")
    [event] = _lines(capsys)
    assert event["level"] == "warning"
    assert event["logger"] == "aiohttp.server"
    assert str(event["error"]).startswith("BadHttpMessage: 400")


def test_library_chatter_below_warning_is_not_logged(
    json_logs: None, capsys: pytest.CaptureFixture[str]
) -> None:
    configure_logging("info", json=True)
    logging.getLogger("some.library").info("connected")
    logging.getLogger("some.library").warning("retrying %d", 2)
    assert [e["event"] for e in _lines(capsys)] == ["retrying 2"]


def test_configuring_twice_routes_each_record_once(
    json_logs: None, capsys: pytest.CaptureFixture[str]
) -> None:
    configure_logging("info", json=True)
    logging.getLogger("some.library").warning("once")
    assert len(_lines(capsys)) == 1
