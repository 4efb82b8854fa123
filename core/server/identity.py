"""Which resource manager a gRPC caller may act as.

With mutual TLS the core knows who is calling: the common name (CN) of the client certificate its
CA signed. Every request names an rmID; a caller may only name its own. Without client certificates
there is no identity to check against, and any caller may act as any RM (RMs are still kept apart by
partition naming and per-stream binding, which is all plaintext or server-only TLS can offer).

A request that names no rmID passes here: the proxy refuses it with its own "rmID is missing" reason.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

import grpc

COMMON_NAME_KEY = "x509_common_name"  # the key gRPC's auth context gives the peer certificate's CN under


@dataclass(frozen=True)
class Caller:
    """The peer of one call. `rm_id` None: identities are not enforced, any rmID is allowed."""

    rm_id: str | None

    def refusal(self, requested: str) -> str | None:
        """Why this caller may not act as `requested`, or None when it may."""
        if self.rm_id is None or not requested or requested == self.rm_id:
            return None
        if not self.rm_id:
            return (
                f"the client certificate carries no common name, so it may not act as resource manager "
                f"{requested!r}; issue it with CN={requested}"
            )
        return (
            f"the client certificate identifies resource manager {self.rm_id!r}; it may not act as "
            f"resource manager {requested!r}"
        )


ANY_RM = Caller(None)


def caller(context: grpc.aio.ServicerContext[Any, Any], enforced: bool) -> Caller:
    """Who is calling, from the TLS session. `enforced` is true when the server requires client certs."""
    if not enforced:
        return ANY_RM
    names = list(context.auth_context().get(COMMON_NAME_KEY) or ())
    # A certificate without a CN yields an empty identity, which matches no rmID (fail closed).
    return Caller(names[0].decode("utf-8", errors="replace") if names else "")


def described(context: grpc.aio.ServicerContext[Any, Any]) -> str:
    """The caller in words for a record: its certificate's CN when it sent one, and its address."""
    names = list(context.auth_context().get(COMMON_NAME_KEY) or ())
    peer = context.peer() or "unknown peer"
    if names:
        return f"CN={names[0].decode('utf-8', errors='replace')} ({peer})"
    return peer
