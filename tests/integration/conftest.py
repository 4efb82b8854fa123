"""A real `pykorn core` process on a free loopback port, shared by the integration tests.

Each test registers its own rmID, so tests share the daemon the way several RMs would and stay
isolated by the core's own partition separation.
"""

from __future__ import annotations

import os
import signal
import subprocess
import sys
import tempfile
import time
from collections.abc import AsyncIterator, Iterator
from pathlib import Path

import pytest

from shim_fake.client import SchedulerClient


@pytest.fixture(scope="session")
def core_address() -> Iterator[str]:
    with tempfile.TemporaryDirectory(prefix="pykorn-it-") as tmp:
        port_file = Path(tmp, "port")
        log_path = Path(tmp, "core.log")
        with open(log_path, "wb") as log:
            proc = subprocess.Popen(
                [
                    sys.executable,
                    "-m",
                    "core.cli",
                    "core",
                    "--listen",
                    "127.0.0.1:0",
                    "--port-file",
                    str(port_file),
                    "--log-format",
                    "json",
                ],
                stdout=log,
                stderr=log,
                env={**os.environ, "PYTHONUNBUFFERED": "1"},
            )
            deadline = time.monotonic() + 30
            while not (port_file.exists() and port_file.read_text().strip()):
                if proc.poll() is not None or time.monotonic() > deadline:
                    proc.kill()
                    raise RuntimeError(f"core did not start:\n{log_path.read_text()}")
                time.sleep(0.05)
            try:
                yield f"127.0.0.1:{int(port_file.read_text())}"
            finally:
                proc.send_signal(signal.SIGTERM)
                try:
                    code = proc.wait(timeout=20)
                except subprocess.TimeoutExpired:
                    proc.kill()
                    raise
                assert code == 0, f"core exited with {code}:\n{log_path.read_text()[-4000:]}"
                assert "Traceback" not in log_path.read_text(), log_path.read_text()[-4000:]


@pytest.fixture
def rm_id(request: pytest.FixtureRequest) -> str:
    return "rm-" + request.node.name.replace("[", "-").replace("]", "")


@pytest.fixture
async def client(core_address: str, rm_id: str) -> AsyncIterator[SchedulerClient]:
    async with SchedulerClient(core_address, rm_id) as c:
        yield c
