"""The rows the history's writer thread makes from the records the event loop left it
(core.history.recorder): the loop keeps only what it must read at that moment, and the digests, JSON
and row tuples are made here, off the scheduling path."""

from __future__ import annotations

import difflib
import hashlib
from collections.abc import Callable
from typing import Any

import orjson
from sqlalchemy.exc import InterfaceError, OperationalError

from core.events import RawEvent
from core.history.store import Record, row_of

# Records whose rows the writer thread makes: an event as the log gave it; an allocation's start or
# resize as (its application's Names, its event, its node, its instance type); a configuration put in
# force as (rmID, time, "registered" or "updated", who sent it, the text before or "", the text now).
RAW_EVENT, ALLOC_STARTED, ALLOC_RESIZED = "raw_event", "allocation_started", "allocation_resized"
CONFIG_APPLIED = "config_applied"
Names = tuple[str, str, str, str, str]  # an application's rmID, partition, ID, queue and user


def _values(resource: Any) -> dict[str, int]:
    """A resource's quantities as a plain dict (a Resource's own, or a mapping's copy)."""
    values = getattr(resource, "_values", None)
    return values if values is not None else dict(resource)


def prepared(
    batch: list[Record],
    last_config: Callable[[str], str | None] | None = None,
    unwritable: Callable[[Record, Exception], None] | None = None,
) -> list[Record]:
    """The batch as the store takes it: the rows the loop left to the writer thread made here.
    `last_config(rmID)`: the configuration text last recorded for the RM (the database's), what a
    registration the core knew nothing before is compared with; its failures are the database's and
    raised. `unwritable(record, error)`: told of a record no row can be made of, which is left out
    (without it, raised)."""
    out: list[Record] = []
    texts: dict[str, str] = {}  # the batch's configurations so far, by RM
    for record in batch:
        kind, params = record
        try:
            if kind is CONFIG_APPLIED:
                row = _config_row(params, texts, last_config)
                if row is not None:
                    out.append(("config_change", row))
            elif kind is RAW_EVENT:
                out.append(("event", _event_row(params)))
            elif kind is ALLOC_STARTED or kind is ALLOC_RESIZED:
                (rm_id, partition, app_id, queue, user), event, node, instance_type = params
                resources = orjson.dumps(_values(event[8])).decode()
                row = (
                    rm_id,
                    partition,
                    app_id,
                    event[7],
                    event[6],
                    queue,
                    user,
                    node,
                    instance_type,
                    resources,
                )
                out.append(("alloc_start" if kind is ALLOC_STARTED else "alloc_resized", row))
            elif kind == "reconcile":
                out.append(record)
            else:  # its JSON encoded now: a value that cannot be is this record's fault alone
                out.append((kind, row_of(kind, params)))
        except _Database:
            raise
        except Exception as exc:
            if unwritable is None:
                raise
            unwritable(record, exc)
    return out


class _Database(Exception):
    """The database failed while a row was made (reading the last configuration): not the record's
    fault, so raised to the writer as the database's, its cause kept."""


def _config_row(
    params: tuple[str, float, str, str, str, str],
    texts: dict[str, str],
    last_config: Callable[[str], str | None] | None,
) -> tuple[Any, ...] | None:
    """A configuration change's row; None when the text is the one in force before (an RM that
    registers again with it, after a restart of its own or of the core's)."""
    rm_id, at, change, who, before, after = params
    if not before:
        before = texts.get(rm_id) or _recorded(rm_id, last_config) or ""
    texts[rm_id] = after
    if before == after:
        return None
    diff = "".join(difflib.unified_diff(_lines(before), _lines(after), "before", "after"))
    return (rm_id, at, who, diff, change, after)


def _recorded(rm_id: str, last_config: Callable[[str], str | None] | None) -> str | None:
    if last_config is None:
        return None
    try:
        return last_config(rm_id)
    except (OperationalError, InterfaceError) as exc:  # the database's (not reached, gone): held
        raise _Database(str(exc)) from exc


def _lines(text: str) -> list[str]:
    """The text's lines for a diff, each ending in a newline (the last one too: a text without one
    would have its last line run into the next line of the diff)."""
    lines = text.splitlines(keepends=True)
    if lines and not lines[-1].endswith(("\n", "\r")):
        lines[-1] += "\n"
    return lines


def _event_row(event: RawEvent) -> tuple[Any, ...]:
    rm_id, kind, object_id, change, detail, message, at, reference = event[:8]
    fields = f"{rm_id}\x1f{kind}\x1f{object_id}\x1f{change}\x1f{detail}\x1f{message}\x1f{at!r}\x1f{reference}"
    digest = hashlib.sha1(fields.encode(), usedforsecurity=False).hexdigest()
    resource = orjson.dumps(_values(event[8])).decode()
    return (digest, at, rm_id, str(kind), object_id, str(change), str(detail), message, reference, resource)
