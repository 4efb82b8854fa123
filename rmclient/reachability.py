"""Why a core's address cannot be connected to, in words: gRPC's channel keeps trying until its
timeout and then says only that it timed out, where a refused connection or an unknown host is known
at once and is what a person needs to hear."""

from __future__ import annotations

import socket

PROBE_SECONDS = 3.0


def unreachable_reason(target: str) -> str | None:
    """ "Connection refused", "Name or service not known", ... for a HOST:PORT nothing can be connected
    to now; None when a connection opens, or when the probe itself cannot tell (a timeout, a target
    that is not HOST:PORT: gRPC's own resolver reads more forms)."""
    host, sep, port = target.rpartition(":")
    if not sep or not port.isdigit():
        return None
    try:
        socket.create_connection((host.strip("[]"), int(port)), timeout=PROBE_SECONDS).close()
    except (ConnectionRefusedError, socket.gaierror) as exc:
        return exc.strerror or type(exc).__name__
    except OSError:
        return None
    return None
