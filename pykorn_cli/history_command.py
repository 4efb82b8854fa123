"""`pykorn history`: what ran, from a core's history database (`pykorn core --history`), read through
its REST API (/ws/v1/history/..., docs/history.md). Plain tables, or the API's JSON with --json.

    pykorn history apps --queue root.ml --from 2026-11-21T00:00:00Z
    pykorn history app spark-42
    pykorn history queue root.ml --from 2026-11-28T00:00:00Z
    pykorn history usage --by user --from 2026-11-01T00:00:00Z
    pykorn history config --rm mycluster                    # who changed queues.yaml, when, the diff
    pykorn history --db sqlite:///out/history.db apps       # the database itself, no core needed
"""

from __future__ import annotations

import argparse
import json
import ssl
import urllib.error
import urllib.request
from datetime import UTC, datetime
from pathlib import Path
from typing import IO, Any
from urllib.parse import quote, urlencode

from core.quantity_text import resource_text
from pykorn_cli.errors import FAILED, UNREACHABLE, USAGE, CliError


def run_history(
    base: str, args: Any, out: IO[str], token_file: Path | None = None, ca_cert: Path | None = None
) -> int:
    """Through the core's REST API at `base`, or with --db straight from the database (no core)."""
    query, path = _query(args)
    body = _read_db(args.db, args.history_command, query, path) if args.db else _read_rest(
        base, _rest_path(args.history_command, query, path), token_file, ca_cert
    )  # fmt: skip
    if args.json:
        out.write(json.dumps(body, indent=2) + "\n")
    else:
        out.write(render(args.history_command, body))
    return 0


def _query(args: Any) -> tuple[dict[str, str], dict[str, str]]:
    """The reading's query parameters and path parts, as the REST API names them."""
    command = args.history_command
    query = {"from": getattr(args, "since", None) or "", "to": getattr(args, "until", None) or ""}
    path = {"p": getattr(args, "partition", "") or "default"}
    if command == "apps":
        query |= {"partition": args.partition, "queue": args.queue, "user": args.user, "state": args.state,
                  "limit": str(args.limit), "offset": str(args.offset)}  # fmt: skip
    elif command == "app":
        path["a"] = args.application
    elif command == "queue":
        path["q"] = args.queue
    elif command == "config":
        query |= {"rmID": args.rm, "limit": str(args.limit)}
    else:
        query["by"] = args.by
    return {k: v for k, v in query.items() if v}, path


def _rest_path(command: str, query: dict[str, str], path: dict[str, str]) -> str:
    partition = quote(path["p"], safe="")
    if command == "apps":
        return "/ws/v1/history/applications?" + urlencode(query)
    if command == "app":
        return f"/ws/v1/history/partition/{partition}/application/{quote(path['a'], safe='')}"
    if command == "queue":
        return f"/ws/v1/history/partition/{partition}/queue/{quote(path['q'], safe='')}/usage?" + urlencode(
            query
        )
    if command == "config":
        return "/ws/v1/history/configchanges?" + urlencode(query)
    return "/ws/v1/history/usage?" + urlencode(query)


def _read_rest(base: str, path: str, token_file: Path | None, ca_cert: Path | None) -> Any:
    headers = {"Authorization": f"Bearer {token_file.read_text().strip()}"} if token_file else {}
    context = ssl.create_default_context(cafile=str(ca_cert)) if ca_cert else None
    request = urllib.request.Request(base.rstrip("/") + path, headers=headers)
    try:
        with urllib.request.urlopen(request, timeout=30, context=context) as response:
            return json.load(response)
    except urllib.error.HTTPError as exc:
        try:
            message = json.load(exc).get("message", exc.reason)
        except (ValueError, AttributeError):
            message = exc.reason
        raise CliError(f"{base}{path}: {exc.code} {message}", FAILED) from None
    except (urllib.error.URLError, OSError) as exc:
        reason = getattr(exc, "reason", exc)
        raise CliError(f"cannot reach the core's REST API at {base}: {reason}", UNREACHABLE) from None


