"""Running a `pykorn core` process for a fixture: started, yielded, stopped, and its exit checked."""

from __future__ import annotations

import socket
from collections.abc import Iterator

from rmclient import messages
from rmclient.core_process import CoreProcess
from tests.recording_client import RecordingClient


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


# One leaf, root.work, open to everyone: the queue the load and shutdown tests (and benchmarks) fill.
WORK_CONFIG = """
partitions:
  - name: default
    queues:
      - name: root
        submitacl: "*"
        queues:
          - name: work
"""
UNIT_ASK = {"memory": 1, "vcore": 1}


async def loaded_rm(
    core: CoreProcess, rm_id: str, asks: int, nodes: int = 10, timeout: float = 120.0
) -> RecordingClient:
    """An RM registered with WORK_CONFIG, `nodes` large nodes, one application `app` in root.work and
    `asks` unit asks, all allocated."""
    client = RecordingClient(core.address, rm_id)
    await client.connect()
    await client.register(config=WORK_CONFIG)
    for n in range(nodes):
        await client.add_node(f"{rm_id}-n{n}", {"memory": 10**9, "vcore": 10**9})
    await client.wait_nodes_answered(nodes)
    await client.add_application("app", "root.work")
    await client.wait_apps_answered(1)
    await client.asks(messages.ask("app", f"k{j}", UNIT_ASK) for j in range(asks))
    await client.wait_allocations(asks, timeout=timeout)
    return client
