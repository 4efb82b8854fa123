"""The REST API against clients that hold connections without sending a request: slow headers are
cut at the header timeout, idle kept-alive connections at the idle timeout, and under a slowloris
load the healthcheck is still answered. A core of its own with short timeouts and a small cap."""

from __future__ import annotations

import asyncio
import contextlib
import socket
from collections.abc import AsyncIterator, Iterator
from contextlib import asynccontextmanager

import aiohttp
import pytest

from rmclient.core_process import CoreProcess
from tests.integration.core_helpers import running

HEADER_TIMEOUT = 1.0
IDLE_TIMEOUT = 1.0
CAP = 20
HEALTH = "/ws/v1/scheduler/healthcheck"


@pytest.fixture(scope="module")
def core() -> Iterator[CoreProcess]:
    flags = ["--rest-header-timeout", str(HEADER_TIMEOUT), "--rest-idle-timeout", str(IDLE_TIMEOUT)]
    yield from running(CoreProcess(extra_args=[*flags, "--rest-max-connections", str(CAP)]))


def _host_port(core: CoreProcess) -> tuple[str, int]:
    host, port = core.rest_url.removeprefix("http://").rsplit(":", 1)
    return host, int(port)


@asynccontextmanager
async def _connection(core: CoreProcess) -> AsyncIterator[tuple[asyncio.StreamReader, asyncio.StreamWriter]]:
    reader, writer = await asyncio.open_connection(*_host_port(core))
    try:
        yield reader, writer
    finally:
        writer.close()


async def _closed_by_core(reader: asyncio.StreamReader, within: float) -> bytes:
    """Everything the core sends until it closes the connection (which it must do within `within`)."""
    return await asyncio.wait_for(reader.read(), within)


async def _closed_count(reason: str, core: CoreProcess) -> int:
    async with aiohttp.ClientSession() as session, session.get(f"{core.rest_url}/ws/v1/metrics") as response:
        text = await response.text()
    prefix = f'pykorn_rest_connections_closed_total{{reason="{reason}"}}'
    return int(float(next(li for li in text.splitlines() if li.startswith(prefix)).split()[-1]))


async def _health(core: CoreProcess) -> int:
    async with aiohttp.ClientSession() as session, session.get(f"{core.rest_url}{HEALTH}") as response:
        return response.status


async def test_a_header_sent_a_line_at_a_time_is_cut_at_the_header_timeout(core: CoreProcess) -> None:
    before = await _closed_count("header_timeout", core)
    loop = asyncio.get_running_loop()
    async with _connection(core) as (reader, writer):
        opened = loop.time()
        writer.write(f"GET {HEALTH} HTTP/1.1\r\nHost: x\r\n".encode())
        closed = asyncio.ensure_future(_closed_by_core(reader, within=HEADER_TIMEOUT + 10))
        lines = 0
        while not closed.done():  # one more header line every tenth of a second, never the end
            writer.write(f"X-Slow-{lines}: y\r\n".encode())
            lines += 1
            await asyncio.wait([closed], timeout=0.1)
        took = loop.time() - opened
        assert await closed == b""  # closed without an answer
    assert took >= HEADER_TIMEOUT, f"cut after {took:.2f}s, before the timeout"
    assert lines >= 5  # it was sending all along
    assert await _closed_count("header_timeout", core) == before + 1


async def test_an_idle_kept_alive_connection_is_closed_after_the_idle_timeout(core: CoreProcess) -> None:
    loop = asyncio.get_running_loop()
    async with _connection(core) as (reader, writer):
        writer.write(f"GET {HEALTH} HTTP/1.1\r\nHost: x\r\n\r\n".encode())
        status = await reader.readline()
        assert status.startswith(b"HTTP/1.1 200"), status
        answered = loop.time()
        rest = await _closed_by_core(reader, within=IDLE_TIMEOUT + 10)  # the body, then the close
        took = loop.time() - answered
        assert b'"Healthy"' in rest or b"healthy" in rest.lower()
    assert took >= IDLE_TIMEOUT * 0.9, f"closed {took:.2f}s after the answer, before the idle timeout"


async def test_under_a_slowloris_load_the_healthcheck_is_answered(core: CoreProcess) -> None:
    before = await _closed_count("evicted", core) + await _closed_count("header_timeout", core)
    writers: list[asyncio.StreamWriter] = []
    try:
        for _ in range(3 * CAP):  # three times the cap, each with half a header
            _, writer = await asyncio.open_connection(*_host_port(core))
            writer.write(f"GET {HEALTH} HTTP/1.1\r\nHost: x\r\n".encode())
            await writer.drain()
            writers.append(writer)
        for _ in range(5):
            assert await _health(core) == 200
        # The newest pushed out the oldest (or, on a slow host, the oldest ran out of time first): at
        # most CAP of the slow ones are still open.
        after = await _closed_count("evicted", core) + await _closed_count("header_timeout", core)
        assert after - before >= 2 * CAP
    finally:
        for writer in writers:
            writer.close()


