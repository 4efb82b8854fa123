"""The history's REST reads (`pykorn core --history URL`), under /ws/v1/history/ beside YuniKorn's two
counts there (/ws/v1/history/apps and /containers, core.server.rest_cluster):

- GET /ws/v1/history/applications: applications filtered by `partition`, `queue`, `user`, `state`
  and submission time (`from`, `to`), newest first, paged (`limit`, at most 1,000; `offset`);
- GET /ws/v1/history/partition/{p}/application/{a}: one application, its allocations and its events;
- GET /ws/v1/history/partition/{p}/queue/{q}/usage: the queue's sampled usage over [`from`, `to`);
- GET /ws/v1/history/usage: resource-seconds per user (`by=user`, the default) or queue (`by=queue`)
  and instance type over [`from`, `to`);
- GET /ws/v1/history/configchanges: the configurations put in force (`rmID`, `from`, `to`, `limit`),
  newest first: when, who sent it, registered or updated, and the diff.

A partition is `default` or `[rmID]default` (then only that RM's). Times are Unix seconds, or RFC 3339
(`2026-11-28T10:00:00Z`). The database is read in a daemon thread (core.off_loop: a stop never waits
for a read); one that does not answer is a 503 with the reason, history off a 404 that says how to
turn it on.
"""

from __future__ import annotations

import time
from collections.abc import Callable, Coroutine, Mapping
from datetime import datetime
from typing import Any

from aiohttp import web

from core.history.store import HistoryStore
from core.off_loop import in_daemon_thread
from core.server.rest_errors import error_response

MAX_LIMIT = 1_000
DAY = 86400.0
Handler = Callable[[web.Request], Coroutine[Any, Any, web.Response]]


class BadQuery(ValueError):
    """A query parameter that cannot be used; the text says which and why."""


class HistoryAPI:
    def __init__(self, store: HistoryStore | None, clock: Callable[[], float] = time.time) -> None:
        self.store = store
        self.clock = clock

    def routes(self) -> list[web.RouteDef]:
        get = web.get
        return [
            get("/ws/v1/history/applications", self._handler(self.applications)),
            get("/ws/v1/history/partition/{p}/application/{a}", self._handler(self.application)),
            get("/ws/v1/history/partition/{p}/queue/{q}/usage", self._handler(self.queue_usage)),
            get("/ws/v1/history/usage", self._handler(self.usage)),
            get("/ws/v1/history/configchanges", self._handler(self.config_changes)),
        ]

    def _handler(self, read: Callable[[HistoryStore, Mapping[str, str], Mapping[str, str]], Any]) -> Handler:
        async def handler(request: web.Request) -> web.Response:
            store = self.store
            if store is None:
                off = "history is off: start the core with --history URL (docs/history.md)"
                return error_response(404, off)
            try:
                query, path = request.query, request.match_info
                body = await in_daemon_thread(lambda: read(store, query, path), name="pykorn-history-read")
            except BadQuery as exc:
                return error_response(400, str(exc))
            except LookupError as exc:
                return error_response(404, str(exc))
            except Exception as exc:  # the database did not answer
                why = f"the history database did not answer: {type(exc).__name__}: {exc}"
                return error_response(503, why[:500])
            return web.json_response(body)

        return handler

    def applications(self, store: HistoryStore, q: Mapping[str, str], _path: Mapping[str, str]) -> Any:
        limit = _int(q, "limit", 100, 1, MAX_LIMIT)
        offset = _int(q, "offset", 0, 0, 10**9)
        rm_id, partition = _partition(q.get("partition", ""))
        total, rows = store.applications(
            partition=partition, queue=q.get("queue", ""), user=q.get("user", ""),
            state=q.get("state", ""), since=_time(q, "from"), until=_time(q, "to"), limit=limit,
            offset=offset, rm_id=q.get("rmID", "") or rm_id,
        )  # fmt: skip
        return {"total": total, "limit": limit, "offset": offset, "applications": [_app(r) for r in rows]}

    def application(self, store: HistoryStore, _q: Mapping[str, str], path: Mapping[str, str]) -> Any:
        (rm_id, partition), app_id = _partition(path["p"]), path["a"]
        found = store.application(partition, app_id, rm_id)
        if found is None:
            raise LookupError(f"application {app_id} has no history in partition {partition}")
        body = _app(found)
        body["allocations"] = [_allocation(a) for a in found["allocations"]]
        body["events"] = [_event(e) for e in found["events"]]
        return body

    def queue_usage(self, store: HistoryStore, q: Mapping[str, str], path: Mapping[str, str]) -> Any:
        until = _or(_time(q, "to"), self.clock())
        since = _or(_time(q, "from"), until - DAY)
        (rm_id, partition), queue = _partition(path["p"]), path["q"]
        samples = store.queue_usage(partition, queue, since, until, rm_id)
        return {"partition": partition, "queueName": queue, "from": since, "to": until, "samples": [
            {"time": s["at"], "allocated": s["allocated"], "pending": s["pending"]} for s in samples
        ]}  # fmt: skip

    def usage(self, store: HistoryStore, q: Mapping[str, str], _path: Mapping[str, str]) -> Any:
        by = q.get("by", "user")
        if by not in ("user", "queue"):
            raise BadQuery(f"by={by!r}: user or queue")
        now = self.clock()
        until = _or(_time(q, "to"), now)
        since = _or(_time(q, "from"), until - DAY)
        return {"by": by, "from": since, "to": until, "usage": store.usage(by, since, until, now)}

    def config_changes(self, store: HistoryStore, q: Mapping[str, str], _path: Mapping[str, str]) -> Any:
        limit = _int(q, "limit", 100, 1, MAX_LIMIT)
        rows = store.config_changes(q.get("rmID", ""), _time(q, "from"), _time(q, "to"), limit)
        return {"changes": [
            {"rmID": r["rm_id"], "time": r["at"], "who": r["who"], "change": r["change"], "diff": r["diff"]}
            for r in rows
        ]}  # fmt: skip


