"""Coming back after the core went away: reconnect with backoff, register again, send the state again.

The core keeps no state of its own, so an RM that lost it (a restart, a crash, a cut connection)
connects again, registers with the configuration in force and re-sends what it has (its `resync`):
nodes, applications, the allocations it runs and the asks still waiting. Until that has gone through
on one connection, it tries again, waiting longer each time, with jitter so that many RMs do not
come back in step. A registration the core refuses for good (a bad configuration, a certificate for
another rmID) is not retried: it is raised.
"""

from __future__ import annotations

import asyncio
import contextlib
import random
from collections.abc import Awaitable, Callable, Mapping
from dataclasses import dataclass

import grpc
import structlog

from rmclient.client import SEND_ERRORS, SchedulerClient

log = structlog.get_logger("pykorn.rmclient")

# Answers that retrying cannot change.
REFUSED = frozenset(
    {grpc.StatusCode.INVALID_ARGUMENT, grpc.StatusCode.PERMISSION_DENIED, grpc.StatusCode.UNAUTHENTICATED}
)
RETRIED: tuple[type[BaseException], ...] = (*SEND_ERRORS, TimeoutError, OSError)


def is_refusal(exc: BaseException) -> bool:
    return isinstance(exc, grpc.aio.AioRpcError) and exc.code() in REFUSED


@dataclass(frozen=True)
class Backoff:
    first: float = 0.1  # seconds before the second attempt
    most: float = 2.0  # the longest wait between attempts
    jitter: float = 0.2  # each wait is scaled by a random factor within 1 ± jitter

    def waits(self) -> Callable[[], float]:
        delay = self.first

        def next_wait() -> float:
            nonlocal delay
            wait = delay * random.uniform(1 - self.jitter, 1 + self.jitter)
            delay = min(delay * 2, self.most)
            return wait

        return next_wait


@dataclass(frozen=True)
class Reconnected:
    attempts: int
    seconds: float


async def reconnect(
    client: SchedulerClient,
    config: Callable[[], str],
    resync: Callable[[], Awaitable[None]],
    backoff: Backoff = Backoff(),
    stop: asyncio.Event | None = None,
    extra_config: Callable[[], Mapping[str, str]] | None = None,
) -> Reconnected | None:
    """Connect `client` again, register with `config()` (and `extra_config()`, the core's settings) and
    run `resync`, until all of it went through on one connection. None when `stop` was set first.
    Raises the core's refusal of the registration."""
    loop = asyncio.get_running_loop()
    started = loop.time()
    next_wait = backoff.waits()
    attempts = 0
    while stop is None or not stop.is_set():
        attempts += 1
        await client.close()
        try:
            await client.connect(timeout=max(backoff.first, 0.5))
            await client.register(config=config(), extra_config=extra_config() if extra_config else None)
            await resync()
        except RETRIED as exc:
            if is_refusal(exc):
                raise
            wait = next_wait()
            log.info(
                "core unreachable, retrying",
                rmID=client.rm_id,
                attempt=attempts,
                retryIn=round(wait, 2),
                error=repr(exc),
            )
            await _sleep_unless_stopped(wait, stop)
            continue
        if client.lost is None:
            seconds = loop.time() - started
            log.info(
                "reconnected to the core", rmID=client.rm_id, attempts=attempts, seconds=round(seconds, 2)
            )
            return Reconnected(attempts, seconds)
        # Lost again while re-sending: the next attempt sends everything once more.
        await _sleep_unless_stopped(next_wait(), stop)
    return None


async def _sleep_unless_stopped(seconds: float, stop: asyncio.Event | None) -> None:
    if stop is None:
        await asyncio.sleep(seconds)
        return
    with contextlib.suppress(TimeoutError):
        await asyncio.wait_for(stop.wait(), seconds)
