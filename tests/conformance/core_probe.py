"""A resource manager that asks the core what it makes of a configuration, an application or a user,
through the interfaces every RM and every operator has: gRPC in, REST out.

A case registers (which drops whatever this RM had before), sends what the upstream table sets up, and
reads the answer a user would see: accepted or refused with reasons, the queue tree and placement rules
on REST, the queue an application landed in. Any gRPC status but OK and INVALID_ARGUMENT fails the case:
a configuration, however malformed, is accepted or refused with reasons, never answered with a crash.
"""

from __future__ import annotations

import hashlib
import re
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any
from urllib.parse import quote

import aiohttp
import grpc

from rmclient import messages
from tests.recording_client import RecordingClient

# A minimal valid configuration: what an RM registers with before a case sends its own by update.
OPEN_ROOT = """
partitions:
  - name: default
    queues:
      - name: root
        submitacl: "*"
"""


@dataclass(frozen=True)
class Verdict:
    """The core's answer to a configuration."""

    accepted: bool
    errors: tuple[str, ...] = ()
    warnings: tuple[str, ...] = ()

    def __bool__(self) -> bool:  # `assert await probe.update(text)` reads as "the core accepted it"
        return self.accepted


@dataclass(frozen=True)
class Placed:
    """Where an application went: `queue` when accepted, `reason` when refused."""

    queue: str = ""
    reason: str = ""

    @property
    def rejected(self) -> bool:
        return not self.queue


@dataclass
class CoreProbe:
    address: str
    rest_url: str
    name: str  # the test's name, made into this probe's rmID
    client: RecordingClient = field(init=False)
    _session: aiohttp.ClientSession | None = field(default=None, init=False)

    def __post_init__(self) -> None:
        readable = re.sub(r"[^A-Za-z0-9_.-]+", "-", self.name)[:48]
        digest = hashlib.sha1(self.name.encode()).hexdigest()[:10]
        self.client = RecordingClient(self.address, f"conf-{readable}-{digest}")

    @property
    def rm_id(self) -> str:
        return self.client.rm_id

    async def __aenter__(self) -> CoreProbe:
        await self.client.connect()
        self._session = aiohttp.ClientSession()
        return self

    async def __aexit__(self, *exc: object) -> None:
        await self.client.close()
        if self._session is not None:
            await self._session.close()

    # Configuration ------------------------------------------------------------------------------
    async def register(self, config: str) -> Verdict:
        """RegisterResourceManager with `config` (empty: the core's default); refused is a Verdict."""
        try:
            await self.client.register(config=config)
        except grpc.aio.AioRpcError as exc:
            assert exc.code() == grpc.StatusCode.INVALID_ARGUMENT, (
                f"registration answered {exc.code().name}, not OK or INVALID_ARGUMENT: {exc.details()}"
            )
            return Verdict(False, tuple((exc.details() or "").splitlines()))
        return Verdict(True)

    async def update(self, config: str) -> Verdict:
        """UpdateConfiguration with `config`, registering first with an open root if this RM has not."""
        if self.client._alloc is None:
            assert await self.register(OPEN_ROOT)
        try:
            answer = await self.client.update_configuration(config)
        except grpc.aio.AioRpcError as exc:
            raise AssertionError(f"UpdateConfiguration answered {exc.code().name}: {exc.details()}") from None
        return Verdict(answer.accepted, tuple(answer.errors), tuple(answer.warnings))

    async def validate(self, config: str) -> Verdict:
        """The configuration as a fresh RM would find it: registration with it."""
        return await self.register(config)

    # REST ---------------------------------------------------------------------------------------
    def partition_path(self, partition: str = "default") -> str:
        return f"/ws/v1/partition/{quote(f'[{self.rm_id}]{partition}', safe='')}"

    async def get(self, path: str, status: int = 200) -> Any:
        assert self._session is not None
        async with self._session.get(self.rest_url + path) as response:
            body = await response.json(content_type=None)
            assert response.status == status, (path, response.status, body)
            return body

    async def config_text(self) -> str:
        """/ws/v1/config for this RM: the configuration in force."""
        assert self._session is not None
        url = f"{self.rest_url}/ws/v1/config"
        async with self._session.get(url, params={"rmID": self.rm_id}) as response:
            assert response.status == 200, await response.text()
            return await response.text()

    async def queue_tree(self, partition: str = "default") -> dict[str, Any]:
        """The partition's queues as /ws/v1/partition/{p}/queues serves them."""
        result: dict[str, Any] = await self.get(self.partition_path(partition) + "/queues")
        return result

    async def queues(self, partition: str = "default") -> dict[str, dict[str, Any]]:
        """Every queue of the partition by its full path (lower case, as the core names them)."""
        out: dict[str, dict[str, Any]] = {}
        stack = [await self.queue_tree(partition)]
        while stack:
            queue = stack.pop()
            out[queue["queuename"]] = queue
            stack.extend(queue.get("children") or [])
        return out

    async def placement_rules(self, partition: str = "default") -> list[dict[str, Any]]:
        result: list[dict[str, Any]] = await self.get(self.partition_path(partition) + "/placementrules")
        return result

    # Applications -------------------------------------------------------------------------------
    async def place(
        self,
        app_id: str,
        queue: str = "",
        user: str = "nobody",
        groups: Sequence[str] = (),
        tags: Mapping[str, str] | None = None,
        partition: str = "default",
    ) -> Placed:
        """Submit an application and say where the core placed it (or why it refused it)."""
        seen = self.client.seen

        def answer() -> str | None:  # "" accepted, a reason rejected, None not answered yet
            if app_id in seen.accepted_apps:
                return ""
            return next((r.reason for r in seen.rejected_apps if r.applicationID == app_id), None)

        assert answer() is None, f"application {app_id} was sent before in this case"
        await self.client.add_applications(
            messages.application(app_id, queue, partition, user, tuple(groups), dict(tags or {}))
        )
        await self.client.wait_for(lambda: answer() is not None, 10.0, f"the answer to {app_id}")
        if reason := answer():
            return Placed(reason=reason)
        app = await self.get(f"{self.partition_path(partition)}/application/{quote(app_id, safe='')}")
        return Placed(queue=app["queueName"])