def _or(given: float | None, default: float) -> float:
    """A time given (0 is one), else the default."""
    return default if given is None else given


def _partition(name: str) -> tuple[str, str]:
    """`default` or `[rmID]default`: (the RM, "" for any, and the partition's name)."""
    if name.startswith("[") and "]" in name:
        rm_id, _, partition = name[1:].partition("]")
        return rm_id, partition
    return "", name


def _int(query: Any, name: str, default: int, least: int, most: int) -> int:
    raw = query.get(name)
    if raw is None:
        return default
    if not raw.isdigit() or not least <= int(raw) <= most:
        raise BadQuery(f"{name}={raw!r}: a whole number from {least} to {most}")
    return int(raw)


def _time(query: Any, name: str) -> float | None:
    raw = query.get(name)
    if raw is None or raw == "":
        return None
    try:
        value = float(raw)
    except ValueError:
        pass
    else:
        if value != value or value in (float("inf"), float("-inf")):
            raise BadQuery(f"{name}={raw!r}: a finite time")
        return value
    try:
        return datetime.fromisoformat(raw.replace("Z", "+00:00")).timestamp()
    except ValueError:
        raise BadQuery(f"{name}={raw!r}: Unix seconds or an RFC 3339 time") from None


def _app(row: dict[str, Any]) -> dict[str, Any]:
    return {
        "rmID": row["rm_id"], "partition": row["partition"], "applicationID": row["app_id"],
        "queueName": row["queue"], "user": row["user"], "groups": row["groups"], "tags": row["tags"],
        "state": row["state"], "submittedTime": row["submitted"], "acceptedTime": row["accepted"],
        "runningTime": row["running"], "finishedTime": row["finished"], "reason": row["reason"],
    }  # fmt: skip


def _allocation(row: dict[str, Any]) -> dict[str, Any]:
    return {
        "allocationKey": row["allocation_key"], "nodeID": row["node"], "instanceType": row["instance_type"],
        "resource": row["resources"], "startTime": row["started"], "endTime": row["ended"],
        "termination": row["termination"], "preempted": row["termination"] == "PREEMPTED",
    }  # fmt: skip


def _event(row: dict[str, Any]) -> dict[str, Any]:
    return {
        "time": row["at"], "type": row["type"], "objectID": row["object_id"],
        "changeType": row["change_type"], "changeDetail": row["change_detail"], "message": row["message"],
        "referenceID": row["reference_id"], "resource": row["resource"],
    }  # fmt: skip
