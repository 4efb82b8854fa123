"""Listen addresses as the core's flags take them: HOST:PORT, with an IPv6 host in brackets, as gRPC
and Go's net.JoinHostPort write them."""

from __future__ import annotations

import socket

EXAMPLES = "127.0.0.1:3333, 0.0.0.0:3333, [::]:3333, localhost:0 for any free port"


def split_host_port(text: str) -> tuple[str, int]:
    """(host without brackets, port); ValueError naming what is wrong with `text`."""
    if "://" in text:
        raise ValueError(f"{text!r}: give HOST:PORT, without a scheme (examples: {EXAMPLES})")
    host, sep, port_text = text.rpartition(":")
    if not sep or not host:
        raise ValueError(f"{text!r} is not HOST:PORT (examples: {EXAMPLES})")
    if host.startswith("[") and host.endswith("]"):
        host = host[1:-1]
    elif ":" in host:
        raise ValueError(f"{text!r}: an IPv6 host goes in brackets, as [::1]:3333")
    if not host or any(c.isspace() or c in "[]/" for c in host):
        raise ValueError(f"{text!r}: {host!r} is not a host name or address")
    if not port_text.isdigit() or not 0 <= int(port_text) <= 65535:
        raise ValueError(f"{text!r}: the port must be a number from 0 to 65535 (0: any free port)")
    return host, int(port_text)


def check_can_listen(address: str) -> None:
    """OSError (strerror: in use, not an address of this machine, ...) when nothing could listen on
    `address` now. Tried with a socket of our own before gRPC binds: gRPC's own failure is a bare
    RuntimeError, after a line its C core writes to stderr."""
    host, port = split_host_port(address)
    infos = socket.getaddrinfo(host, port, type=socket.SOCK_STREAM, flags=socket.AI_PASSIVE)
    first: OSError | None = None
    for family, kind, proto, _, sockaddr in infos:  # as gRPC: one address it can bind is enough
        try:
            with socket.socket(family, kind, proto) as probe:
                # As gRPC binds: SO_REUSEADDR (a port whose last connections are in TIME_WAIT is free).
                probe.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
                probe.bind(sockaddr)
            return
        except OSError as exc:
            first = first or exc
    if first is not None:
        raise first
