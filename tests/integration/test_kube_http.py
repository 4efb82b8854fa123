"""The API emulation's HTTP/1.1 layer (tests/integration/kube_http.py) answers as an API server's does:
raw requests over a socket, as a client's bytes arrive."""

from __future__ import annotations

import asyncio
import json
from collections.abc import AsyncIterator
from typing import Any

import pytest

from tests.integration.kube_api import FakeKubeAPI

POD: dict[str, Any] = {"metadata": {"name": "p1", "namespace": "default"}, "spec": {"containers": []}}


@pytest.fixture
async def api() -> AsyncIterator[FakeKubeAPI]:
    kube = FakeKubeAPI()
    await kube.start()
    try:
        await kube.put("pods", POD)
        yield kube
    finally:
        await kube.stop()


async def _exchange(
    api: FakeKubeAPI, raw: bytes, answers: int = 1
) -> list[tuple[int, dict[str, str], bytes]]:
    """Send `raw` on one connection; the first `answers` responses (status, headers, body)."""
    reader, writer = await asyncio.open_connection("127.0.0.1", api.port)
    try:
        writer.write(raw)
        await writer.drain()
        return [await _response(reader) for _ in range(answers)]
    finally:
        writer.close()


async def _response(reader: asyncio.StreamReader) -> tuple[int, dict[str, str], bytes]:
    head = (await reader.readuntil(b"\r\n\r\n")).decode("latin-1").split("\r\n")
    status = int(head[0].split(" ")[1])
    headers = {k.lower(): v.strip() for k, _, v in (line.partition(":") for line in head[1:] if line)}
    if "chunked" in headers.get("transfer-encoding", ""):
        body = b""
        while size := int((await reader.readuntil(b"\r\n")).strip(), 16):
            body += (await reader.readexactly(size + 2))[:-2]
        await reader.readexactly(2)
        return status, headers, body
    return status, headers, await reader.readexactly(int(headers.get("content-length", "0")))


def _binding(node: str) -> bytes:
    return json.dumps({"apiVersion": "v1", "kind": "Binding", "metadata": {"name": "p1"},
                       "target": {"kind": "Node", "name": node}}).encode()  # fmt: skip


async def test_an_unknown_path_is_404_with_a_status_body(api: FakeKubeAPI) -> None:
    [(status, headers, body)] = await _exchange(api, b"GET /api/v1/nothing HTTP/1.1\r\nHost: x\r\n\r\n")
    assert status == 404
    assert headers["content-type"].startswith("application/json")
    answer = json.loads(body)
    assert (answer["kind"], answer["reason"], answer["code"]) == ("Status", "NotFound", 404)


async def test_a_method_a_path_does_not_take_is_405(api: FakeKubeAPI) -> None:
    [(status, _, body)] = await _exchange(api, b"PUT /api/v1/nodes HTTP/1.1\r\nHost: x\r\n\r\n")
    assert status == 405
    assert json.loads(body)["reason"] == "MethodNotAllowed"


async def test_pipelined_requests_are_answered_in_order(api: FakeKubeAPI) -> None:
    body = _binding("n1")
    get = b"GET /api/v1/namespaces/default/pods/p1 HTTP/1.1\r\nHost: x\r\n\r\n"
    bind = (b"POST /api/v1/namespaces/default/pods/p1/binding HTTP/1.1\r\nHost: x\r\n"
            b"Content-Length: %d\r\n\r\n%s") % (len(body), body)  # fmt: skip
    raw = get + bind + get
    before, bound, after = await _exchange(api, raw, answers=3)
    assert (before[0], bound[0], after[0]) == (200, 201, 200)
    assert json.loads(before[2])["spec"].get("nodeName", "") == ""
    assert json.loads(after[2])["spec"]["nodeName"] == "n1"


async def test_a_chunked_request_body_is_read(api: FakeKubeAPI) -> None:
    body = _binding("n2")
    half = len(body) // 2
    chunked = b"%x\r\n%s\r\n%x\r\n%s\r\n0\r\n\r\n" % (half, body[:half], len(body) - half, body[half:])
    raw = (b"POST /api/v1/namespaces/default/pods/p1/binding HTTP/1.1\r\nHost: x\r\n"
           b"Transfer-Encoding: chunked\r\n\r\n") + chunked  # fmt: skip
    [(status, _, _)] = await _exchange(api, raw)
    assert status == 201
    assert api.bindings == [("p1", "n2")]


