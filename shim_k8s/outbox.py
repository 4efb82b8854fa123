"""What the Kubernetes shim sends the core about pods, in the order the informers saw it: new
applications and asks gathered and sent in batches, releases after the asks gathered before them.

Inside `batch()` (the main loop, around what the informers delivered at once) applications and asks are
gathered and sent at the end: the applications in one request, then, once the core has answered every
one of them, the asks in one request (an application's asks must not reach the core before it: they
travel on another stream), less those of an application the core rejected. So a burst of pods of
many applications costs one round trip per batch, not one per application. Anything that must not
overtake them (a release, a node change) sends them first (`flush`). What must reach the core before
the next message waits for the core's answer (`until_answered`).
"""

from __future__ import annotations

import asyncio
import contextlib
from collections.abc import AsyncIterator, Awaitable, Callable, Iterable

from rmclient.client import SchedulerClient
from si.v1 import si_pb2

ASK_BATCH = 1_000  # asks gathered in a batch before they are sent anyway
APP_BATCH = 1_000  # new applications the same (a request stays far below gRPC's 4 MiB message limit)
# What is done once the core has answered a new application: with the core's reason when it rejected
# it, None when it accepted it.
Answered = Callable[[str | None], Awaitable[None]]


class Outbox:
    def __init__(self, client: SchedulerClient) -> None:
        self.client = client
        self._asks: list[si_pb2.Allocation] = []  # asks gathered in a batch
        self._apps: list[tuple[si_pb2.AddApplicationRequest, Answered]] = []  # new ones, not sent yet
        self._batching = 0
        self._answered: set[str] = set()  # applications the core answered, since they were sent
        self._rejected: dict[str, str] = {}  # those it rejected -> its reason
        # One flush at a time: a decision's release must not send asks whose applications another
        # flush has sent and waits to hear answered.
        self._flushing = asyncio.Lock()

    @contextlib.asynccontextmanager
    async def batch(self) -> AsyncIterator[None]:
        """Gather the asks made inside, and send them in one request at the end."""
        self._batching += 1
        try:
            yield
        finally:
            self._batching -= 1
        if not self._batching:
            await self.flush()

    async def flush(self) -> None:
        """Send what is gathered: the new applications first (answered before anything else goes),
        then the asks."""
        if not self._apps and not self._asks:
            return
        answers: list[tuple[Answered, str | None]] = []
        async with self._flushing:
            if self._apps:
                answers = await self._send_applications()
            if self._asks:
                asks, self._asks = self._asks, []
                await self.client.asks(asks)
        # After the lock: what is done on an answer may send in turn (a gang's placeholder pods, whose
        # echo an in-memory API hands straight back).
        for answered, refused in answers:
            await answered(refused)

    async def application(self, request: si_pb2.AddApplicationRequest, answered: Answered) -> None:
        """A new application: sent with its batch (now, outside one), before any ask; `answered` is
        awaited once the core has answered it."""
        self._apps.append((request, answered))
        if not self._batching or len(self._apps) >= APP_BATCH:
            await self.flush()

    def applications_answered(self, response: si_pb2.ApplicationResponse) -> None:
        """The core's answer to applications sent (called as it arrives)."""
        self._answered.update(a.applicationID for a in response.accepted)
        for rejected in response.rejected:
            self._answered.add(rejected.applicationID)
            self._rejected[rejected.applicationID] = rejected.reason

    async def _send_applications(self) -> list[tuple[Answered, str | None]]:
        """Send the gathered applications and wait for every answer; what to call back, with each
        one's refusal (None: accepted). A rejected application's asks are dropped."""
        apps, self._apps = self._apps, []
        ids = [request.applicationID for request, _ in apps]
        for app_id in ids:
            self._answered.discard(app_id)
            self._rejected.pop(app_id, None)
        await self.client.add_applications(*(request for request, _ in apps))
        what = f"application {ids[0]}" if len(ids) == 1 else f"{len(ids)} applications"
        await self.until_answered(lambda: all(a in self._answered for a in ids), what)
        refused = {app_id: self._rejected.pop(app_id, "") for app_id in ids if app_id in self._rejected}
        if refused:  # their asks never go
            self._asks = [a for a in self._asks if a.applicationID not in refused]
        self._answered.difference_update(ids)
        return [(answered, refused.get(app_id)) for app_id, (_, answered) in zip(ids, apps, strict=True)]

    async def ask(self, ask: si_pb2.Allocation) -> None:
        """An ask, or an existing allocation: sent now, or with its batch."""
        self._asks.append(ask)
        if not self._batching or len(self._asks) >= ASK_BATCH:
            await self.flush()

    async def release(self, app_id: str, uid: str, message: str = "") -> None:
        """Release a pod's ask or allocation, after the asks gathered before it (its own among them)."""
        await self.flush()
        await self.client.release(app_id, uid, message=message)

    async def release_many(
        self, items: Iterable[tuple[str, str]], termination: si_pb2.TerminationType
    ) -> None:
        """Release (application, pod) pairs in one request, after the asks gathered before them."""
        await self.flush()
        await self.client.release_many(items, termination=termination)

    def clear(self) -> None:
        """Drop what is gathered: the core it was for is gone, and the re-sync sends afresh."""
        self._asks.clear()
        self._apps.clear()

    async def until_answered(self, done: Callable[[], bool], what: str) -> None:
        """Until `done`; ConnectionError when the core goes away first (the re-sync sends it again)."""
        client = self.client
        await client.wait_for(lambda: done() or client.lost is not None, what=f"the core's answer to {what}")
        if client.lost is not None:
            raise ConnectionError(f"the core went away before answering {what}: {client.lost}")
