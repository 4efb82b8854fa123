"""How a `pykorn` command ends on a mistake: one line on stderr that names the problem and what to do,
and an exit status that says which kind of mistake it was (docs/operations.md, Exit statuses).

A traceback is for a bug in pykorn, not for a port in use or a core that is down: commands raise
`CliError` for what a user can fix, and `guarded` turns anything else into one line too, with the
traceback kept for `--debug`.
"""

from __future__ import annotations

import os
import sys
import traceback
from collections.abc import Callable
from typing import TextIO

# Exit statuses, the same for every subcommand.
FAILED = 1  # the command ran and its answer is no: an invalid config, a refusal, the cluster's cause
USAGE = 2  # the arguments: a flag's value, a file that cannot be read (argparse uses 2 as well)
UNREACHABLE = 3  # a peer that does not answer or an address that cannot be listened on
INTERNAL = 70  # a bug in pykorn (EX_SOFTWARE): the one case a traceback helps, shown with --debug
INTERRUPTED = 130  # Ctrl-C, as a shell reports SIGINT
BROKEN_PIPE = 141  # the reader of stdout went away (`pykorn status | head`), as a shell reports SIGPIPE


class CliError(Exception):
    """A mistake the user can fix, said in one line (`message` names the problem and the fix)."""

    def __init__(self, message: str, status: int = USAGE) -> None:
        super().__init__(message)
        self.message = message
        self.status = status


def guarded(command: str, debug: bool, run: Callable[[], int], err: TextIO | None = None) -> int:
    """`run()`'s exit status; any way it fails becomes one line on `err` and a status of its kind."""
    stream = err if err is not None else sys.stderr
    try:
        status = run()
        sys.stdout.flush()  # here, not at exit: a reader gone is then a BrokenPipeError caught below
        return status
    except CliError as exc:
        stream.write(f"pykorn {command}: {exc.message}\n")
        return exc.status
    except KeyboardInterrupt:
        stream.write(f"pykorn {command}: interrupted\n")
        return INTERRUPTED
    except BrokenPipeError:
        _silence_stdout()
        return BROKEN_PIPE
    except Exception as exc:
        if debug:
            traceback.print_exc(file=stream)
        else:
            stream.write(
                f"pykorn {command}: unexpected error: {type(exc).__name__}: {exc}; this is a bug in pykorn: "
                "run again with --debug for the traceback and report it\n"
            )
        return INTERNAL


def _silence_stdout() -> None:
    """Stdout's reader is gone: point it at /dev/null so that flushing it at exit raises nothing more
    (Python would otherwise print an "Exception ignored" line about the broken pipe)."""
    try:
        devnull = os.open(os.devnull, os.O_WRONLY)
        os.dup2(devnull, sys.stdout.fileno())
        os.close(devnull)
    except (OSError, ValueError):  # stdout is not a file (a test's StringIO): nothing to flush
        pass
