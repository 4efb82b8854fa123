"""One stream message's items on their way into the core: the items the rate limit admits are checked
and translated (core.rm.si_inbound), the others refused, and every refusal answered together on the
stream with its reason. Items are named in answers by their ids, cut to a length a reply can carry."""

from __future__ import annotations

from collections.abc import Callable, Iterable
from typing import Any, TypeVar

import structlog

from core.log_digest import RejectionDigest, WarningLimiter
from core.rm.bad_item import BadItem
from core.rm.response_stream import ResponseStream, StreamKind
from core.rm.route import RMRoute
from core.rm.si_outbound import allocation_rejections, application_rejections, node_rejections
from si.v1 import si_pb2

log = structlog.get_logger("pykorn.rmproxy")

Clip = Callable[[str], str]


def allocation_ids(item: si_pb2.Allocation | si_pb2.AllocationRelease, clip: Clip) -> tuple[str, str]:
    return clip(item.allocationKey), clip(item.applicationID)


def application_ids(
    item: si_pb2.AddApplicationRequest | si_pb2.RemoveApplicationRequest, clip: Clip
) -> tuple[str]:
    return (clip(item.applicationID),)


def node_ids(item: si_pb2.NodeInfo, clip: Clip) -> tuple[str]:
    return (clip(item.nodeID),)


# Per stream kind: the response that carries rejections, and the ids of an answer that names no item.
REJECTIONS: dict[StreamKind, Callable[[list[Any]], Any]] = {
    StreamKind.ALLOCATION: allocation_rejections,
    StreamKind.APPLICATION: application_rejections,
    StreamKind.NODE: node_rejections,
}
BLANK: dict[StreamKind, tuple[str, ...]] = {
    StreamKind.ALLOCATION: ("", ""),
    StreamKind.APPLICATION: ("",),
    StreamKind.NODE: ("",),
}


def idents(kind: StreamKind, msg: Any, clip: Clip) -> list[tuple[str, ...]]:
    """The ids of every item of a stream message, as sent, cut to a length a reply can carry."""
    if kind is StreamKind.ALLOCATION:
        releases = msg.releases.allocationsToRelease if msg.HasField("releases") else ()
        return [allocation_ids(item, clip) for item in (*msg.allocations, *releases)]
    if kind is StreamKind.APPLICATION:
        return [application_ids(item, clip) for item in (*msg.new, *msg.remove)]
    return [node_ids(item, clip) for item in msg.nodes]


Item = TypeVar("Item")
Taken = TypeVar("Taken")


class Intake:
    """One stream message's items on their way in: the first `admitted` are checked and translated,
    the rest refused with `reason` (the rate limit's, or the stream's refusal when `admitted` is 0);
    every refusal is answered together on the stream once the message is through."""

    def __init__(
        self, stream: ResponseStream, rm_id: str, route: RMRoute, admitted: int, reason: str,
        clip: Clip, warnings: WarningLimiter,
    ) -> None:  # fmt: skip
        self.route = route
        self._stream = stream
        self._rm_id = rm_id
        self._admitted = admitted
        self._reason = reason  # for the items past `admitted`; each is logged once, by the caller
        self._clip = clip
        self._warnings = warnings
        self._rejected: list[tuple[str, ...]] = []
        self._digest = RejectionDigest()  # the items refused on checking, for one log line per reason

    def take(
        self,
        items: Iterable[Item],
        ident: Callable[[Item, Clip], tuple[str, ...]],
        translate: Callable[[Item], Taken],
    ) -> list[Taken]:
        taken: list[Taken] = []
        for item in items:
            if self._admitted <= 0:
                self._rejected.append((*ident(item, self._clip), self._reason))
                continue
            self._admitted -= 1
            try:
                taken.append(translate(item))
            except BadItem as exc:
                ids = ident(item, self._clip)
                self._rejected.append((*ids, str(exc)))
                self._digest.add(ids, str(exc))
        return taken

    def answer_rejected(self) -> None:
        """Every refused item answered on the stream, each with its reason; the log gets one line per
        kind of reason."""
        if self._rejected:
            self._stream.send(REJECTIONS[self._stream.kind](self._rejected))
            stream = self._stream.kind.value
            self._digest.log(self._warnings, log, self._rm_id, stream=stream)
