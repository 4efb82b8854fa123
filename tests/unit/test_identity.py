"""Who a gRPC caller may act as: the rule behind mutual TLS RM isolation, without a network."""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Any, cast

import grpc

from core.server.identity import ANY_RM, Caller, caller


class _Context:
    """Just enough of grpc.aio.ServicerContext: what the TLS session says about the peer."""

    def __init__(self, auth: Mapping[str, Sequence[bytes]]) -> None:
        self._auth = auth

    def auth_context(self) -> Mapping[str, Sequence[bytes]]:
        return self._auth


def _context(auth: Mapping[str, Sequence[bytes]]) -> grpc.aio.ServicerContext:
    return cast(Any, _Context(auth))


def test_without_client_certificates_any_rm_id_is_allowed() -> None:
    peer = caller(_context({"x509_common_name": [b"rm-a"]}), enforced=False)
    assert peer is ANY_RM
    assert peer.refusal("rm-b") is None


def test_a_certificate_allows_its_own_common_name_only() -> None:
    peer = caller(
        _context({"transport_security_type": [b"ssl"], "x509_common_name": [b"rm-a"]}), enforced=True
    )
    assert peer == Caller("rm-a")
    assert peer.refusal("rm-a") is None
    reason = peer.refusal("rm-b")
    assert reason is not None and "'rm-a'" in reason and "'rm-b'" in reason
    # Naming no rmID is left to the proxy's own "rmID is missing" answer.
    assert peer.refusal("") is None


def test_a_certificate_without_a_common_name_may_act_as_no_rm() -> None:
    peer = caller(_context({"transport_security_type": [b"ssl"]}), enforced=True)
    assert peer == Caller("")
    reason = peer.refusal("rm-a")
    assert reason is not None and "no common name" in reason and "CN=rm-a" in reason


def test_names_are_compared_exactly() -> None:
    peer = Caller("rm-a")
    for other in ("RM-A", "rm-a ", "rm-ab", "rm-"):
        assert peer.refusal(other) is not None, other
