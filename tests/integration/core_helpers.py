"""Running a `pykorn core` process for a fixture: started, yielded, stopped, and its exit checked."""

from __future__ import annotations

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
