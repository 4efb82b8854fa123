"""Start and stop a real `pykorn core` process on a free loopback port."""

from __future__ import annotations

import asyncio
import os
import signal
import sys
import tempfile
from pathlib import Path

import grpc
from grpc_health.v1 import health_pb2, health_pb2_grpc


class CoreProcess:
    """`async with CoreProcess() as core:` gives `core.address`; leaving sends SIGTERM and waits."""

    def __init__(
        self, config: Path | None = None, log_file: Path | None = None, startup_timeout: float = 20.0
    ):
        self.config = config
        self.log_file = log_file
        self.startup_timeout = startup_timeout
        self.process: asyncio.subprocess.Process | None = None
        self.port = 0
        self.returncode: int | None = None
        self._tmp = tempfile.TemporaryDirectory(prefix="pykorn-core-")

    @property
    def address(self) -> str:
        return f"127.0.0.1:{self.port}"

    async def start(self) -> str:
        port_file = Path(self._tmp.name, "port")
        args = [
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
        ]
        if self.config is not None:
            args += ["--config", str(self.config)]
        log_path = self.log_file or Path(self._tmp.name, "core.log")
        self._log = open(log_path, "ab")  # noqa: SIM115 - closed in stop()
        self.process = await asyncio.create_subprocess_exec(
            *args, stdout=self._log, stderr=self._log, env={**os.environ, "PYTHONUNBUFFERED": "1"}
        )
        loop = asyncio.get_running_loop()
        deadline = loop.time() + self.startup_timeout
        while not port_file.exists() or not port_file.read_text().strip():
            if self.process.returncode is not None:
                raise RuntimeError(f"core exited with {self.process.returncode} on startup; log: {log_path}")
            if loop.time() > deadline:
                await self.stop()
                raise TimeoutError(f"core did not start within {self.startup_timeout}s; log: {log_path}")
            await asyncio.sleep(0.05)
        self.port = int(port_file.read_text())
        await self._wait_serving(deadline)
        return self.address

    async def _wait_serving(self, deadline: float) -> None:
        async with grpc.aio.insecure_channel(self.address) as channel:
            stub = health_pb2_grpc.HealthStub(channel)
            loop = asyncio.get_running_loop()
            while True:
                try:
                    reply = await stub.Check(health_pb2.HealthCheckRequest(service=""), timeout=1.0)
                    if reply.status == health_pb2.HealthCheckResponse.SERVING:
                        return
                except grpc.aio.AioRpcError:
                    pass
                if loop.time() > deadline:
                    raise TimeoutError("core never reported SERVING")
                await asyncio.sleep(0.05)

    async def stop(self, timeout: float = 15.0) -> int:
        """SIGTERM, then wait; SIGKILL if it does not go. Returns the exit code."""
        if self.process is None:
            return 0
        if self.process.returncode is None:
            self.process.send_signal(signal.SIGTERM)
            try:
                await asyncio.wait_for(self.process.wait(), timeout)
            except TimeoutError:
                self.process.kill()
                await self.process.wait()
        self.returncode = self.process.returncode
        self._log.close()
        return self.returncode if self.returncode is not None else -1

    def log_text(self) -> str:
        path = self.log_file or Path(self._tmp.name, "core.log")
        return path.read_text() if path.exists() else ""

    async def __aenter__(self) -> CoreProcess:
        await self.start()
        return self

    async def __aexit__(self, *exc: object) -> None:
        await self.stop()