def _read_db(url: str, command: str, query: dict[str, str], path: dict[str, str]) -> Any:
    """The same reading as the REST API's, from the database itself (the core need not run)."""
    from core.history.store import HistoryStore
    from core.server.rest_history import BadQuery, HistoryAPI
    from pykorn_cli.arg_types import history_url

    try:
        store = HistoryStore(history_url(url))
    except (argparse.ArgumentTypeError, ValueError) as exc:
        raise CliError(f"--db: {exc}", USAGE) from None
    api = HistoryAPI(store)
    readings = {
        "apps": api.applications, "app": api.application, "queue": api.queue_usage,
        "config": api.config_changes,
    }  # fmt: skip
    read = readings.get(command, api.usage)
    try:
        return read(store, query, path)
    except (BadQuery, LookupError) as exc:
        raise CliError(str(exc), FAILED) from None
    except Exception as exc:  # the database: not there, not reachable, not a history database
        raise CliError(f"--db {store.described}: {type(exc).__name__}: {exc}"[:400], UNREACHABLE) from None
    finally:
        store.close()


def _when(seconds: float | None) -> str:
    if seconds is None:
        return "-"
    return datetime.fromtimestamp(seconds, UTC).strftime("%Y-%m-%d %H:%M:%S")


def render(command: str, body: dict[str, Any]) -> str:
    """The API's answer as a table (a pure function of the JSON, tested on its own)."""
    lines: list[str] = []
    if command == "apps":
        lines.append(
            f"{body['total']} applications (showing {len(body['applications'])} from {body['offset']})"
        )
        lines.append(
            f"{'APPLICATION':<32} {'QUEUE':<24} {'USER':<14} {'STATE':<10} {'SUBMITTED':<19} FINISHED"
        )
        for a in body["applications"]:
            lines.append(f"{a['applicationID']:<32} {a['queueName']:<24} {a['user']:<14} {a['state']:<10} "
                         f"{_when(a['submittedTime']):<19} {_when(a['finishedTime'])}")  # fmt: skip
    elif command == "app":
        who = f"({body['queueName']}, user {body['user']})"
        lines.append(f"{body['applicationID']} in {body['partition']} {who}: {body['state']}")
        why = f"; {body['reason']}" if body["reason"] else ""
        lines.append(f"submitted {_when(body['submittedTime'])}, running {_when(body['runningTime'])}, "
                     f"finished {_when(body['finishedTime'])}{why}")  # fmt: skip
        lines.append(f"{'ALLOCATION':<40} {'NODE':<20} {'START':<19} {'END':<19} HOW")
        for a in body["allocations"]:
            lines.append(f"{a['allocationKey']:<40} {a['nodeID']:<20} {_when(a['startTime']):<19} "
                         f"{_when(a['endTime']):<19} {a['termination'] or 'running'}")  # fmt: skip
        lines.append(f"{len(body['events'])} events")
        for e in body["events"]:
            lines.append(f"  {_when(e['time'])} {e['changeDetail']} {e['message']}")
    elif command == "queue":
        lines.append(f"{body['queueName']} in {body['partition']}: {len(body['samples'])} samples")
        for s in body["samples"]:
            lines.append(f"  {_when(s['time'])} allocated {resource_text(s['allocated'])} "
                         f"pending {resource_text(s['pending'])}")  # fmt: skip
    elif command == "config":
        lines.append(f"{len(body['changes'])} configuration changes, newest first")
        for c in body["changes"]:
            lines.append(f"{_when(c['time'])} {c['rmID']} {c['change'] or 'changed'} by {c['who']}")
            lines.extend(f"    {line}" for line in c["diff"].splitlines())
    else:
        by = body["by"]
        lines.append(
            f"resource-seconds by {by} and instance type, {_when(body['from'])} to {_when(body['to'])}"
        )
        for u in body["usage"]:
            used = ", ".join(f"{k} {v:,.0f}" for k, v in sorted(u["resourceSeconds"].items()))
            lines.append(f"  {u['partition']:<12} {u[by]:<24} {u['instanceType']:<16} {used}")
    return "\n".join(lines) + "\n"
