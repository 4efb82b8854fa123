"""What the Kubernetes shim sends the core about pods, in the order the informers saw it: asks gathered
and sent in batches, releases after the asks gathered before them.

Inside `batch()` (the main loop, around what the informers delivered at once) asks are gathered and
sent in one request at the end; anything that must not overtake them (a release, a node change, an
application) sends them first (`flush`). Nodes, applications and asks travel on streams of their own:
what must reach the core before the next message waits for the core's answer (`until_answered`).
"""

from __future__ import annotations

import contextlib
from collections.abc import AsyncIterator, Callable, Iterable

from rmclient.client import SchedulerClient
from si.v1 import si_pb2

ASK_BATCH = 1_000  # asks gathered in a batch before they are sent anyway


class Outbox:
    def __init__(self, client: SchedulerClient) -> None:
        self.client = client
        self._asks: list[si_pb2.Allocation] = []  # asks gathered in a batch
        self._batching = 0

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
        """Send the asks gathered so far."""
        if self._asks:
            asks, self._asks = self._asks, []
            await self.client.asks(asks)

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
        """Drop the asks gathered: the core they were for is gone, and the re-sync asks afresh."""
        self._asks.clear()

    async def until_answered(self, done: Callable[[], bool], what: str) -> None:
        """Until `done`; ConnectionError when the core goes away first (the re-sync sends it again)."""
        client = self.client
        await client.wait_for(lambda: done() or client.lost is not None, what=f"the core's answer to {what}")
        if client.lost is not None:
            raise ConnectionError(f"the core went away before answering {what}: {client.lost}")
