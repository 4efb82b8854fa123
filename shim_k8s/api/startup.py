"""The first lists of a process that follows the API (the shim, the admission controller): tried
again while the API server does not answer, since it may be starting too, then given up with one
reason (`StartupError`) for the command to print; a restart tries again."""

from __future__ import annotations

import asyncio
import contextlib
from typing import Any

import structlog

from rmclient.reconnect import Backoff
from shim_k8s.api.kube_http import TRANSPORT_ERRORS, ApiError, KubeHTTP

log = structlog.get_logger("pykorn.k8s.startup")

START_ATTEMPTS = 8  # lists of everything tried at start before giving up (about 16 s with START_BACKOFF)
START_BACKOFF = Backoff(first=0.2, most=5.0)
LIST_ERRORS: tuple[type[BaseException], ...] = (ApiError, *TRANSPORT_ERRORS)


class StartupError(RuntimeError):
    """What keeps a process from starting at all (the API server or the core unreachable): a cause of
    the cluster's, said in one line."""


class ListenError(StartupError):
    """An address of its own it cannot listen on (in use, not local)."""


def described(exc: BaseException) -> str:
    """An error in words: a timeout has none of its own."""
    if isinstance(exc, TimeoutError):
        return "no answer in time"
    return str(exc) or type(exc).__name__


async def list_at_start(
    http: KubeHTTP, paths: dict[str, str], stop: asyncio.Event
) -> dict[str, tuple[list[dict[str, Any]], str]] | None:
    """Every kind in `paths`, listed (items and resourceVersion by kind); StartupError after
    START_ATTEMPTS tries; None when stopped meanwhile (a SIGTERM during start-up is a clean stop)."""
    delay = START_BACKOFF.first
    for attempt in range(1, START_ATTEMPTS + 1):
        try:
            listed = await asyncio.gather(*(http.list(path) for path in paths.values()))
            return dict(zip(paths, listed, strict=True))
        except LIST_ERRORS as exc:
            if stop.is_set():
                return None
            if attempt == START_ATTEMPTS:
                where = http.access.host
                raise StartupError(
                    f"the API server at {where} did not answer the lists: {described(exc)}"
                ) from None
            log.warning("listing failed at start; trying again", attempt=attempt, error=repr(exc))
            with contextlib.suppress(TimeoutError):
                await asyncio.wait_for(stop.wait(), delay)
            if stop.is_set():
                return None
            delay = min(START_BACKOFF.most, delay * 2)
    raise AssertionError("unreachable")
