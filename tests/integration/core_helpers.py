"""Running a `pykorn core` process for a fixture: started, yielded, stopped, and its exit checked."""

from __future__ import annotations

import socket
from collections.abc import Iterator

from rmclient.core_process import CoreProcess


def running(core: CoreProcess) -> Iterator[CoreProcess]:
    """Start `core`, yield it, then stop it: it must exit 0 and its log must hold no traceback."""
    core.start_blocking()
    try:
        yield core
    finally:
        code = core.stop_blocking(timeout=20)
        log = core.log_text()
        assert code == 0, f"core exited with {code}:\n{log[-4000:]}"
        assert "Traceback" not in log, log[-4000:]


def free_port() -> int:
    """A loopback port nothing listens on now (for a process that must be told its port up front)."""
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return int(sock.getsockname()[1])
