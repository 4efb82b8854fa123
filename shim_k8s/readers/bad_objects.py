"""Objects the shim cannot use as they are: refused, or given YuniKorn's fallback, and said so.

One object's fault stays with that object. The shim never stops for it: it is refused (a pod is not
scheduled, a node not added, a ConfigMap's last good settings kept) or given the fallback YuniKorn
gives (user `nobody` for an unreadable user.info), and

- a Warning event on the object names the field and the reason (once per object and message, so an
  object that stays bad is not reported at every change of it);
- `pykorn_k8s_objects_refused_total{kind,reason}` or `pykorn_k8s_objects_fallback_total{kind,reason}`
  counts it;
- a log line says what happened: the first of each kind and reason at once, then at most one line
  per LOG_PERIOD with how many more there were.

`Refused` is what translation raises for an object it cannot use; `diagnose` names the field when
something else went wrong reading it.
"""

from __future__ import annotations

import time
from collections import Counter
from collections.abc import Callable, Mapping
from dataclasses import dataclass
from typing import Any, Protocol

import structlog

from shim_k8s.api.objects import clip, key_of

log = structlog.get_logger("pykorn.k8s")

LOG_PERIOD = 10.0  # seconds between log lines of one kind of object and reason
MESSAGE_MOST = 1024  # characters of a message (Kubernetes' events keep no more)
REMEMBERED = 100_000  # objects whose last report is remembered (to post each message once)
INTERNAL = "internal"  # the reason when pykorn failed on an object in a way it did not foresee


class Refused(ValueError):
    """An object, or one field of it, the shim cannot use. `reason` is a short, fixed label for the
    metric (`invalid-field`, `invalid-quantity`, ...); the text names the field and says why."""

    def __init__(self, message: str, reason: str = "invalid-field") -> None:
        super().__init__(message)
        self.reason = reason


class _Events(Protocol):
    async def record_event(
        self, obj: Mapping[str, Any], reason: str, message: str, warning: bool = False
    ) -> None: ...


@dataclass
class _Logged:
    at: float
    more: int = 0  # occurrences since that line, not logged yet


class BadObjects:
    def __init__(self, events: _Events, clock: Callable[[], float] = time.monotonic) -> None:
        self.events = events
        self.clock = clock
        self.refused: Counter[tuple[str, str]] = Counter()  # (kind, reason) -> objects refused
        self.fallbacks: Counter[tuple[str, str]] = Counter()  # (kind, reason) -> fallbacks given
        self._reported: dict[str, str] = {}  # object key -> the last message posted on it
        self._logged: dict[tuple[str, str, str], _Logged] = {}

    async def refuse(self, kind: str, obj: object, reason: str, message: str) -> None:
        """`obj` is not used; the event says so and why."""
        self.refused[(kind, reason)] += 1
        message = clip(message, MESSAGE_MOST)
        self._log("refused", kind, reason, obj, message)
        await self._post(kind, obj, "Refused", f"pykorn refused this {_singular(kind)}: {message}")

    async def fallback(self, kind: str, obj: object, reason: str, message: str) -> None:
        """`obj` is used with YuniKorn's fallback for one field; `message` says which and what."""
        self.fallbacks[(kind, reason)] += 1
        message = clip(message, MESSAGE_MOST)
        self._log("fallback used", kind, reason, obj, message)
        await self._post(kind, obj, reason_event(reason), message)

    def forget(self, key: str) -> None:
        """The object is gone, or was used after all: a later fault of it is reported afresh."""
        self._reported.pop(key, None)

    async def _post(self, kind: str, obj: object, event_reason: str, message: str) -> None:
        key = key_of(obj)
        if self._reported.get(key) == f"{event_reason}:{message}":
            return
        if len(self._reported) >= REMEMBERED:
            self._reported.clear()  # bounded; at worst an old object's event is posted once more
        self._reported[key] = f"{event_reason}:{message}"
        if _postable(obj):
            assert isinstance(obj, Mapping)
            # Objects in a list carry no kind of their own: the event must name it to point at it.
            named = {**obj, "kind": _KINDS.get(kind, obj.get("kind") or "Pod")}
            await self.events.record_event(named, event_reason, message, warning=True)

    def _log(self, what: str, kind: str, reason: str, obj: object, message: str) -> None:
        """The first of a kind and reason at once; then one line a LOG_PERIOD, with the count."""
        now = self.clock()
        slot = (what, kind, reason)
        logged = self._logged.get(slot)
        if logged is not None and now - logged.at < LOG_PERIOD:
            logged.more += 1
            return
        more = logged.more if logged is not None else 0
        self._logged[slot] = _Logged(now)
        extra = {"more_since_last_line": more} if more else {}
        name = clip(key_of(obj), 120)
        headline = f"{_singular(kind)} {what}"
        log.warning(headline, kind=kind, reason=reason, object=name, detail=message, **extra)


def reason_event(reason: str) -> str:
    """The event reason for a fallback label: `user-info` -> `UserInfoFallback`."""
    return "".join(part.capitalize() for part in reason.split("-")) + "Fallback"


def _postable(obj: object) -> bool:
    """An event can name the object: it has a name (and, if any, a namespace) that are strings."""
    meta = obj.get("metadata") if isinstance(obj, Mapping) else None
    if not isinstance(meta, Mapping) or not isinstance(meta.get("name"), str) or not meta["name"]:
        return False
    return isinstance(meta.get("namespace", ""), str) and isinstance(meta.get("uid", ""), str)


_KINDS = {
    "pods": "Pod", "nodes": "Node", "namespaces": "Namespace", "configmaps": "ConfigMap",
    "priorityclasses": "PriorityClass", "persistentvolumeclaims": "PersistentVolumeClaim",
    "persistentvolumes": "PersistentVolume", "storageclasses": "StorageClass", "csinodes": "CSINode",
}  # fmt: skip
_SINGULAR = {**_KINDS, "pods": "pod", "nodes": "node", "namespaces": "namespace"}


def _singular(kind: str) -> str:
    return _SINGULAR.get(kind, kind)
