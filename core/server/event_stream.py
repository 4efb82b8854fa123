"""The StreamEvents rpc: one registered RM's scheduler events as si EventRecords, as they happen.

A request may first ask for held events from a number on (to resume after a disconnect), and for
only some event types. The call's initial metadata (metadata.LIVE_FROM_ID) arrives once the stream is
subscribed, so a reader that waits for it knows no later event can be missed. A reader that falls
so far behind that the ring drops events it has not read is cut off with RESOURCE_EXHAUSTED and a
message naming the number to resume from; at shutdown every stream ends cleanly with status OK.
"""

from __future__ import annotations

from collections.abc import AsyncIterator, Callable
from typing import Any

import grpc
import structlog

from core.events import Event, EventLog, Follower
from core.resources import Resource
from core.rm.si_outbound import resource_to_si
from si.v1 import metadata, si_pb2

log = structlog.get_logger("pykorn.events")

_TYPES = si_pb2.EventRecord.Type


def event_to_si(event: Event) -> si_pb2.EventRecord:
    return si_pb2.EventRecord(
        type=event.type.value,  # the core's enums are the si values' names (tests/unit/test_wire.py)
        objectID=event.object_id,
        referenceID=event.reference_id,
        message=event.message,
        timestampNano=int(event.time * 1e9),
        eventChangeType=event.change_type.value,
        eventChangeDetail=event.change_detail.value,
        resource=resource_to_si(Resource(event.resource)),
    )


class EventStreams:
    """Serves StreamEvents calls and ends them all at shutdown."""

    def __init__(self, events: EventLog, is_registered: Callable[[str], bool]) -> None:
        self._events = events
        self._is_registered = is_registered
        self._followers: set[Follower] = set()

    def end_all(self) -> None:
        for follower in list(self._followers):
            follower.end()

    async def serve(
        self, request: si_pb2.EventStreamRequest, context: grpc.aio.ServicerContext[Any, Any]
    ) -> AsyncIterator[si_pb2.EventStreamResponse]:
        rm_id = request.rmID
        if not rm_id:
            await context.abort(
                grpc.StatusCode.INVALID_ARGUMENT, "rmID is missing: name the RM whose events to send"
            )
        if not self._is_registered(rm_id):
            await context.abort(
                grpc.StatusCode.FAILED_PRECONDITION,
                f"resource manager {rm_id!r} is not registered; register before asking for its events",
            )
        if not self._events.tracking:
            await context.abort(
                grpc.StatusCode.FAILED_PRECONDITION,
                "event tracking is disabled (event.trackingEnabled: false in the RM's extraConfig)",
            )
        unknown = [t for t in request.types if t not in _TYPES.values() or t == 0]
        if unknown:
            await context.abort(grpc.StatusCode.INVALID_ARGUMENT, f"unknown event types {unknown}")
        wanted = {_TYPES.Name(t) for t in request.types}

        def accept(event: Event) -> bool:
            return event.rm_id == rm_id and (not wanted or event.type in wanted)

        live_from = self._events.highest_id + 1
        if request.fromID > live_from:
            # Numbers start again from 0 when the core restarts: an id from before means nothing now.
            await context.abort(
                grpc.StatusCode.OUT_OF_RANGE,
                f"fromID {request.fromID} is beyond the newest event ({live_from - 1}): the core has "
                "restarted since, or the id is wrong; ask again with fromID 0 (all held) or -1 (new only)",
            )
        follower = Follower(self._events, accept, start=request.fromID if request.fromID >= 0 else None)
        self._followers.add(follower)
        # Headers tell the reader the stream is live: events recorded from here on will reach it.
        await context.send_initial_metadata(((metadata.LIVE_FROM_ID, str(live_from)),))
        log.info("event stream opened", rmID=rm_id, fromID=request.fromID, types=sorted(wanted))
        try:
            while (item := await follower.next()) is not None:
                yield self._response(*item)
            if follower.cut_off:
                log.warning(
                    "event stream reader fell behind, closing", rmID=rm_id, resumeFrom=follower.cursor
                )
                await context.abort(
                    grpc.StatusCode.RESOURCE_EXHAUSTED,
                    f"reader fell more than {self._events.capacity:,} events behind and events were lost; "
                    f"resume with fromID={follower.cursor} (lowestID says where the held events start)",
                )
        finally:
            follower.close()
            self._followers.discard(follower)

    def _response(self, event_id: int, event: Event) -> si_pb2.EventStreamResponse:
        lowest = self._events.lowest_id
        return si_pb2.EventStreamResponse(id=event_id, event=event_to_si(event), lowestID=lowest)
