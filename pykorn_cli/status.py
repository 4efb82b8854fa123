"""`pykorn status`: a terminal view of a running core, read from its REST state API.

The rendering is a pure function of the JSON the API returns, so it is tested on its own; fetching
uses the standard library only, so the command needs nothing the core does not already have.
"""

from __future__ import annotations

import http.client
import json
import ssl
import urllib.error
import urllib.request
from pathlib import Path
from typing import IO, Any
from urllib.parse import quote

from core.quantity_text import quantity_text, resource_text
from pykorn_cli.errors import FAILED, UNREACHABLE, USAGE

BAR_WIDTH = 20


def fetch_state(
    base: str, timeout: float = 10.0, token: str | None = None, context: ssl.SSLContext | None = None
) -> list[dict[str, Any]]:
    """Every partition with its queue tree, nodes and active applications.

    `token` is sent as a bearer token; `context` verifies an https core (default: the system's CAs).
    """
    headers = {"Authorization": f"Bearer {token}"} if token else {}

    def get(path: str) -> Any:
        request = urllib.request.Request(base.rstrip("/") + path, headers=headers)
        with urllib.request.urlopen(request, timeout=timeout, context=context) as response:
            return json.load(response)

    out = []
    for part in get("/ws/v1/partitions"):
        name = quote(f"[{part['clusterId']}]{part['name']}", safe="")
        try:
            out.append({
                "partition": part,
                "queues": get(f"/ws/v1/partition/{name}/queues"),
                "nodes": get(f"/ws/v1/partition/{name}/nodes"),
                "applications": get(f"/ws/v1/partition/{name}/applications/active"),
            })  # fmt: skip
        except urllib.error.HTTPError as exc:
            if exc.code != 404:
                raise
            # Removed between the listing and this read: show the others.
    return out


def _bar(used: int, limit: int | None) -> str:
    if not limit:
        return " " * (BAR_WIDTH + 7)
    filled = min(BAR_WIDTH, round(BAR_WIDTH * used / limit))
    return "[" + "#" * filled + "." * (BAR_WIDTH - filled) + f"] {min(999, 100 * used // limit):3d}%"


def render(state: list[dict[str, Any]], out: IO[str]) -> None:
    if not state:
        out.write("no partitions: no resource manager has registered\n")
        return
    for entry in state:
        part = entry["partition"]
        # Empty values are left out of the answers, as YuniKorn leaves them out.
        apps = (part.get("applications") or {}).get("total", 0)
        out.write(f"partition {part['name']} (rmID {part['clusterId']}): {part.get('totalNodes', 0)} nodes, "
                  f"{apps} applications\n\n")  # fmt: skip
        out.write("queues (usage of each resource type against guaranteed | max)\n")
        _queue_lines(entry["queues"], 0, out)
        out.write("\nnodes\n")
        for node in entry["nodes"]:
            state_word = "" if node["schedulable"] else "  (draining)"
            out.write(f"  {node['nodeID']:<20} allocated {resource_text(node.get('allocated'))} "
                      f"of {resource_text(node.get('capacity'))}{state_word}\n")  # fmt: skip
        pending = [
            (app["applicationID"], req)
            for app in entry["applications"]
            for req in app.get("requests", [])
        ]  # fmt: skip
        out.write(f"\npending asks ({len(pending)})\n")
        for app_id, req in pending:
            log = req.get("allocationLog", [])
            reason = log[0]["message"] if log else "not looked at yet"
            kind = _WAITING.get((req.get("pykorn") or {}).get("waiting", ""), "")
            out.write(
                f"  {app_id}/{req['allocationKey']} {resource_text(req.get('resource'))}: {kind}{reason}\n"
            )
        out.write("\n")


# How an ask waits (the core's si scheduling state), in the words a Kubernetes pod shows.
_WAITING = {"FAILED": "[Unschedulable: waits for a node] ", "SKIPPED": "[SchedulingSkipped: held] "}


def _queue_lines(queue: dict[str, Any], depth: int, out: IO[str]) -> None:
    """One line per resource type the queue uses or is limited in, the first with its name, what it
    has pending and its flags."""
    allocated = queue.get("allocatedResource", {})
    maxes, guarantees = queue.get("maxResource", {}), queue.get("guaranteedResource", {})
    kinds = sorted(set(allocated) | set(maxes) | set(guarantees)) or [""]
    name = "  " * depth + queue["queuename"].rsplit(".", 1)[-1]
    flags = " fence" if queue["isPriorityFence"] else ""
    tail = f"  pending {resource_text(queue.get('pendingResource'))}{flags}"
    for kind in kinds:
        used = allocated.get(kind, 0)
        shown = quantity_text(kind, used) if kind else ""
        bars = f"{_bar(used, guarantees.get(kind))} | {_bar(used, maxes.get(kind))}"
        out.write(f"  {name:<24} {kind:<8} {shown:>10} {bars}{tail}".rstrip() + "\n")
        name, tail = "", ""
    for child in queue.get("children", []):
        _queue_lines(child, depth + 1, out)


def show_status(
    base: str, out: IO[str], err: IO[str], token_file: Path | None = None, ca_cert: Path | None = None
) -> int:
    try:
        token = token_file.read_text().strip() if token_file is not None else None
    except (OSError, ValueError) as exc:
        err.write(f"pykorn status: cannot read the token file {token_file}: {exc}\n")
        return 2
    try:
        context = ssl.create_default_context(cafile=ca_cert) if ca_cert is not None else None
    except (OSError, ValueError) as exc:  # ssl.SSLError is an OSError
        err.write(f"pykorn status: cannot use the CA certificate {ca_cert}: {exc}\n")
        return 2
    try:
        state = fetch_state(base, token=token, context=context)
    except urllib.error.HTTPError as exc:
        hint = " (give the core's REST token with --token-file)" if exc.code == 401 else ""
        err.write(f"pykorn status: the core's REST API at {base} answered {exc.code} {exc.reason}{hint}\n")
        return FAILED
    except http.client.InvalidURL as exc:
        err.write(f"pykorn status: --core-rest {base}: {exc}\n")
        return USAGE
    except http.client.HTTPException as exc:  # an answer, but not HTTP/1.1: gRPC's HTTP/2, say
        err.write(
            f"pykorn status: {base} does not answer as the core's REST API ({type(exc).__name__}): is it the "
            "gRPC port? give the REST address with --core-rest (port 9080 by default)\n"
        )
        return UNREACHABLE
    except (json.JSONDecodeError, KeyError, TypeError, AttributeError) as exc:
        err.write(f"pykorn status: what {base} answered is not the core's REST API ({exc!r})\n")
        return UNREACHABLE
    except (urllib.error.URLError, OSError, ValueError) as exc:
        reason = exc.reason if isinstance(exc, urllib.error.URLError) else exc
        hint = ""
        if isinstance(reason, ssl.SSLError):
            hint = " (does the core serve its REST API over https, --rest-tls-cert? if not, give http://)"
            reason = reason.reason or reason
        err.write(f"pykorn status: cannot read the core's REST API at {base}: {reason}{hint}\n")
        return UNREACHABLE
    render(state, out)
    return 0
