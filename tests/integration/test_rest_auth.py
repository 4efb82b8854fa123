"""The REST API of a real `pykorn core` served over TLS and guarded by a bearer token."""

from __future__ import annotations

import secrets
import ssl
import subprocess
import sys
from collections.abc import AsyncIterator, Iterator
from pathlib import Path

import aiohttp
import pytest

from rmclient.core_process import CoreProcess
from tests.integration.core_helpers import running
from tests.tls_certs import PKI, make_pki

HEALTHCHECK = "/ws/v1/scheduler/healthcheck"


@pytest.fixture(scope="module")
def pki(tmp_path_factory: pytest.TempPathFactory) -> PKI:
    return make_pki(tmp_path_factory.mktemp("rest-pki"))


@pytest.fixture(scope="module")
def token_file(tmp_path_factory: pytest.TempPathFactory) -> Path:
    path = tmp_path_factory.mktemp("rest-token") / "token"
    path.write_text(f"tok-{secrets.token_hex(16)}\n")  # the trailing newline is not part of the token
    return path


@pytest.fixture(scope="module")
def token(token_file: Path) -> str:
    return token_file.read_text().strip()


@pytest.fixture(scope="module")
def core(pki: PKI, token_file: Path) -> Iterator[CoreProcess]:
    args = ["--rest-tls-cert", str(pki.server.cert), "--rest-tls-key", str(pki.server.key)]
    yield from running(CoreProcess(extra_args=[*args, "--rest-token-file", str(token_file)]))


@pytest.fixture
async def session(pki: PKI) -> AsyncIterator[aiohttp.ClientSession]:
    trust = ssl.create_default_context(cafile=pki.ca)
    async with aiohttp.ClientSession(connector=aiohttp.TCPConnector(ssl=trust)) as session:
        yield session


async def _get(
    session: aiohttp.ClientSession, url: str, authorization: str | None = None
) -> tuple[int, dict[str, str], object]:
    headers = {"Authorization": authorization} if authorization is not None else {}
    async with session.get(url, headers=headers) as response:
        return response.status, dict(response.headers), await response.json()


async def test_the_api_is_served_over_https(core: CoreProcess) -> None:
    assert core.rest_url.startswith("https://")


@pytest.mark.parametrize(
    "authorization",
    [
        None,
        "Bearer wrong-token",
        "Bearer ",
        "Basic dXNlcjpwYXNz",
        "{token}",
        "Bearer {half}",
        "Bearer {token}x",
    ],
    ids=["missing", "wrong", "empty", "basic", "no-scheme", "prefix", "longer"],
)
async def test_requests_without_the_right_token_are_401(
    core: CoreProcess, session: aiohttp.ClientSession, token: str, authorization: str | None
) -> None:
    header = (
        None if authorization is None else authorization.format(token=token, half=token[: len(token) // 2])
    )
    status, headers, body = await _get(session, f"{core.rest_url}/ws/v1/partitions", header)
    assert status == 401
    assert headers["WWW-Authenticate"].startswith("Bearer")
    assert isinstance(body, dict) and body["status_code"] == 401
    assert body["message"].startswith("unauthorized") and "Authorization: Bearer" in body["description"]
    assert token not in str(body)


async def test_the_right_token_is_let_in(
    core: CoreProcess, session: aiohttp.ClientSession, token: str
) -> None:
    status, _, body = await _get(session, f"{core.rest_url}/ws/v1/partitions", f"Bearer {token}")
    assert status == 200 and isinstance(body, list)
    # The scheme is case-insensitive (RFC 7235), the token is not.
    status, _, _ = await _get(session, f"{core.rest_url}/ws/v1/partitions", f"bearer {token}")
    assert status == 200
    status, _, _ = await _get(session, f"{core.rest_url}/ws/v1/partitions", f"Bearer {token.upper()}")
    assert status == 401


async def test_unknown_paths_and_posts_need_the_token_too(
    core: CoreProcess, session: aiohttp.ClientSession, token: str
) -> None:
    status, _, _ = await _get(session, f"{core.rest_url}/ws/v1/no-such-thing")
    assert status == 401  # no probing for endpoints without the token
    status, _, _ = await _get(session, f"{core.rest_url}/ws/v1/no-such-thing", f"Bearer {token}")
    assert status == 404
    async with session.post(f"{core.rest_url}/ws/v1/validate-conf", data="partitions: []") as response:
        assert response.status == 401


async def test_the_healthcheck_is_open_without_a_token(
    core: CoreProcess, session: aiohttp.ClientSession
) -> None:
    status, _, body = await _get(session, f"{core.rest_url}{HEALTHCHECK}")
    assert status == 200 and isinstance(body, dict) and body["Healthy"] is True


async def test_plain_http_and_untrusted_clients_get_nothing(core: CoreProcess, pki: PKI) -> None:
    plain_url = core.rest_url.replace("https://", "http://")
    async with aiohttp.ClientSession() as plain:
        with pytest.raises(aiohttp.ClientError):
            async with plain.get(f"{plain_url}{HEALTHCHECK}") as response:
                await response.read()
    untrusted = ssl.create_default_context(cafile=pki.other_ca)
    async with aiohttp.ClientSession(connector=aiohttp.TCPConnector(ssl=untrusted)) as session:
        with pytest.raises(aiohttp.ClientConnectorCertificateError):
            await session.get(f"{core.rest_url}{HEALTHCHECK}")


def _status(*args: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [sys.executable, "-m", "pykorn_cli", "status", *args], capture_output=True, text=True, timeout=60
    )


def test_pykorn_status_reads_an_https_core_with_its_token(
    core: CoreProcess, pki: PKI, token_file: Path
) -> None:
    result = _status("--core-rest", core.rest_url, "--ca-cert", str(pki.ca), "--token-file", str(token_file))
    assert result.returncode == 0, result.stderr
    refused = _status("--core-rest", core.rest_url, "--ca-cert", str(pki.ca))
    assert refused.returncode == 1
    assert "answered 401" in refused.stderr and "--token-file" in refused.stderr
