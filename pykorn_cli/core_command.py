"""`pykorn core`: the daemon, from its flags; each way it cannot start said in one line."""

from __future__ import annotations

import argparse
import asyncio
import logging
from collections.abc import Callable, Mapping

from core.server.rest_connections import ConnectionBounds
from pykorn_cli.errors import UNREACHABLE, USAGE, CliError
from pykorn_cli.gc_tuning import tune_garbage_collector
from pykorn_cli.options import json_flag
from rmclient.logging_setup import configure_logging, level_number, set_live_levels


def run_core_command(args: argparse.Namespace) -> int:
    from core.config import ConfigError
    from core.config.input_limits import Limits
    from core.server.daemon import CoreOptions, ListenError, run_core
    from core.server.tls import SecurityConfigError

    # Checked before logging is set up: a refusal here is one line on stderr, nothing else.
    if args.config is not None and not args.config.is_file():
        raise CliError(f"--config {args.config}: no such file")
    for flag, path in (("--port-file", args.port_file), ("--rest-port-file", args.rest_port_file)):
        if path is not None and not path.parent.is_dir():
            raise CliError(f"{flag} {path}: no directory {path.parent} to write it in")
        if path is not None and path.is_dir():
            raise CliError(f"{flag} {path} is a directory: give the file to write the port in")
    if args.rest_max_event_streams is None:
        # Half the cap at most (none with a cap of 1: every connection is kept for short requests).
        args.rest_max_event_streams = min(ConnectionBounds.max_event_streams, args.rest_max_connections // 2)
    if args.rest_max_event_streams >= args.rest_max_connections:
        raise CliError(
            f"--rest-max-event-streams ({args.rest_max_event_streams}) must be below "
            f"--rest-max-connections ({args.rest_max_connections}): short requests need room"
        )
    try:
        limits = Limits.from_overrides(args.limit)
    except ValueError as exc:
        raise CliError(f"--limit: {exc}") from None
    # Live levels: an RM's extraConfig may set log.level and log.core.*.level while running.
    configure_logging(args.log_level, json_flag(args.log_format), live=True)
    options = CoreOptions(
        listen=args.listen,
        config_path=args.config,
        port_file=args.port_file,
        rest_listen=args.rest_listen,
        rm_grace_period=args.rm_grace_period,
        event_log_size=args.event_log_size,
        history_url=args.history,
        history_retention=args.history_retention,
        rest_port_file=args.rest_port_file,
        tls_cert=args.tls_cert,
        tls_key=args.tls_key,
        tls_client_ca=args.tls_client_ca,
        rest_tls_cert=args.rest_tls_cert,
        rest_tls_key=args.rest_tls_key,
        rest_token_file=args.rest_token_file,
        limits=limits,
        log_levels=_live_levels(args.log_level),
        rest_bounds=ConnectionBounds(
            args.rest_header_timeout,
            args.rest_idle_timeout,
            args.rest_max_connections,
            args.rest_max_event_streams,
        ),
    )
    tune_garbage_collector()
    try:
        asyncio.run(run_core(options))
    except ConfigError as exc:
        count = len(exc.problems)
        raise CliError(
            f"--config {args.config} is invalid ({count} problem{'s' if count != 1 else ''}; `pykorn config "
            f"validate {args.config}` lists them): {exc.problems[0] if exc.problems else exc}"
        ) from None
    except SecurityConfigError as exc:
        raise CliError(str(exc)) from None
    except UnicodeDecodeError as exc:  # --config
        raise CliError(f"--config {args.config}: not UTF-8 text (byte {exc.start})") from None
    except ListenError as exc:
        raise CliError(str(exc), UNREACHABLE) from None
    except OSError as exc:  # a file it was given (--config, --port-file, ...) it cannot read or write
        where = f"{exc.filename}: " if exc.filename else ""
        raise CliError(f"{where}{exc.strerror or exc}", USAGE) from None
    return 0


def _live_levels(flag_level: str) -> Callable[[int | None, Mapping[str, int]], None]:
    """The core's log levels while running: an RM's default (else --log-level) and by logger prefix."""
    start = level_number(flag_level) or logging.INFO

    def apply(default: int | None, by_prefix: Mapping[str, int]) -> None:
        set_live_levels(default if default is not None else start, by_prefix)

    return apply
