"""The shim's lean HTTP/1.1 client against a server on loopback that answers with scripted bytes: the
answer framings the API server uses, connection reuse, and every way an answer can fail to come."""

from __future__ import annotations

import asyncio
import ssl
from collections.abc import AsyncIterator, Awaitable, Callable
from pathlib import Path

import pytest
from kubernetes.config import incluster_config

from shim_k8s.api.http1 import Answer, Http1Pool, HttpProtocolError
from shim_k8s.api.kube_http import TRANSPORT_ERRORS, KubeHTTP
from shim_k8s.api.kubeconfig import cluster_access
from tests.tls_certs import make_pki

HEADERS = b"Accept: application/json\r\n"
KUBECONFIG = """apiVersion: v1
kind: Config
clusters: [{name: c, cluster: {server: "%(server)s"}}]
users: [{name: u, user: %(user)s}]
contexts: [{name: x, context: {cluster: c, user: u}}]
current-context: x
"""


Script = Callable[[bytes, bytes], tuple[list[bytes], bool]]  # (pieces to write, then close)


class ScriptedServer:
    """Reads one request head (and its Content-Length body) at a time and writes the pieces `script`
    gives for it, each apart (an answer may come in parts); then closes the connection if told to."""

    def __init__(self, script: Script) -> None:
        self.script = script
        self.connections = 0
        self.requests: list[tuple[bytes, bytes]] = []  # (head, body)
        self.server: asyncio.Server | None = None

    async def start(self) -> ScriptedServer:
        self.server = await asyncio.start_server(self._serve, "127.0.0.1", 0)
        return self

    async def _serve(self, reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
        self.connections += 1
        try:
            while True:
                head = await reader.readuntil(b"\r\n\r\n")
                length = 0
                for line in head.split(b"\r\n"):
                    if line.lower().startswith(b"content-length:"):
                        length = int(line.split(b":", 1)[1])
                body = await reader.readexactly(length)
                self.requests.append((head, body))
                pieces, close = self.script(head, body)
                for piece in pieces:
                    writer.write(piece)
                    await writer.drain()
                if close:
                    break
        except (asyncio.IncompleteReadError, ConnectionError):
            pass
        finally:
            writer.close()

    @property
    def url(self) -> str:
        assert self.server is not None
        return f"http://127.0.0.1:{self.server.sockets[0].getsockname()[1]}"


@pytest.fixture
async def servers() -> AsyncIterator[Callable[[Script], Awaitable[ScriptedServer]]]:
    started: list[ScriptedServer] = []

    async def start(script: Script) -> ScriptedServer:
        started.append(await ScriptedServer(script).start())
        return started[-1]

    yield start
    for server in started:
        assert server.server is not None
        server.server.close()


Servers = Callable[[Script], Awaitable[ScriptedServer]]


def _created(body: bytes) -> tuple[list[bytes], bool]:
    head = b"HTTP/1.1 201 Created\r\nContent-Type: application/json\r\nContent-Length: %d\r\n\r\n" % len(body)
    return [head, body], False


async def test_requests_reuse_one_keep_alive_connection_and_send_what_was_asked(servers: Servers) -> None:
    server = await servers(lambda head, body: _created(b'{"kind":"Status"}'))
    pool = Http1Pool(server.url)
    answers = [await pool.request("POST", "/api/v1/x?dryRun=All", HEADERS, b'{"a":1}', 5.0) for _ in range(3)]
    assert answers == [Answer(201, "Created", b'{"kind":"Status"}')] * 3
    assert server.connections == 1 and pool.opened == 1
    head, body = server.requests[0]
    assert head.startswith(b"POST /api/v1/x?dryRun=All HTTP/1.1\r\n") and b"Content-Length: 7\r\n" in head
    assert b"Host: 127.0.0.1:" in head and b"Accept: application/json\r\n" in head and body == b'{"a":1}'
    pool.close()


async def test_a_chunked_answer_in_pieces_with_trailers_after_an_interim_answer(servers: Servers) -> None:
    pieces = [b"HTTP/1.1 100 Continue\r\n\r\n", b"HTTP/1.1 200 OK\r\nTransfer-Encoding: chunked\r\n\r\n",
              b"5\r\nhel", b"lo\r\n6;ext=1\r\n world\r\n", b"0\r\nX-Trailer: 1\r\n", b"\r\n"]  # fmt: skip
    server = await servers(lambda head, body: (pieces, False))
    pool = Http1Pool(server.url)
    for _ in range(2):
        assert await pool.request("GET", "/healthz", HEADERS, None, 5.0) == Answer(200, "OK", b"hello world")
    assert server.connections == 1
    pool.close()


async def test_an_answer_that_ends_the_connection_is_read_whole_and_the_connection_not_reused(
    servers: Servers,
) -> None:
    close_after = await servers(
        lambda head, body: ([b"HTTP/1.1 200 OK\r\nConnection: close\r\nContent-Length: 2\r\n\r\n{}"], True)
    )
    to_eof = await servers(lambda head, body: ([b"HTTP/1.0 200 OK\r\n\r\nall ", b"of it"], True))
    for server, body in ((close_after, b"{}"), (to_eof, b"all of it")):
        pool = Http1Pool(server.url)
        for _ in range(2):
            assert await pool.request("GET", "/a", HEADERS, None, 5.0) == Answer(200, "OK", body)
        assert server.connections == 2 and pool.opened == 2
        pool.close()


@pytest.mark.parametrize(
    ("pieces", "error"),
    [
        ([], ConnectionResetError),  # closed with no answer
        ([b"HTTP/1.1 200 OK\r\nContent-Length: 10\r\n\r\nshort"], HttpProtocolError),  # cut in the body
        ([b"HTTP/1.1 200 OK\r\nTransfer-Encoding: chunked\r\n\r\n5\r\nab"], HttpProtocolError),
        ([b"HTTP/1.1 200 OK\r\nContent-Le"], HttpProtocolError),  # cut in the head
        ([b"SSH-2.0-OpenSSH\r\n\r\n"], HttpProtocolError),  # not HTTP
        ([b"HTTP/1.1 2x0 OK\r\n\r\n"], HttpProtocolError),
        ([b"HTTP/1.1 200 OK\r\nTransfer-Encoding: chunked\r\n\r\nzz\r\n"], HttpProtocolError),
    ],
)
async def test_an_answer_that_does_not_come_whole_is_a_transport_error(
    servers: Servers, pieces: list[bytes], error: type[Exception]
) -> None:
    server = await servers(lambda head, body: (pieces, True))
    pool = Http1Pool(server.url)
    with pytest.raises(error) as raised:
        await pool.request("POST", "/api/v1/x", HEADERS, b"{}", 5.0)
    assert isinstance(raised.value, TRANSPORT_ERRORS)  # what the shim's writes retry or report
    assert not pool._idle  # a connection in an unknown state is never used again
    pool.close()


async def test_no_answer_in_time_is_a_timeout_and_the_connection_is_dropped(servers: Servers) -> None:
    answer: list[tuple[list[bytes], bool]] = [([], False)]  # reads the request, never answers
    server = await servers(lambda head, body: answer[0])
    pool = Http1Pool(server.url)
    with pytest.raises(TimeoutError):
        await pool.request("POST", "/api/v1/x", HEADERS, b"{}", 0.05)
    assert not pool._idle
    answer[0] = _created(b"{}")
    assert (await pool.request("POST", "/api/v1/x", HEADERS, b"{}", 5.0)).status == 201
    assert server.connections == 2
    pool.close()


async def test_each_request_times_out_at_its_own_deadline_whatever_came_before_it(servers: Servers) -> None:
    """One timer serves every request (shim_k8s.api.http1._Deadlines): a short timeout sent after a
    long one still ends on time, and the long one, answered meanwhile, is not touched by it."""
    waiting = asyncio.Event()

    def script(head: bytes, body: bytes) -> tuple[list[bytes], bool]:
        if b"/never" in head:
            waiting.set()
            return [], False
        return _created(b"{}")

    server = await servers(script)
    pool = Http1Pool(server.url)
    patient = asyncio.create_task(pool.request("GET", "/api/v1/never", HEADERS, None, 30.0))
    await waiting.wait()  # the long one is on the server, unanswered
    with pytest.raises(TimeoutError):
        await pool.request("GET", "/api/v1/never", HEADERS, None, 0.05)
    assert not patient.done()  # its own deadline is far off
    assert (await pool.request("POST", "/api/v1/x", HEADERS, b"{}", 0.05)).status == 201
    patient.cancel()
    with pytest.raises(asyncio.CancelledError):
        await patient
    assert not pool._deadlines._waiting  # nothing left behind for the timer
    pool.close()


async def test_a_path_prefix_in_the_server_url_is_kept(servers: Servers) -> None:
    server = await servers(lambda head, body: _created(b"{}"))
    pool = Http1Pool(server.url + "/k8s/clusters/c-1/")
    await pool.request("GET", "/api/v1/nodes/n1", HEADERS, None, 5.0)
    assert server.requests[0][0].startswith(b"GET /k8s/clusters/c-1/api/v1/nodes/n1 HTTP/1.1\r\n")
    pool.close()


async def test_over_tls_the_server_is_verified_against_the_ca(tmp_path: Path) -> None:
    pki = make_pki(tmp_path)
    serving = ssl.create_default_context(ssl.Purpose.CLIENT_AUTH)
    serving.load_cert_chain(pki.server.cert, pki.server.key)
    server = ScriptedServer(lambda head, body: _created(b"{}"))
    server.server = await asyncio.start_server(server._serve, "127.0.0.1", 0, ssl=serving)
    url = server.url.replace("http://", "https://")
    trusting = ssl.create_default_context(cafile=str(pki.ca))
    pool = Http1Pool(url, trusting)
    assert (await pool.request("POST", "/api/v1/x", HEADERS, b"{}", 5.0)).status == 201
    pool.close()
    strange = Http1Pool(url, ssl.create_default_context(cafile=str(pki.other_ca)))
    with pytest.raises(ssl.SSLCertVerificationError) as raised:
        await strange.request("POST", "/api/v1/x", HEADERS, b"{}", 5.0)
    assert isinstance(raised.value, TRANSPORT_ERRORS)
    assert len(server.requests) == 1  # nothing was sent to a server the client does not trust
    server.server.close()


@pytest.mark.parametrize(
    ("user", "header"),
    [("{token: s3cret}", b"Bearer s3cret"), ("{username: ada, password: pw}", b"Basic YWRhOnB3")],
)
async def test_the_kubeconfigs_credentials_go_with_every_write_and_list(
    servers: Servers, tmp_path: Path, user: str, header: bytes
) -> None:
    items = b'{"kind":"PodList","metadata":{"resourceVersion":"7"},"items":[]}'
    server = await servers(lambda head, body: _created(items if head.startswith(b"GET") else b"{}"))
    kubeconfig = tmp_path / "kubeconfig"
    kubeconfig.write_text(KUBECONFIG % {"server": server.url, "user": user})
    http = KubeHTTP(cluster_access(str(kubeconfig)))
    try:
        await http.request(
            "POST", "/api/v1/namespaces/shop/pods/web-1/binding", {"kind": "Binding"}, answer=False
        )
        assert await http.list("/api/v1/pods") == ([], "7")
    finally:
        await http.close()
    heads = [head for head, _ in server.requests]
    assert [h.split(b" ", 2)[:2] for h in heads] == [
        [b"POST", b"/api/v1/namespaces/shop/pods/web-1/binding"],
        [b"GET", b"/api/v1/pods"],
    ]
    assert all(b"\r\nAuthorization: " + header + b"\r\n" in head for head in heads)
    assert all(b"\r\nUser-Agent: pykorn-k8s-shim\r\n" in head for head in heads)


async def test_in_a_pod_the_service_account_is_used_over_verified_tls(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """As the shim runs in a cluster: the API server from KUBERNETES_SERVICE_HOST/PORT, its
    certificate checked against the service account's CA, the service account's token sent."""
    pki = make_pki(tmp_path)
    serving = ssl.create_default_context(ssl.Purpose.CLIENT_AUTH)
    serving.load_cert_chain(pki.server.cert, pki.server.key)
    server = ScriptedServer(lambda head, body: _created(b"{}"))
    server.server = await asyncio.start_server(server._serve, "127.0.0.1", 0, ssl=serving)
    token = tmp_path / "token"
    token.write_text("service-account-token")
    monkeypatch.setattr(incluster_config, "SERVICE_TOKEN_FILENAME", str(token))
    monkeypatch.setattr(incluster_config, "SERVICE_CERT_FILENAME", str(pki.ca))
    monkeypatch.setenv("KUBERNETES_SERVICE_HOST", "127.0.0.1")
    monkeypatch.setenv("KUBERNETES_SERVICE_PORT", str(server.server.sockets[0].getsockname()[1]))
    http = KubeHTTP(cluster_access())
    try:
        await http.request("POST", "/api/v1/namespaces/shop/pods/web-1/binding", {"kind": "Binding"})
    finally:
        await http.close()
        server.server.close()
    ((head, _),) = server.requests
    # The scheme as the official client writes it for a service account ("bearer"; schemes are
    # case-insensitive).
    assert b"\r\nauthorization: bearer service-account-token\r\n" in head.lower()
