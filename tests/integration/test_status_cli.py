"""`pykorn status` against a running core: the queue tree with bars, nodes, and pending asks with reasons."""

from __future__ import annotations

import subprocess
import sys

from tests.integration.rest_helpers import load_cluster
from tests.recording_client import RecordingClient


def _status(*args: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [sys.executable, "-m", "pykorn_cli", "status", *args], capture_output=True, text=True, timeout=60
    )


async def test_status_shows_queues_nodes_and_why_asks_wait(
    client: RecordingClient, rm_id: str, rest_url: str
) -> None:
    await load_cluster(client)  # root.tenants (guaranteed 4000, max 12000) holds 6000; t2 waits
    result = _status("--core-rest", rest_url)
    assert result.returncode == 0, result.stderr
    out = result.stdout
    mine = out[out.index(f"(rmID {rm_id})") :]
    mine = mine[: mine.index("\npartition ")] if "\npartition " in mine else mine
    tenants = next(line for line in mine.splitlines() if line.strip().startswith("tenants"))
    # 6000 bytes read as 6.0k, of a 4000 guarantee a full bar at 150 %; of a 12000 max half a bar.
    assert "memory         6.0k [####################] 150% | [##########..........]  50%" in tenants
    assert "fence" in tenants
    assert "node-1" in mine and "allocated {memory: 3.0k} of {memory: 4.0k, vcore: 4}" in mine
    assert "pending asks (1)" in mine
    assert "app-1/t2 {memory: 3.0k}: [Unschedulable: waits for a node] over the cluster's capacity" in mine


def test_status_says_clearly_when_the_core_is_not_there() -> None:
    result = _status("--core-rest", "http://127.0.0.1:1")
    assert result.returncode == 3  # unreachable (docs/operations.md, Exit statuses)
    assert "cannot read the core's REST API at http://127.0.0.1:1" in result.stderr
