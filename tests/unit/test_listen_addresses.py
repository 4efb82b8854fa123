"""Listen addresses as `pykorn core --listen/--rest-listen` and `pykorn k8s --metrics-listen` take them
(core/server/addresses.py): HOST:PORT, an IPv6 host in brackets, as gRPC and Go write them."""

from __future__ import annotations

import socket

import pytest

from core.server.addresses import check_can_listen, split_host_port


@pytest.mark.parametrize(
    ("text", "host", "port"),
    [("127.0.0.1:3333", "127.0.0.1", 3333), ("[::1]:0", "::1", 0), ("localhost:65535", "localhost", 65535)],
)
def test_host_and_port(text: str, host: str, port: int) -> None:
    assert split_host_port(text) == (host, port)


@pytest.mark.parametrize(
    ("text", "said"),
    [
        ("3333", "is not HOST:PORT"),
        (":3333", "is not HOST:PORT"),
        ("::1:3333", "an IPv6 host goes in brackets"),
        ("[]:3333", "is not a host name or address"),
        ("a b:1", "is not a host name or address"),
        ("127.0.0.1:65536", "the port must be a number from 0 to 65535"),
        ("127.0.0.1:-1", "the port must be a number from 0 to 65535"),
        ("127.0.0.1:", "the port must be a number from 0 to 65535"),
    ],
)
def test_what_is_not_an_address_says_why(text: str, said: str) -> None:
    with pytest.raises(ValueError, match=said):
        split_host_port(text)


def test_a_port_in_use_is_found_before_grpc_tries_it() -> None:
    with socket.socket() as holder:
        holder.bind(("127.0.0.1", 0))
        holder.listen()
        with pytest.raises(OSError) as refused:
            check_can_listen(f"127.0.0.1:{holder.getsockname()[1]}")
    assert refused.value.strerror == "Address already in use"
    check_can_listen("127.0.0.1:0")  # any free port: nothing to refuse