async def test_expect_continue_is_answered_before_the_body(api: FakeKubeAPI) -> None:
    body = _binding("n3")
    reader, writer = await asyncio.open_connection("127.0.0.1", api.port)
    try:
        writer.write(b"POST /api/v1/namespaces/default/pods/p1/binding HTTP/1.1\r\nHost: x\r\n"
                     b"Expect: 100-continue\r\nContent-Length: %d\r\n\r\n" % len(body))  # fmt: skip
        assert await reader.readuntil(b"\r\n\r\n") == b"HTTP/1.1 100 Continue\r\n\r\n"
        writer.write(body)
        status, _, _ = await _response(reader)
        assert status == 201
    finally:
        writer.close()


async def test_a_body_over_the_api_servers_limit_is_413(api: FakeKubeAPI) -> None:
    raw = b"POST /api/v1/namespaces/default/events HTTP/1.1\r\nHost: x\r\nContent-Length: %d\r\n\r\n" % (
        3 * 1024 * 1024 + 1
    )
    [(status, _, body)] = await _exchange(api, raw)
    assert status == 413
    assert json.loads(body)["reason"] == "RequestEntityTooLarge"


async def test_connection_close_is_honoured(api: FakeKubeAPI) -> None:
    reader, writer = await asyncio.open_connection("127.0.0.1", api.port)
    try:
        writer.write(b"GET /api/v1/nodes HTTP/1.1\r\nHost: x\r\nConnection: close\r\n\r\n")
        status, _, _ = await _response(reader)
        assert status == 200
        assert await reader.read() == b""  # the server closed its side
    finally:
        writer.close()


async def test_a_garbled_request_line_is_400_and_the_server_serves_on(api: FakeKubeAPI) -> None:
    [(status, _, _)] = await _exchange(api, b"NONSENSE\r\n\r\n")
    assert status == 400
    [(status, _, _)] = await _exchange(api, b"GET /api/v1/nodes HTTP/1.1\r\nHost: x\r\n\r\n")
    assert status == 200


async def test_a_handler_that_fails_is_500_and_the_connection_serves_on(api: FakeKubeAPI) -> None:
    garbage = b"not json"
    bind = (
        b"POST /api/v1/namespaces/default/pods/p1/binding HTTP/1.1\r\nHost: x\r\nContent-Length: %d\r\n\r\n%s"
    )
    raw = bind % (len(garbage), garbage) + b"GET /api/v1/nodes HTTP/1.1\r\nHost: x\r\n\r\n"
    failed, listed = await _exchange(api, raw, answers=2)
    assert failed[0] == 500 and json.loads(failed[2])["reason"] == "InternalError"
    assert listed[0] == 200 and json.loads(listed[2])["kind"] == "NodeList"


async def test_a_watch_streams_chunked_lines_as_changes_come(api: FakeKubeAPI) -> None:
    reader, writer = await asyncio.open_connection("127.0.0.1", api.port)
    try:
        writer.write(b"GET /api/v1/pods?watch=true&resourceVersion=0 HTTP/1.1\r\nHost: x\r\n\r\n")
        head = await reader.readuntil(b"\r\n\r\n")
        assert b"Transfer-Encoding: chunked" in head
        size = int((await reader.readuntil(b"\r\n")).strip(), 16)
        first = json.loads((await reader.readexactly(size + 2))[:-2])
        assert (first["type"], first["object"]["metadata"]["name"]) == ("ADDED", "p1")
        await api.put("pods", {**POD, "metadata": {**POD["metadata"], "labels": {"a": "b"}}})
        size = int((await reader.readuntil(b"\r\n")).strip(), 16)
        second = json.loads((await reader.readexactly(size + 2))[:-2])
        assert (second["type"], second["object"]["metadata"]["labels"]) == ("MODIFIED", {"a": "b"})
    finally:
        writer.close()
