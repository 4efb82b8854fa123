"""Event records as YuniKorn's REST API writes them: the si EventRecord as Go's encoding/json
renders the generated struct (enums as their numbers, the resource as {"resources": {name:
{"value": n}}}, empty fields left out), in the /events/batch envelope. pykorn's own fields (the
record's number in the ring, the RM it concerns) are under "pykorn"."""

from __future__ import annotations

from typing import Any

from core.events import Event, EventLog
from si.v1 import si_pb2

Json = dict[str, Any]


def event_record(event_id: int, event: Event) -> Json:
    record: Json = {
        "type": si_pb2.EventRecord.Type.Value(event.type),
        "objectID": event.object_id,
        "referenceID": event.reference_id,
        "message": event.message,
        "timestampNano": int(event.time * 1e9),
        "eventChangeType": si_pb2.EventRecord.ChangeType.Value(event.change_type),
        "eventChangeDetail": si_pb2.EventRecord.ChangeDetail.Value(event.change_detail),
        "resource": {"resources": {k: {"value": v} for k, v in event.resource.items()}}
        if event.resource
        else None,
    }
    out = {key: value for key, value in record.items() if value}  # omitempty on every field
    out["pykorn"] = {"id": event_id, "rmID": event.rm_id}
    return out


def event_batch(events: EventLog, instance: str, start: int, count: int) -> Json:
    return {
        "InstanceUUID": instance,
        "LowestID": events.lowest_id,
        "HighestID": events.highest_id,
        "EventRecords": [event_record(i, e) for i, e in events.since(start, count)],
    }
