"""What the Kubernetes shim sends the core about pods, in the order the informers saw it: new
applications and asks gathered and sent in batches, releases after the asks gathered before them.

Inside `batch()` (the main loop, around what the informers delivered at once) applications and asks are
gathered and sent at the end: the applications in one request, then at once the asks in another, as
YuniKorn's shim hands the core an application and then its tasks without waiting in between. The two
travel on separate streams; the core holds an ask that arrives before its application until it comes
(core.scheduler.early_asks). So a burst of pods of many applications costs no round trip at all.
The core's answer to each application is acted on as it arrives (`applications_answered`): a rejected
one's pods fail (its asks, sent already, come back refused with its reason), an accepted gang gets its
placeholders. Anything that must not overtake what is gathered (a release, a node change) sends it first
(`flush`). What must reach the core before the next message waits for the core's answer
(`until_answered`).
"""

from __future__ import annotations

import asyncio
import contextlib
from collections.abc import AsyncIterator, Callable, Coroutine, Iterable
from typing import Any

from rmclient.client import SchedulerClient
from si.v1 import si_pb2

ASK_BATCH = 1_000  # asks gathered in a batch before they are sent anyway
APP_BATCH = 1_000  # new applications the same (a request stays far below gRPC's 4 MiB message limit)
REFUSED_KEPT = 10_000  # rejected applications remembered (their asks' refusals are expected)
# Called once the core has answered a new application, with the core's reason when it rejected it, None
# when it accepted it; what it returns, if anything, is run beside the loop.
Answered = Callable[[str | None], Coroutine[Any, Any, None] | None]
Spawn = Callable[[Coroutine[Any, Any, None]], None]


class Outbox:
    def __init__(self, client: SchedulerClient, spawn: Spawn) -> None:
        self.client = client
        self._spawn = spawn  # runs what is done on an answer, beside the loop
        self._asks: list[si_pb2.Allocation] = []  # asks gathered in a batch
        self._apps: list[tuple[si_pb2.AddApplicationRequest, Answered]] = []  # new ones, not sent yet
        self._batching = 0
        self._waiting: dict[str, Answered] = {}  # applications sent, not answered yet
        # Applications the core rejected, newest last, with its reason: their asks, sent with them, are
        # refused in turn, and that refusal must not be taken for an ask that outran a completion.
        self.refused: dict[str, str] = {}
        # One flush at a time: what one sends goes before what the next one does.
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
        """Send what is gathered: the new applications, then the asks (neither waits for an answer)."""
        if not self._apps and not self._asks:
            return
        async with self._flushing:
            if self._apps:
                apps, self._apps = self._apps, []
                for request, answered in apps:
                    self._waiting[request.applicationID] = answered
                await self.client.add_applications(*(request for request, _ in apps))
            if self._asks:
                asks, self._asks = self._asks, []
                await self.client.asks(asks)

    async def application(self, request: si_pb2.AddApplicationRequest, answered: Answered) -> None:
        """A new application: sent with its batch (now, outside one), before any ask of it; `answered`
        is called once the core has answered it."""
        self.refused.pop(request.applicationID, None)  # a new submission of an ID rejected before
        self._apps.append((request, answered))
        if not self._batching or len(self._apps) >= APP_BATCH:
            await self.flush()

    def applications_answered(self, response: si_pb2.ApplicationResponse) -> None:
        """The core's answer to applications sent (called as it arrives)."""
        for accepted in response.accepted:
            self._answer(accepted.applicationID, None)
        for rejected in response.rejected:
            if rejected.applicationID not in self._waiting:
                continue  # not an application this outbox sent (a removal refused, say)
            if len(self.refused) >= REFUSED_KEPT:
                del self.refused[next(iter(self.refused))]
            self.refused[rejected.applicationID] = rejected.reason
            self._answer(rejected.applicationID, rejected.reason)

    def awaiting(self, app_id: str) -> bool:
        """Whether the application was sent and the core has not answered it yet."""
        return app_id in self._waiting

    @property
    def waiting(self) -> int:
        """Applications sent and not answered yet."""
        return len(self._waiting)

    def _answer(self, app_id: str, refused: str | None) -> None:
        answered = self._waiting.pop(app_id, None)
        work = answered(refused) if answered is not None else None
        if work is not None:
            self._spawn(work)

    async def ask(self, ask: si_pb2.Allocation) -> None:
        """An ask, or an existing allocation: sent now, or with its batch."""
        self._asks.append(ask)
        if not self._batching or len(self._asks) >= ASK_BATCH:
            await self.flush()

    async def release(self, app_id: str, uid: str, message: str = "", partition: str = "") -> None:
        """Release a pod's ask or allocation (in `partition`, "" the default one), after the asks
        gathered before it (its own among them)."""
        await self.flush()
        await self.client.release(app_id, uid, partition, message=message)

    async def release_many(
        self, items: Iterable[tuple[str, str]], termination: si_pb2.TerminationType, partition: str = ""
    ) -> None:
        """Release (application, pod) pairs of one partition in one request, after the asks gathered
        before them."""
        await self.flush()
        await self.client.release_many(items, partition, termination=termination)

    def clear(self) -> None:
        """Drop what is gathered, and the answers awaited: the core it was for is gone, and the re-sync
        sends afresh."""
        self._asks.clear()
        self._apps.clear()
        self._waiting.clear()
        self.refused.clear()  # the new core rejected none of them

    async def until_answered(self, done: Callable[[], bool], what: str) -> None:
        """Until `done`; ConnectionError when the core goes away first (the re-sync sends it again)."""
        client = self.client
        await client.wait_for(lambda: done() or client.lost is not None, what=f"the core's answer to {what}")
        if client.lost is not None:
            raise ConnectionError(f"the core went away before answering {what}: {client.lost}")
