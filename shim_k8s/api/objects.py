"""Kubernetes objects as the API serves them, named once for the shim and the admission controller: the
`Obj` alias, the watch event types, and the reads every module makes of any object (its key, its name,
a value of it as text), which never fail, whatever the object holds.

Objects stay plain decoded JSON: reading them as dicts is what the hot path can afford, and what
shim_k8s.readers.translate reads. `Obj` is a Mapping because the shim and the controller only read objects
(whatever mapping holds one will do); what decodes or builds one (kube_http, the informers, the
webhook configurations) says `dict[str, Any]`."""

from __future__ import annotations

from collections.abc import Mapping
from enum import StrEnum
from typing import Any

Obj = Mapping[str, Any]  # an object as the API serves it, read


class WatchEvent(StrEnum):
    """A watch event's `type`. A str: it compares equal to the wire's text, which informers hand on as
    received (an unknown type is passed on, not refused)."""

    ADDED = "ADDED"
    MODIFIED = "MODIFIED"
    DELETED = "DELETED"
    BOOKMARK = "BOOKMARK"
    ERROR = "ERROR"


def key_of(obj: object) -> str:
    """An object's identity for reports: its UID, else namespace/name; never fails."""
    if type(obj) is dict:  # every object as decoded: the checks below only for odd ones
        meta = obj.get("metadata")
        if type(meta) is dict:
            uid = meta.get("uid")
            if type(uid) is str and uid:
                return uid
    meta = obj.get("metadata") if isinstance(obj, Mapping) else None
    if not isinstance(meta, Mapping):
        return f"<{type(obj).__name__} without metadata>"
    uid = meta.get("uid")
    if isinstance(uid, str) and uid:
        return uid
    return f"{meta.get('namespace', '')}/{meta.get('name', '')}"


def name_of(obj: object) -> str:
    """An object's name; "" when it has none that is a string. Never fails."""
    meta = obj.get("metadata") if isinstance(obj, Mapping) else None
    name = meta.get("name") if isinstance(meta, Mapping) else None
    return name if isinstance(name, str) else ""


def clip(text: object, most: int = 40) -> str:
    """A text (or what an object holds, as written) cut short: it may be any size."""
    text = str(text)
    return text if len(text) <= most else text[: most - 3] + "..."
