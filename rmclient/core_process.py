"""Start and stop a real `pykorn core` process on a free loopback port.

Blocking (`start_blocking`/`stop_blocking`, for pytest session fixtures) and async (`start`/`stop`,
`async with`) faces share one implementation over subprocess.Popen.
"""

from __future__ import annotations

import asyncio
import os
import signal
import subprocess
import sys
import tempfile
import time
from collections.abc import Sequence
from pathlib import Path

import grpc
from grpc_health.v1 import health_pb2

from rmclient.tls import ClientTLS, open_channel


class CoreProcess:
    """`async with CoreProcess() as core:` gives `core.address`; leaving sends SIGTERM and waits."""

    def __init__(
        self,
        config: Path | None = None,
        log_file: Path | None = None,
        startup_timeout: float = 30.0,
        listen: str = "127.0.0.1:0",
        rest_listen: str = "127.0.0.1:0",
        extra_args: Sequence[str] = (),
        client_tls: ClientTLS | None = None,
        pykorn: Sequence[str] = (sys.executable, "-m", "pykorn_cli"),
    ):
        self.extra_args = list(extra_args)  # more `pykorn core` flags (grace period, limits, TLS)
        self.pykorn = list(pykorn)  # the command: this interpreter's, or another build's (benchmarks.compare)
        # How to reach a core started with --tls-cert (and a client certificate for --tls-client-ca):
        # `start()` checks health over it.
        self.client_tls = client_tls
        self.listen = listen  # a fixed address lets a test restart a core where its clients expect it
        self.config = config
        self.startup_timeout = startup_timeout
        self.process: subprocess.Popen[bytes] | None = None
        self.rest_listen = rest_listen
        self.port = 0
        self.rest_port = 0
        self.returncode: int | None = None
        self._signalled = False
        self._tmp = tempfile.TemporaryDirectory(prefix="pykorn-core-")
        self.log_path = log_file or Path(self._tmp.name, "core.log")
        self._port_file = Path(self._tmp.name, "port")
        self._rest_port_file = Path(self._tmp.name, "rest-port")

    @property
    def address(self) -> str:
        return f"127.0.0.1:{self.port}"

    @property
    def rest_url(self) -> str:
        scheme = "https" if "--rest-tls-cert" in self.extra_args else "http"
        return f"{scheme}://127.0.0.1:{self.rest_port}"

    def _spawn(self) -> None:
        args = [*self.pykorn, "core", "--listen", self.listen,
                "--port-file", str(self._port_file), "--log-format", "json",
                "--rest-listen", self.rest_listen, "--rest-port-file", str(self._rest_port_file)]  # fmt: skip
        if self.config is not None:
            args += ["--config", str(self.config)]
        args += self.extra_args
        # A restart must not read the previous run's ports.
        self._port_file.unlink(missing_ok=True)
        self._rest_port_file.unlink(missing_ok=True)
        self._signalled = False
        with open(self.log_path, "ab") as log:
            self.process = subprocess.Popen(
                args, stdout=log, stderr=log, env={**os.environ, "PYTHONUNBUFFERED": "1"}
            )

    def _port_ready(self, deadline: float) -> bool:
        """True once the port file is written; raises when the process died or time ran out."""
        assert self.process is not None
        text = self._port_file.read_text().strip() if self._port_file.exists() else ""
        if text:
            self.port = int(text)
            rest = self._rest_port_file.read_text().strip() if self._rest_port_file.exists() else ""
            self.rest_port = int(rest) if rest else 0  # written before the gRPC port
            return True
        if self.process.poll() is not None:
            raise RuntimeError(f"core exited with {self.process.returncode} on startup:\n{self.log_text()}")
        if time.monotonic() > deadline:
            self.stop_blocking()
            raise TimeoutError(f"core did not start within {self.startup_timeout}s:\n{self.log_text()}")
        return False

    def start_blocking(self) -> str:
        self._spawn()
        deadline = time.monotonic() + self.startup_timeout
        while not self._port_ready(deadline):
            time.sleep(0.05)
        return self.address

    async def start(self) -> str:
        self._spawn()
        deadline = time.monotonic() + self.startup_timeout
        while not self._port_ready(deadline):
            await asyncio.sleep(0.05)
        await self._wait_serving(deadline)
        return self.address

    async def _wait_serving(self, deadline: float) -> None:
        async with open_channel(self.address, self.client_tls) as channel:
            # The health service's Check, called by name (the typeshed stub of HealthStub lacks it).
            check = channel.unary_unary(
                "/grpc.health.v1.Health/Check",
                request_serializer=health_pb2.HealthCheckRequest.SerializeToString,
                response_deserializer=health_pb2.HealthCheckResponse.FromString,
            )
            while True:
                try:
                    reply = await check(health_pb2.HealthCheckRequest(service=""), timeout=1.0)
                    if reply.status == health_pb2.HealthCheckResponse.SERVING:
                        return
                except grpc.aio.AioRpcError:
                    pass
                if time.monotonic() > deadline:
                    raise TimeoutError("core never reported SERVING")
                await asyncio.sleep(0.05)

    def _terminate(self) -> bool:
        """Send SIGTERM once if still running; False when there is nothing to stop.

        Once: a second SIGTERM could land after the daemon removed its handler while exiting.
        """
        if self.process is None:
            return False
        if self.process.poll() is None and not self._signalled:
            self._signalled = True
            self.process.send_signal(signal.SIGTERM)
        return True

    def stop_blocking(self, timeout: float = 15.0) -> int:
        """SIGTERM, then wait; SIGKILL if it does not go. Returns the exit code."""
        if not self._terminate():
            return 0
        assert self.process is not None
        try:
            self.returncode = self.process.wait(timeout)
        except subprocess.TimeoutExpired:
            self.process.kill()
            self.returncode = self.process.wait()
        return self.returncode

    def kill(self) -> int:
        """SIGKILL: the core dies at once, with no clean stream ends (a crash, an OOM kill)."""
        assert self.process is not None
        self.process.kill()
        self.returncode = self.process.wait()
        return self.returncode

    async def stop(self, timeout: float = 15.0) -> int:
        return await asyncio.to_thread(self.stop_blocking, timeout)

    def resident_mb(self) -> float:
        """The running core's resident set size (VmRSS, Linux's /proc), in MiB."""
        assert self.process is not None, "start() first"
        for line in Path(f"/proc/{self.process.pid}/status").read_text().splitlines():
            if line.startswith("VmRSS:"):
                return int(line.split()[1]) / 1024
        raise RuntimeError("no VmRSS in /proc: resident size unknown here")

    def log_text(self) -> str:
        return self.log_path.read_text() if self.log_path.exists() else ""

    async def __aenter__(self) -> CoreProcess:
        await self.start()
        return self

    async def __aexit__(self, *exc: object) -> None:
        await self.stop()
