"""TLS material for the core's two listeners: gRPC server credentials, the REST SSL context, the token.

Everything is read and checked at startup, so a wrong path, a certificate without its key or a key
that does not belong to its certificate stops the daemon with one readable sentence instead of
failing at the first handshake.
"""

from __future__ import annotations

import ssl
from dataclasses import dataclass
from pathlib import Path

import grpc


class SecurityConfigError(ValueError):
    """The TLS or token settings cannot be used; the text says which flag or file and why."""


@dataclass(frozen=True)
class ServerTLS:
    """A listener's certificate and key, and for gRPC optionally the CA that signs client certs."""

    cert: Path
    key: Path
    client_ca: Path | None = None  # set: mutual TLS, every client must present a certificate it signed


def server_tls(
    cert: Path | None, key: Path | None, client_ca: Path | None = None, what: str = "--tls"
) -> ServerTLS | None:
    """The settings from the flags `{what}-cert`, `{what}-key` (and the client CA), or None for plaintext."""
    if cert is None and key is None:
        if client_ca is not None:
            raise SecurityConfigError(f"a client CA needs TLS: give {what}-cert and {what}-key as well")
        return None
    if cert is None or key is None:
        given, missing = (f"{what}-cert", f"{what}-key") if key is None else (f"{what}-key", f"{what}-cert")
        raise SecurityConfigError(
            f"{given} needs {missing}: give the certificate and its private key together"
        )
    tls = ServerTLS(cert, key, client_ca)
    ssl_context(tls)  # loads and cross-checks every file now, so the errors come at startup
    return tls


def ssl_context(tls: ServerTLS) -> ssl.SSLContext:
    """A server-side context (used by the REST API; for gRPC it only validates the files)."""
    context = ssl.create_default_context(ssl.Purpose.CLIENT_AUTH)
    # Look at the files first: OpenSSL's own errors ("PEM lib") do not say which file is wrong.
    _require_pem(tls.cert, b"CERTIFICATE-----", "certificate")
    _require_pem(tls.key, b"PRIVATE KEY-----", "private key")
    try:
        context.load_cert_chain(tls.cert, tls.key)
    except ssl.SSLError as exc:
        detail = "the key does not belong to the certificate" if "MISMATCH" in str(exc) else str(exc)
        raise SecurityConfigError(f"cannot use certificate {tls.cert} with key {tls.key}: {detail}") from None
    if tls.client_ca is not None:
        _require_pem(tls.client_ca, b"CERTIFICATE-----", "CA certificate")
        try:
            context.load_verify_locations(cafile=tls.client_ca)
        except ssl.SSLError as exc:
            raise SecurityConfigError(f"cannot use client CA {tls.client_ca}: {exc}") from None
        context.verify_mode = ssl.CERT_REQUIRED
    return context


def _require_pem(path: Path, marker: bytes, what: str) -> None:
    if marker not in _read(path):
        raise SecurityConfigError(f"{path} holds no PEM {what} (no '-----BEGIN ...{marker.decode()}' line)")


def grpc_credentials(tls: ServerTLS) -> grpc.ServerCredentials:
    client_ca = _read(tls.client_ca) if tls.client_ca is not None else None
    return grpc.ssl_server_credentials(
        [(_read(tls.key), _read(tls.cert))],
        root_certificates=client_ca,
        require_client_auth=client_ca is not None,
    )


def read_token(path: Path) -> str:
    """The REST bearer token: the file's text without surrounding whitespace (a trailing newline)."""
    try:
        token = _read(path).decode().strip()
    except UnicodeDecodeError:
        raise SecurityConfigError(f"the token file {path} is not UTF-8 text") from None
    if not token:
        raise SecurityConfigError(f"the token file {path} is empty")
    if any(c.isspace() for c in token):
        raise SecurityConfigError(f"the token in {path} contains whitespace; a bearer token is one word")
    return token


def _read(path: Path) -> bytes:
    try:
        return path.read_bytes()
    except OSError as exc:
        raise SecurityConfigError(f"cannot read {path}: {exc.strerror or exc}") from None
