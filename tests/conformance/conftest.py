"""One real `pykorn core` process for the conformance suites; each test drives it as its own RM.

The suites hold pykorn to the anchors' own table tests (yunikorn-core's, kube-scheduler's) through the
interfaces a user has: gRPC registration, UpdateConfiguration and the three streams in, REST reads out.
"""

from __future__ import annotations

from collections.abc import AsyncIterator, Iterator

import pytest

from rmclient.core_process import CoreProcess
from tests.conformance.core_probe import CoreProbe
from tests.integration.core_helpers import running


@pytest.fixture(scope="session")
def conformance_core() -> Iterator[CoreProcess]:
    yield from running(CoreProcess())


@pytest.fixture
async def probe(conformance_core: CoreProcess, request: pytest.FixtureRequest) -> AsyncIterator[CoreProbe]:
    """A registered-on-demand RM of its own, named after the test (each case gets a fresh rmID)."""
    name = request.node.name
    async with CoreProbe(conformance_core.address, conformance_core.rest_url, name) as core_probe:
        yield core_probe
