"""Files a person names on the command line, read with a one-line refusal when they cannot be."""

from __future__ import annotations

from pathlib import Path

from pykorn_cli.errors import CliError


def read_text(path: Path) -> str:
    """The file's text; a CliError (usage: the argument names something unreadable) otherwise."""
    try:
        return path.read_text()
    except OSError as exc:
        raise CliError(f"cannot read {path}: {exc.strerror or exc}") from None
    except UnicodeDecodeError as exc:
        raise CliError(f"cannot read {path}: not UTF-8 text (byte {exc.start})") from None
