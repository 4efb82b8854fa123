"""Work run off the event loop in a thread the process does not wait for at exit.

asyncio.to_thread uses the loop's default executor, whose threads asyncio.run and the interpreter
join on the way out: a configuration still being read would hold a stop for as long as the reading
takes (seconds for a large one). A stop must take 2 s at most, so what is read for a request that
the stop makes moot is left to die with the process instead.
"""

from __future__ import annotations

import asyncio
import contextlib
import threading
from collections.abc import Callable
from typing import TypeVar

T = TypeVar("T")


async def in_daemon_thread(func: Callable[[], T], name: str = "pykorn-off-loop") -> T:
    """`func()` in a daemon thread of its own; its result, or its exception, here."""
    loop = asyncio.get_running_loop()
    future: asyncio.Future[T] = loop.create_future()

    def settle(result: T | None, error: BaseException | None) -> None:
        if future.done():
            return  # the waiter went away (cancelled): nobody to tell
        if error is not None:
            future.set_exception(error)
        else:
            future.set_result(result)  # type: ignore[arg-type]

    def run() -> None:
        try:
            outcome: tuple[T | None, BaseException | None] = (func(), None)
        except BaseException as exc:  # handed to the waiter, as to_thread does
            outcome = (None, exc)
        # A closed loop: the core stopped while this was read, and nobody waits for it.
        with contextlib.suppress(RuntimeError):
            loop.call_soon_threadsafe(settle, *outcome)

    threading.Thread(target=run, name=name, daemon=True).start()
    return await future
