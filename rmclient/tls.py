"""TLS settings of a resource manager's connection to the core, and the channel they make.

An RM talking to a core that serves TLS gives the CA that signed the core's certificate (or relies
on the system roots); for mutual TLS it also presents its own certificate and key, whose common name
must be the rmID it registers as.
"""

from __future__ import annotations

import ssl
from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import grpc


@dataclass(frozen=True)
class ClientTLS:
    ca_cert: Path | None = None  # trust anchors for the core's certificate; None: the system roots
    cert: Path | None = None  # the RM's own certificate (mutual TLS), CN = its rmID
    key: Path | None = None
    server_name: str | None = None  # check the core's certificate for this name instead of the target host

    def __post_init__(self) -> None:
        if (self.cert is None) != (self.key is None):
            raise ValueError("a client certificate and its key go together: give both or neither")

    def credentials(self) -> grpc.ChannelCredentials:
        def read(path: Path | None) -> bytes | None:
            return path.read_bytes() if path is not None else None

        return grpc.ssl_channel_credentials(read(self.ca_cert), read(self.key), read(self.cert))

    def channel_options(self) -> list[tuple[str, Any]]:
        return [("grpc.ssl_target_name_override", self.server_name)] if self.server_name else []


def client_tls(ca_cert: Path | None, cert: Path | None, key: Path | None) -> ClientTLS | None:
    """From command-line flags: None (plaintext) when none is given. The files are read now, so that a
    wrong one is a ValueError naming it rather than a channel that never connects (gRPC's C core only
    logs a bad certificate, and the connection then times out)."""
    if ca_cert is None and cert is None and key is None:
        return None
    tls = ClientTLS(ca_cert, cert, key)
    _check_readable(tls)
    return tls


def _check_readable(tls: ClientTLS) -> None:
    context = ssl.create_default_context()
    try:
        if tls.ca_cert is not None:
            context.load_verify_locations(cafile=str(tls.ca_cert))
    except (OSError, ValueError) as exc:  # ssl.SSLError is an OSError
        raise ValueError(f"the CA certificate {tls.ca_cert}: {_why(exc)} (PEM expected)") from None
    try:
        if tls.cert is not None:
            context.load_cert_chain(str(tls.cert), str(tls.key))
    except (OSError, ValueError) as exc:
        raise ValueError(
            f"the client certificate {tls.cert} and key {tls.key}: {_why(exc)} (one PEM pair expected)"
        ) from None


def _why(exc: BaseException) -> str:
    if isinstance(exc, ssl.SSLError):
        return exc.reason or str(exc)
    return getattr(exc, "strerror", None) or str(exc)


def open_channel(
    target: str, tls: ClientTLS | None, options: Sequence[tuple[str, Any]] = ()
) -> grpc.aio.Channel:
    """A TLS channel when settings are given, a plaintext one otherwise."""
    if tls is None:
        return grpc.aio.insecure_channel(target, options=list(options))
    return grpc.aio.secure_channel(target, tls.credentials(), options=[*options, *tls.channel_options()])
