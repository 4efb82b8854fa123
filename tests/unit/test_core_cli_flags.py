"""`pykorn core`'s REST bounds: event streams keep to a share of the connections, never all of them."""

from __future__ import annotations

import pytest

from pykorn_cli.main import main


def test_event_streams_may_not_take_every_connection(capsys: pytest.CaptureFixture[str]) -> None:
    assert main(["core", "--rest-max-connections", "10", "--rest-max-event-streams", "10"]) == 2
    assert "must be below --rest-max-connections (10): short requests need room" in capsys.readouterr().err