async def test_event_streams_keep_to_their_share_and_the_healthcheck_is_always_answered(
    core: CoreProcess,
) -> None:
    """With the cap at 20, event streams get at most 10 connections (half, by default): the 11th is
    answered 503 with the reason, and the healthcheck and the metrics are answered all along."""
    async with aiohttp.ClientSession(connector=aiohttp.TCPConnector(limit=0)) as session:
        streams = [await session.get(f"{core.rest_url}/ws/v1/events/stream") for _ in range(CAP // 2)]
        try:
            assert all(stream.status == 200 for stream in streams)  # each holds a connection, busy
            async with session.get(f"{core.rest_url}/ws/v1/events/stream") as refused:
                assert refused.status == 503 and refused.headers["Retry-After"] == "1"
                assert "--rest-max-event-streams" in (await refused.json())["message"]
            for _ in range(CAP):  # more short requests than the cap, one after another: each served
                assert await _health(core) == 200
            async with session.get(f"{core.rest_url}/ws/v1/metrics") as metrics:
                assert metrics.status == 200  # the metrics answer too
        finally:
            for stream in streams:
                stream.close()


@pytest.fixture(scope="module")
def patient_core() -> Iterator[CoreProcess]:
    """A long header (and body) timeout: requests that send their body slowly stay busy for the test."""
    flags = ["--rest-header-timeout", "60", "--rest-max-connections", str(CAP)]
    yield from running(CoreProcess(extra_args=flags))


async def test_at_the_cap_with_every_connection_busy_only_the_probes_get_in(
    patient_core: CoreProcess,
) -> None:
    """Event streams at their share, every other connection in the middle of a request (a body not
    sent whole): a new connection is refused with 503 and the reason, unless it asks for the
    healthcheck or the metrics, which a few connections over the cap are kept for."""
    core = patient_core
    before = await _closed_count("refused", core)
    writers: list[asyncio.StreamWriter] = []
    async with aiohttp.ClientSession(connector=aiohttp.TCPConnector(limit=0)) as session:
        streams = [await session.get(f"{core.rest_url}/ws/v1/events/stream") for _ in range(CAP // 2)]
        try:
            for _ in range(CAP - CAP // 2):
                reader, writer = await asyncio.open_connection(*_host_port(core))
                writers.append(writer)
                writer.write(b"POST /ws/v1/validate-conf HTTP/1.1\r\nHost: x\r\nContent-Length: 100\r\n"
                             b"Expect: 100-continue\r\n\r\n")  # fmt: skip
                # The core read the header (its 100 Continue says so): the connection is busy, not slow.
                assert await asyncio.wait_for(reader.readline(), 10) == b"HTTP/1.1 100 Continue\r\n"
                writer.write(b"abc")  # and a body that never comes whole
            async with _connection(core) as (reader, writer):
                writer.write(b"GET /ws/v1/partitions HTTP/1.1\r\nHost: x\r\n\r\n")
                answer = await _closed_by_core(reader, within=10)
            assert answer.startswith(b"HTTP/1.1 503"), answer
            assert b"--rest-max-connections" in answer
            for path in (HEALTH, "/ws/v1/metrics"):
                assert await _status_within(core, path, 1.0) == 200
        finally:
            for stream in streams:
                stream.close()
            for writer in writers:
                writer.close()
    # Once they are gone, everyone is served again.
    assert await _health(core) == 200
    assert await _closed_count("refused", core) == before + 1


async def _status_within(core: CoreProcess, path: str, seconds: float) -> int:
    """The status of a GET of `path` on a connection of its own, which must be answered within `seconds`."""
    async with (
        aiohttp.ClientSession() as session,
        asyncio.timeout(seconds),
        session.get(f"{core.rest_url}{path}") as response,
    ):
        await response.read()
        return response.status


async def _idle(core: CoreProcess) -> asyncio.StreamWriter:
    """A kept-alive connection that had one request answered and now sits on it."""
    reader, writer = await asyncio.open_connection(*_host_port(core))
    writer.write(f"GET {HEALTH} HTTP/1.1\r\nHost: x\r\n\r\n".encode())
    head = await asyncio.wait_for(reader.readuntil(b"\r\n\r\n"), 10)
    length = int(
        next(li.split(b":")[1] for li in head.split(b"\r\n") if li.lower().startswith(b"content-length"))
    )
    await asyncio.wait_for(reader.readexactly(length), 10)
    return writer


async def _refused_stream(core: CoreProcess) -> asyncio.StreamWriter:
    """A connection that asked for an event stream over the streams' share, was answered 503, and sits
    on the kept-alive connection (a client that does not give up its sockets)."""
    reader, writer = await asyncio.open_connection(*_host_port(core))
    writer.write(b"GET /ws/v1/events/stream HTTP/1.1\r\nHost: x\r\n\r\n")
    assert (await asyncio.wait_for(reader.readline(), 10)).startswith(b"HTTP/1.1 503")
    return writer


async def _slow(core: CoreProcess) -> asyncio.StreamWriter:
    _, writer = await asyncio.open_connection(*_host_port(core))
    writer.write(f"GET {HEALTH} HTTP/1.1\r\nHost: x\r\n".encode())  # half a header
    await writer.drain()
    return writer


@pytest.fixture(scope="module")
def idle_tolerant_core() -> Iterator[CoreProcess]:
    """Long timeouts: idle, slow and refused connections stay until the cap pushes them out."""
    flags = ["--rest-header-timeout", "60", "--rest-idle-timeout", "60", "--rest-max-connections", str(CAP)]
    yield from running(CoreProcess(extra_args=[*flags, "--rest-max-event-streams", "4"]))


@pytest.mark.parametrize("mix", ["idle", "refused", "slow", "idle, refused, slow and streaming"])
async def test_the_probes_are_answered_within_a_second_whatever_fills_the_cap(
    idle_tolerant_core: CoreProcess, mix: str
) -> None:
    core = idle_tolerant_core
    writers: list[asyncio.StreamWriter] = []
    async with aiohttp.ClientSession(connector=aiohttp.TCPConnector(limit=0)) as session:
        streams = [await session.get(f"{core.rest_url}/ws/v1/events/stream") for _ in range(4)]
        try:
            kinds = {"idle": [_idle], "refused": [_refused_stream], "slow": [_slow]}.get(
                mix, [_idle, _refused_stream, _slow]
            )
            for i in range(2 * CAP):  # twice the cap: the newest push the others out
                writers.append(await kinds[i % len(kinds)](core))
            for _ in range(3):
                for path in (HEALTH, "/ws/v1/metrics"):
                    assert await _status_within(core, path, 1.0) == 200, (mix, path)
            assert all(stream.status == 200 for stream in streams)  # the streams were never pushed out
        finally:
            for stream in streams:
                stream.close()
            for writer in writers:
                writer.close()


@pytest.fixture(scope="module")
def small_core() -> Iterator[CoreProcess]:
    flags = ["--rest-header-timeout", "60", "--rest-idle-timeout", "60", "--rest-max-connections", "4"]
    yield from running(CoreProcess(extra_args=[*flags, "--rest-max-event-streams", "1"]))


async def test_clients_that_never_read_their_answers_cannot_hold_the_api(small_core: CoreProcess) -> None:
    """Each sends thousands of pipelined requests and reads nothing, so its answers pile up and the
    core's writes to it stall: at the cap such a connection is pushed out (what it was not sent is
    dropped), and every client is served, not only the probes."""
    core = small_core
    host, port = _host_port(core)
    requests = f"GET {HEALTH} HTTP/1.1\r\nHost: x\r\n\r\n".encode() * 3000
    before = await _pushed_out(core)
    sockets = []
    try:
        for _ in range(12):  # three times the cap
            sock = socket.socket()
            sock.setsockopt(socket.SOL_SOCKET, socket.SO_RCVBUF, 4096)  # so its answers fill it soon
            sock.connect((host, port))
            sock.setblocking(False)
            with contextlib.suppress(BlockingIOError):
                sock.send(requests)
            sockets.append(sock)
        for path in (HEALTH, "/ws/v1/metrics", "/ws/v1/partitions"):
            assert await _status_within(core, path, 1.0) == 200, path
        assert await _pushed_out(core) > before
    finally:
        for sock in sockets:
            sock.close()


async def _pushed_out(core: CoreProcess) -> int:
    """Connections pushed out to make room: stalled on answers their client does not read
    ("evicted_idle"), or, on a busy host where the core had not read their requests yet when the next
    came, before their header ("evicted"). Either way they no longer hold a place."""
    return await _closed_count("evicted_idle", core) + await _closed_count("evicted", core)


async def test_a_connection_let_in_for_a_probe_serves_that_probe_alone(patient_core: CoreProcess) -> None:
    """Over the cap, a kept-alive connection that asked for the healthcheck may not go on to another
    path: that request is answered 503, and the connection closed after its probe."""
    core = patient_core
    writers: list[asyncio.StreamWriter] = []
    try:
        for _ in range(CAP):  # every connection busy: a body that never comes whole
            reader, writer = await asyncio.open_connection(*_host_port(core))
            writers.append(writer)
            writer.write(b"POST /ws/v1/validate-conf HTTP/1.1\r\nHost: x\r\nContent-Length: 100\r\n"
                         b"Expect: 100-continue\r\n\r\n")  # fmt: skip
            assert await asyncio.wait_for(reader.readline(), 10) == b"HTTP/1.1 100 Continue\r\n"
        async with _connection(core) as (reader, writer):
            probe, other = (
                f"GET {HEALTH} HTTP/1.1\r\nHost: x\r\n\r\n",
                "GET /ws/v1/partitions HTTP/1.1\r\nHost: x\r\n\r\n",
            )
            writer.write((probe + other).encode())
            answer = await _closed_by_core(reader, within=10)
        assert answer.startswith(b"HTTP/1.1 200"), answer
        assert (
            b"/ws/v1/partitions" not in answer and answer.count(b"HTTP/1.1 ") == 1
        )  # closed after its probe
    finally:
        for writer in writers:
            writer.close()
