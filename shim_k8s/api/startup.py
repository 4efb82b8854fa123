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
# Kinds a cluster may not serve (alpha APIs behind a feature gate): a 404 for one is not an error, the
# kind is left out of the lists (and so not followed), and the log says so once.
OPTIONAL = {
    "workloads": "the Workload API v1alpha1 (Kubernetes 1.35, feature gate GenericWorkload)",
    "podgroups": "the Workload API v1alpha2 PodGroups (Kubernetes 1.36, feature gate GenericWorkload)",
}


class StartupError(RuntimeError):
    """What keeps a process from starting at all (the API server or the core unreachable): a cause of
    the cluster's, said in one line."""


class ListenError(StartupError):
    """An address of its own it cannot listen on (in use, not local)."""


async def _list(http: KubeHTTP, kind: str, path: str) -> tuple[list[dict[str, Any]], str] | None:
    """A kind's list; None for an optional kind the API server does not serve."""
    try:
        return await http.list(path)
    except ApiError as exc:
        if exc.status not in (403, 404) or kind not in OPTIONAL:
            raise
        if exc.status == 404:
            log.info("not served by this cluster; its pods' references are not followed", kind=kind,
                     api=OPTIONAL[kind])  # fmt: skip
        else:  # roles from before this kind was followed: the rest of the shim works without it
            log.warning("listing is forbidden: the scheduler's role lacks get, list and watch on it (see "
                        "deploy/kubernetes); its pods' references are not followed", kind=kind,
                        api=OPTIONAL[kind])  # fmt: skip
        return None


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
            listed = await asyncio.gather(*(_list(http, kind, path) for kind, path in paths.items()))
            return {kind: found for kind, found in zip(paths, listed, strict=True) if found is not None}
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
