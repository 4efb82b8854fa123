"""How every `pykorn` command ends: a user's mistake in one line with its status, a bug in one line
with --debug for the traceback, a reader gone quietly (pykorn_cli/errors.py)."""

from __future__ import annotations

import io

import pytest

from pykorn_cli.errors import BROKEN_PIPE, INTERNAL, INTERRUPTED, UNREACHABLE, CliError, guarded


def test_a_mistake_is_its_message_and_its_status() -> None:
    def mistaken() -> int:
        raise CliError("cannot connect to 127.0.0.1:1: Connection refused", UNREACHABLE)

    err = io.StringIO()
    assert guarded("config diff", False, mistaken, err) == UNREACHABLE
    assert err.getvalue() == "pykorn config diff: cannot connect to 127.0.0.1:1: Connection refused\n"


@pytest.mark.parametrize("debug", [False, True])
def test_a_bug_is_one_line_and_the_traceback_comes_with_debug(debug: bool) -> None:
    def broken() -> int:
        raise ZeroDivisionError("division by zero")

    err = io.StringIO()
    assert guarded("status", debug, broken, err) == INTERNAL
    if debug:
        assert (
            err.getvalue().startswith("Traceback") and "ZeroDivisionError: division by zero" in err.getvalue()
        )
    else:
        assert err.getvalue() == (
            "pykorn status: unexpected error: ZeroDivisionError: division by zero; this is a bug in pykorn: "
            "run again with --debug for the traceback and report it\n"
        )


def test_ctrl_c_and_a_closed_pipe_have_the_shell_statuses(monkeypatch: pytest.MonkeyPatch) -> None:
    silenced: list[bool] = []  # the test process's own stdout stays as it is
    monkeypatch.setattr("pykorn_cli.errors._silence_stdout", lambda: silenced.append(True))

    def interrupted() -> int:
        raise KeyboardInterrupt

    def piped() -> int:
        raise BrokenPipeError

    err = io.StringIO()
    assert guarded("status", False, interrupted, err) == INTERRUPTED == 130
    assert err.getvalue() == "pykorn status: interrupted\n"
    quiet = io.StringIO()
    assert guarded("status", False, piped, quiet) == BROKEN_PIPE == 141
    assert quiet.getvalue() == ""
    assert silenced == [True]  # so that Python's flush at exit finds no broken pipe to complain of
