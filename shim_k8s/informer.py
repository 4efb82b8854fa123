"""List + watch informers: a thread per resource kind feeds (event, object) pairs to the event loop.

After the initial list a watch runs from its resourceVersion; when the API answers 410 Gone (the
version is too old) or a watch ends (the resync period), the informer lists again and reports what
changed since, as ADDED/MODIFIED/DELETED, so the shim never misses an object.
"""

from __future__ import annotations

import asyncio
import threading
from collections.abc import Callable
from typing import Any

import structlog
from kubernetes import client, watch

from shim_k8s.kube import Kube

log = structlog.get_logger("pykorn.k8s.informer")

Obj = dict[str, Any]
Deliver = Callable[[str, str, Obj], None]  # (kind, event type, object)


def _key(obj: Obj) -> str:
    meta = obj.get("metadata") or {}
    return meta.get("uid") or f"{meta.get('namespace', '')}/{meta.get('name', '')}"


class Informer:
    def __init__(
        self,
        kind: str,
        list_func: Callable[..., Any],
        deliver: Deliver,
        loop: asyncio.AbstractEventLoop,
        resync_seconds: int = 300,
    ) -> None:
        self.kind = kind
        self.list_func = list_func
        self.deliver = deliver
        self.loop = loop
        self.resync_seconds = resync_seconds
        self.known: dict[str, Obj] = {}
        self._stop = threading.Event()
        self._thread = threading.Thread(target=self._run, name=f"informer-{kind}", daemon=True)
        self._watch: watch.Watch | None = None

    def start(self, items: list[Obj], resource_version: str) -> None:
        self.known = {_key(o): o for o in items}
        self._rv = resource_version
        self._thread.start()

    def stop(self) -> None:
        self._stop.set()
        if self._watch is not None:
            self._watch.stop()

    def _emit(self, event: str, obj: Obj) -> None:
        self.loop.call_soon_threadsafe(self.deliver, self.kind, event, obj)

    def _relist(self) -> None:
        items, self._rv = Kube.list_raw(self.list_func)
        current = {_key(o): o for o in items}
        for key, obj in current.items():
            if self.known.get(key) != obj:
                self._emit("MODIFIED" if key in self.known else "ADDED", obj)
        for key, obj in self.known.items():
            if key not in current:
                self._emit("DELETED", obj)
        self.known = current

    def _run(self) -> None:
        while not self._stop.is_set():
            try:
                # "object": keep the JSON as served; the shim reads dicts, not the client's models.
                self._watch = watch.Watch(return_type="object")
                for event in self._watch.stream(
                    self.list_func, resource_version=self._rv, timeout_seconds=self.resync_seconds
                ):
                    obj = event["raw_object"]
                    if event["type"] == "DELETED":
                        self.known.pop(_key(obj), None)
                    else:
                        self.known[_key(obj)] = obj
                    self._rv = (obj.get("metadata") or {}).get("resourceVersion", self._rv)
                    self._emit(event["type"], obj)
                    if self._stop.is_set():
                        return
                if not self._stop.is_set():
                    self._relist()  # the watch ended: resync
            except client.ApiException as exc:
                if self._stop.is_set():
                    return
                if exc.status == 410:
                    log.info("watch expired, listing again", kind=self.kind)
                else:
                    log.warning("watch failed, listing again", kind=self.kind, status=exc.status)
                    self._stop.wait(1.0)
                try:
                    self._relist()
                except Exception:
                    log.exception("list failed", kind=self.kind)
                    self._stop.wait(1.0)
            except Exception:
                if self._stop.is_set():
                    return
                log.exception("informer failed", kind=self.kind)
                self._stop.wait(1.0)
