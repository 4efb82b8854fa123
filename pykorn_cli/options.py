"""What several `pykorn` commands read from their arguments the same way."""

from __future__ import annotations

import argparse
from typing import TYPE_CHECKING

from pykorn_cli.errors import CliError

if TYPE_CHECKING:
    from rmclient.tls import ClientTLS


def client_tls(args: argparse.Namespace) -> ClientTLS | None:
    from rmclient.tls import client_tls as make

    try:
        return make(args.core_ca, args.core_cert, args.core_key)
    except ValueError as exc:
        raise CliError(str(exc)) from None


def json_flag(value: str | None) -> bool | None:
    return None if value is None else value == "json"
