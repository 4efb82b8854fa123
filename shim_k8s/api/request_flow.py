"""How fast and how many of the shim's requests go to the API server: client-go's token bucket, and the
bound on requests in flight.

Both are met on every request (two per pod: its binding and its event), and in a burst nearly always at
once. So each has a synchronous common case, and a coroutine only for the request it holds back:
asyncio.Semaphore's `async with` made three coroutines per request even when a slot was free.
"""

from __future__ import annotations

import asyncio
import contextlib
import time
from collections import deque
from dataclasses import dataclass, field


@dataclass
class RateLimiter:
    """A token bucket as client-go's: `qps` tokens a second, up to `burst` saved.

    A request that finds no token takes one on credit and sleeps once, until its turn (as Go's
    `rate.Limiter.Wait` reserves): callers go in the order they came, and a thousand waiting cost a
    thousand sleeps, not a thousand wake-ups per token as when every waiter woke to try again.
    """

    qps: float
    burst: int
    _tokens: float = field(init=False)
    _last: float = field(init=False)

    def __post_init__(self) -> None:
        self._tokens = float(self.burst)
        self._last = time.monotonic()

    def take(self) -> float:
        """Take a token: the seconds to wait until it is due (0.0: now). A wait must be `pay`ed."""
        now = time.monotonic()
        self._tokens = min(float(self.burst), self._tokens + (now - self._last) * self.qps) - 1.0
        self._last = now
        # On credit: its token comes when the ones owed before it have.
        return -self._tokens / self.qps if self._tokens < 0.0 else 0.0

    async def pay(self, wait: float) -> None:
        """Wait for a token taken on credit; given back when the waiter is cancelled."""
        try:
            await asyncio.sleep(wait)
        except asyncio.CancelledError:
            self._tokens += 1.0  # not used: those after it need not wait for it (as Go's Cancel)
            raise

    async def acquire(self) -> None:
        wait = self.take()
        if wait > 0.0:
            await self.pay(wait)


class InFlight:
    """At most `size` requests at once; the others wait in the order they came."""

    def __init__(self, size: int) -> None:
        self.free = size
        self._waiters: deque[asyncio.Future[None]] = deque()

    def take_now(self) -> bool:
        """A slot when one is free and nobody waits before us; False: `take` must be awaited."""
        if self.free > 0 and not self._waiters:
            self.free -= 1
            return True
        return False

    async def take(self) -> None:
        """Wait for a slot: one that is given back goes to the first waiter."""
        if self.take_now():
            return
        waiter = asyncio.get_running_loop().create_future()
        self._waiters.append(waiter)
        try:
            await waiter
        except BaseException:  # cancelled, or the coroutine closed (GeneratorExit): never keep a slot
            if waiter.done() and not waiter.cancelled():
                self.give()  # handed a slot just as it was cancelled: the next one gets it
            else:
                waiter.cancel()
                with contextlib.suppress(ValueError):  # a give() may have passed it by already
                    self._waiters.remove(waiter)
            raise

    def give(self) -> None:
        """A slot back: to the first waiter still waiting, else free."""
        while self._waiters:
            waiter = self._waiters.popleft()
            if not waiter.done():
                waiter.set_result(None)
                return
        self.free += 1
