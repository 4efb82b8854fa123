"""What several `pykorn` commands read from their arguments the same way."""

from __future__ import annotations

import argparse
import sys
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


def status_url(args: argparse.Namespace) -> str:
    """The REST API `pykorn status` and `pykorn history` read: --core-rest, HOST:PORT meaning http://HOST:PORT."""
    address = args.core_rest
    if args.core is not None:
        if address is not None:
            raise CliError("--core is the old name of --core-rest: give --core-rest alone")
        sys.stderr.write(
            "pykorn status: --core is renamed --core-rest here (elsewhere --core is the gRPC address); "
            f"taken as --core-rest {args.core}\n"
        )
        address = args.core
    address = address or "http://127.0.0.1:9080"
    url = address if "://" in address else f"http://{address}"
    scheme, _, rest = url.partition("://")
    if scheme not in ("http", "https") or not rest.strip("/"):
        raise CliError(
            f"--core-rest {address}: give HOST:PORT, or a URL http://HOST:PORT or https://HOST:PORT"
        )
    return url
