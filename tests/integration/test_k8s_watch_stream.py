"""KubeHTTP.watch against a server on loopback that writes a watch's body in scripted pieces: events
however the bytes fall (many in one piece, one over many pieces, a last one without its newline),
the watch's end, an ERROR event, and text that is not JSON."""

from __future__ import annotations

import asyncio
import json
from collections.abc import AsyncIterator
from typing import Any

import pytest

from shim_k8s.api import kube_http
from shim_k8s.api.kube_http import ApiError, KubeHTTP
from shim_k8s.api.kubeconfig import cluster_access


def _event(kind: str, name: str, pad: int = 0) -> bytes:
    obj = {"metadata": {"name": name, "uid": f"uid-{name}", "resourceVersion": "7"}, "pad": "x" * pad}
    return json.dumps({"type": kind, "object": obj}).encode() + b"\n"


async def _serve(pieces: list[bytes]) -> tuple[asyncio.Server, str]:
    """A server answering any request with a chunked 200 whose chunks are `pieces`, then the end."""

    async def serve(reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
        await reader.readuntil(b"\r\n\r\n")
        writer.write(
            b"HTTP/1.1 200 OK\r\nContent-Type: application/json\r\nTransfer-Encoding: chunked\r\n\r\n"
        )
        for piece in pieces:
            writer.write(b"%x\r\n%s\r\n" % (len(piece), piece))
            await writer.drain()
            await asyncio.sleep(0)  # apart, as a stream's pieces come
        writer.write(b"0\r\n\r\n")
        await writer.drain()
        writer.close()

    server = await asyncio.start_server(serve, "127.0.0.1", 0)
    port = server.sockets[0].getsockname()[1]
    return server, f"http://127.0.0.1:{port}"


@pytest.fixture
async def watch_of() -> AsyncIterator[Any]:
    servers: list[asyncio.Server] = []
    clients: list[KubeHTTP] = []

    async def watch(pieces: list[bytes]) -> list[dict[str, Any]]:
        server, url = await _serve(pieces)
        servers.append(server)
        http = KubeHTTP(cluster_access(host=url))
        clients.append(http)
        return [event async for event in http.watch("/api/v1/pods", "1", 60)]

    yield watch
    for http in clients:
        await http.close()
    for server in servers:
        server.close()


def _names(events: list[dict[str, Any]]) -> list[str]:
    return [e["object"]["metadata"]["name"] for e in events]


async def test_many_events_in_one_piece_and_one_event_over_many(watch_of: Any) -> None:
    burst = b"".join(_event("ADDED", f"p{i}") for i in range(50))
    big = _event("MODIFIED", "big", pad=200_000)
    pieces = [burst, *(big[i : i + 1000] for i in range(0, len(big), 1000)), _event("DELETED", "last")]
    events = await watch_of(pieces)
    assert _names(events) == [*(f"p{i}" for i in range(50)), "big", "last"]
    assert [e["type"] for e in events[-2:]] == ["MODIFIED", "DELETED"]
    assert len(events[-2]["object"]["pad"]) == 200_000


async def test_pieces_cut_anywhere_give_the_same_events(watch_of: Any) -> None:
    body = b"".join(_event("ADDED", f"p{i}") for i in range(20)) + b"\n\n"  # blank lines are skipped
    for size in (1, 7, 64, 1000):
        events = await watch_of([body[i : i + size] for i in range(0, len(body), size)])
        assert _names(events) == [f"p{i}" for i in range(20)], size


async def test_a_last_event_without_its_newline_still_counts(watch_of: Any) -> None:
    events = await watch_of([_event("ADDED", "a"), _event("ADDED", "b").rstrip(b"\n")])
    assert _names(events) == ["a", "b"]


async def test_an_error_event_raises_with_its_status(watch_of: Any) -> None:
    gone = json.dumps({"type": "ERROR", "object": {"kind": "Status", "code": 410, "message": "too old"}})
    with pytest.raises(ApiError) as raised:
        await watch_of([_event("ADDED", "a") + gone.encode() + b"\n"])
    assert (raised.value.status, raised.value.reason) == (410, "too old")


async def test_text_that_is_not_json_is_refused(watch_of: Any) -> None:
    with pytest.raises(ValueError):
        await watch_of([_event("ADDED", "a"), b'{"type": "ADDED", "object": NaN}\n'])
    with pytest.raises(ValueError):  # cut off inside an event when the watch ends
        await watch_of([_event("ADDED", "a")[:30]])


async def test_an_event_beyond_the_largest_is_refused(watch_of: Any, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(kube_http, "MAX_EVENT_BYTES", 10_000)
    big = _event("ADDED", "big", pad=50_000)
    with pytest.raises(ValueError, match="over 10000 bytes"):
        await watch_of([big[i : i + 4000] for i in range(0, len(big), 4000)])


async def test_an_informer_stops_reading_its_watch_while_the_loop_has_a_full_backlog() -> None:
    """The shim's loop queue bounded (shim_k8s.main.EventBacklog): past the bound the informer waits
    before its next event, and goes on once the loop has taken the backlog down to half; nothing is
    lost or reordered meanwhile."""
    from shim_k8s.api.informer import Informer
    from shim_k8s.main import EventBacklog, InformerEvent, Item

    server, url = await _serve([b"".join(_event("ADDED", f"p{i}") for i in range(20))])
    http = KubeHTTP(cluster_access(host=url))
    items: asyncio.Queue[Item] = asyncio.Queue()
    backlog = EventBacklog(items, most=4)
    delivered = asyncio.Event()

    def deliver(kind: str, event: str, obj: dict[str, Any]) -> None:
        items.put_nowait(InformerEvent(kind, event, obj))
        delivered.set()

    async def until_backlog(size: int) -> None:
        while items.qsize() < size:
            delivered.clear()
            await asyncio.wait_for(delivered.wait(), 5.0)

    informer = Informer("pods", "/api/v1/pods", http, deliver, room=backlog.room)
    informer.start([], "1")
    try:
        taken: list[str] = []

        def take(count: int) -> None:
            for _ in range(count):
                item = items.get_nowait()
                assert isinstance(item, InformerEvent)
                taken.append(item.obj["metadata"]["name"])
            backlog.taken()

        await until_backlog(4)
        for _ in range(10):
            await asyncio.sleep(0)  # turns of the loop: the informer has more to read, and waits
        assert (items.qsize(), backlog.waits) == (4, 1)
        take(1)  # three left: over half the bound, so the informer still waits
        for _ in range(10):
            await asyncio.sleep(0)
        assert items.qsize() == 3
        take(1)  # two left: half, and it reads on until the bound again
        await until_backlog(4)
        while len(taken) < 20:
            take(items.qsize())
            if len(taken) < 20:
                await until_backlog(min(4, 20 - len(taken)))
        assert taken == [f"p{i}" for i in range(20)]
        assert backlog.waits >= 2
    finally:
        informer.stop()
        await http.close()
        server.close()


async def test_an_event_beyond_the_largest_is_refused_in_one_piece_too(
    watch_of: Any, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setattr(kube_http, "MAX_EVENT_BYTES", 10_000)
    with pytest.raises(ValueError, match="over 10000 bytes"):
        await watch_of([_event("ADDED", "big", pad=50_000)])  # its newline in the same piece
