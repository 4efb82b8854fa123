"""`pykorn history`'s flags: where to read (the core's REST API, or --db the database itself) and
its five readings (apps, app, queue, usage, config); what they do is pykorn_cli.history_command."""

from __future__ import annotations

import argparse
from pathlib import Path
from typing import Any

from pykorn_cli import arg_types


def add_history_parser(commands: Any) -> list[argparse.ArgumentParser]:
    """`history` under `commands` (argparse's subparsers); its leaf parsers."""
    history = commands.add_parser(
        "history", help="what ran: applications, allocations and usage from a core's history database"
    )
    history.add_argument(
        "--core-rest",
        default=None,
        help="HOST:PORT or URL of the core's REST API (default http://127.0.0.1:9080)",
    )
    history.set_defaults(core=None)
    history.add_argument("--token-file", type=Path, default=None, help="file holding the REST bearer token")
    history.add_argument(
        "--ca-cert", type=Path, default=None, help="CA of the core's REST certificate (https)"
    )
    history.add_argument("--json", action="store_true", help="the API's JSON instead of a table")
    history.add_argument(
        "--db",
        default="",
        help="read the history database itself (sqlite:///... or postgresql://...), no core",
    )
    history_commands = history.add_subparsers(dest="history_command", required=True)
    apps = history_commands.add_parser("apps", help="applications, newest first")
    for flag in ("--partition", "--queue", "--user", "--state"):
        apps.add_argument(flag, default="")
    apps.add_argument("--limit", type=arg_types.positive_int, default=50)
    apps.add_argument("--offset", type=int, default=0)
    one = history_commands.add_parser("app", help="one application, its allocations and events")
    one.add_argument("application")
    one.add_argument("--partition", default="default")
    queue = history_commands.add_parser("queue", help="a queue's sampled usage")
    queue.add_argument("queue")
    queue.add_argument("--partition", default="default")
    usage = history_commands.add_parser("usage", help="resource-seconds per user or queue")
    usage.add_argument("--by", choices=["user", "queue"], default="user")
    config = history_commands.add_parser("config", help="configurations put in force: who, when, the diff")
    config.add_argument("--rm", default="", help="one resource manager's (its rmID)")
    config.add_argument("--limit", type=arg_types.positive_int, default=20)
    for sub in (apps, queue, usage, config):
        sub.add_argument(
            "--from", dest="since", default=None, help="Unix seconds or RFC 3339 (2026-11-28T00:00:00Z)"
        )
        sub.add_argument("--to", dest="until", default=None, help="Unix seconds or RFC 3339")
    return [apps, one, queue, usage, config]
