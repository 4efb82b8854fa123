"""A real `pykorn core` process on a free loopback port, shared by the integration tests.

Each test registers its own rmID, so tests share the daemon the way several RMs would and stay
isolated by the core's own partition separation.
"""

from __future__ import annotations

from collections.abc import AsyncIterator, Iterator

import pytest

from rmclient.core_process import CoreProcess
from tests.integration.admission_helpers import serving_webhook
from tests.integration.core_helpers import running
from tests.integration.kube_api import FakeKubeAPI
from tests.integration.kube_rbac import RBAC
from tests.integration.manifests import render
from tests.integration.postgres import PostgresServer
from tests.recording_client import RecordingClient
from tests.tls_certs import PKI, make_pki


@pytest.fixture(scope="session")
def core_process() -> Iterator[CoreProcess]:
    yield from running(CoreProcess())


@pytest.fixture(scope="session")
def core_address(core_process: CoreProcess) -> str:
    return core_process.address


@pytest.fixture(scope="session")
def rest_url(core_process: CoreProcess) -> str:
    assert core_process.rest_port, "the core did not report its REST port"
    return core_process.rest_url


@pytest.fixture
async def own_core() -> AsyncIterator[CoreProcess]:
    """A core of the test's own, for what the shared one cannot show (its metrics from a clean start,
    its settings, a core idle of other tests' work)."""
    process = CoreProcess()
    await process.start()
    try:
        yield process
    finally:
        await process.stop()


@pytest.fixture
def rm_id(request: pytest.FixtureRequest) -> str:
    return "rm-" + request.node.name.replace("[", "-").replace("]", "")


@pytest.fixture
async def client(core_address: str, rm_id: str) -> AsyncIterator[RecordingClient]:
    async with RecordingClient(core_address, rm_id) as c:
        yield c


@pytest.fixture
async def api() -> AsyncIterator[FakeKubeAPI]:
    """The HTTP emulation of the Kubernetes API server, fresh for each test, enforcing the roles of
    deploy/kubernetes as rendered: the shim and the admission controller run as its ServiceAccounts
    (`api.kubeconfig(SCHEDULER_SA)`), and a request those roles do not grant is answered 403."""
    fake = FakeKubeAPI(RBAC.from_manifests(render()))
    await fake.start()
    yield fake
    await fake.stop()
    # A forbidden request the code under test got past (an event dropped, say) is a role that lacks a
    # rule: it fails the test that made it, unless that test removed the rule on purpose.
    if not fake.forbidden_expected:
        assert not fake.forbidden, f"requests the rendered roles do not grant: {fake.forbidden}"


@pytest.fixture(scope="module")
def pki(tmp_path_factory: pytest.TempPathFactory) -> PKI:
    """A CA and a serving certificate for the admission webhook."""
    return make_pki(tmp_path_factory.mktemp("webhook-pki"))


@pytest.fixture
async def webhook(api: FakeKubeAPI, pki: PKI, rest_url: str) -> AsyncIterator[str]:
    """`pykorn admission` serving over TLS against the API emulation (tests/integration/admission_helpers)."""
    async for url in serving_webhook(api, pki, rest_url):
        yield url


@pytest.fixture(scope="session")
def postgres() -> Iterator[PostgresServer]:
    """A PostgreSQL cluster of the run's own (Debian's package, initdb in a temporary directory)."""
    server = PostgresServer()
    server.start()
    try:
        yield server
    finally:
        server.close()
