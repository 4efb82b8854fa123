"""List + watch informers: a task per resource kind feeds (event, object) pairs to the shim's loop.

After the initial list a watch runs from its resourceVersion. When the server ends a watch (its
timeout), the informer watches again from the last version it saw, as client-go's reflector does;
only when the API answers 410 Gone (the version is too old) or the watch fails does it list again and
report what changed since, as ADDED/MODIFIED/DELETED, so the shim never misses an object.
"""

from __future__ import annotations

import asyncio
from collections.abc import Awaitable, Callable
from typing import Any

import aiohttp
import structlog

from shim_k8s.api.kube_http import ApiError, KubeHTTP
from shim_k8s.api.objects import WatchEvent, key_of

log = structlog.get_logger("pykorn.k8s.informer")

Deliver = Callable[[str, str, dict[str, Any]], None]  # (kind, event type, object)
WATCH_SECONDS = 300  # how long the server keeps one watch open before the informer opens the next
RETRY_SECONDS = 1.0


class Informer:
    def __init__(
        self,
        kind: str,
        path: str,
        http: KubeHTTP,
        deliver: Deliver,
        watch_seconds: int = WATCH_SECONDS,
        room: Callable[[], Awaitable[object] | None] | None = None,
    ) -> None:
        """`room`: asked after each event handed on; what it returns, when not None, is awaited until its
        consumer has room for more (None: room now, and no coroutine made for every event): while it
        waits the watch is not read, and the API server's stream waits (or ends it, a watcher too
        slow, and the informer lists again)."""
        self.kind = kind
        self.path = path
        self.http = http
        self.deliver = deliver
        self.room = room
        self.watch_seconds = watch_seconds
        self.known: dict[str, dict[str, Any]] = {}
        self.relists = 0  # lists after the first, for the tests and the logs
        self._rv = ""
        self._task: asyncio.Task[None] | None = None

    def start(self, items: list[dict[str, Any]], resource_version: str) -> None:
        self.known = {key_of(o): o for o in items}
        self._rv = resource_version
        self._task = asyncio.create_task(self._run(), name=f"informer-{self.kind}")

    def stop(self) -> None:
        if self._task is not None:
            self._task.cancel()

    async def _relist(self) -> None:
        items, self._rv = await self.http.list(self.path)
        self.relists += 1
        current = {key_of(o): o for o in items if isinstance(o, dict)}
        known, self.known = self.known, current
        for key, obj in current.items():
            if known.get(key) != obj:
                self.deliver(self.kind, WatchEvent.MODIFIED if key in known else WatchEvent.ADDED, obj)
                if (wait := self._room()) is not None:
                    await wait
        for key, obj in known.items():
            if key not in current:
                self.deliver(self.kind, WatchEvent.DELETED, obj)
                if (wait := self._room()) is not None:
                    await wait

    def _room(self) -> Awaitable[object] | None:
        """What to await before the next event (None: room now, and no coroutine made per event)."""
        return self.room() if self.room is not None else None

    async def _watch(self) -> None:
        async for event in self.http.watch(self.path, self._rv, self.watch_seconds):
            kind, obj = event.get("type", "") if isinstance(event, dict) else "", _object(event)
            if obj is None:  # not an object at all: nothing to hand on, nor to name in an event
                log.warning(
                    "watch event without an object skipped", kind=self.kind, received=repr(event)[:200]
                )
                continue
            meta = obj.get("metadata")
            rv = meta.get("resourceVersion") if isinstance(meta, dict) else None
            if kind == WatchEvent.BOOKMARK:
                self._rv = rv or self._rv
                continue
            if kind == WatchEvent.DELETED:
                self.known.pop(key_of(obj), None)
            else:
                self.known[key_of(obj)] = obj
            self._rv = rv or self._rv
            self.deliver(self.kind, kind, obj)
            if (wait := self._room()) is not None:
                await wait

    async def _run(self) -> None:
        while True:
            try:
                await self._watch()  # ended by the server: watch again from where it stopped
            except ApiError as exc:
                if exc.status == 410:
                    log.info("watch expired, listing again", kind=self.kind)
                else:
                    log.warning("watch failed, listing again", kind=self.kind, status=exc.status)
                    await asyncio.sleep(RETRY_SECONDS)
                await self._relist_until_done()
            except (aiohttp.ClientError, TimeoutError, ValueError) as exc:
                log.warning("watch broke, listing again", kind=self.kind, error=repr(exc))
                await asyncio.sleep(RETRY_SECONDS)
                await self._relist_until_done()
            except Exception as exc:  # anything else: this kind must not stop being followed
                log.error("watch failed unexpectedly, listing again", kind=self.kind, exc_info=exc)
                await asyncio.sleep(RETRY_SECONDS)
                await self._relist_until_done()

    async def _relist_until_done(self) -> None:
        while True:
            try:
                await self._relist()
                return
            except Exception as exc:  # the API, the transport, or an odd answer: listed again
                log.warning("list failed", kind=self.kind, error=repr(exc))
                await asyncio.sleep(RETRY_SECONDS)


def _object(event: object) -> dict[str, Any] | None:
    obj = event.get("object") if isinstance(event, dict) else None
    return obj if isinstance(obj, dict) else None
