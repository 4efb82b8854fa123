"""One message with 10,000 refused items writes a handful of log lines, not 10,000; the RM still gets
every item's own answer."""

from __future__ import annotations

import json
from collections import Counter
from collections.abc import Iterator

import pytest

from rmclient import messages
from rmclient.core_process import CoreProcess
from si.v1 import si_pb2
from tests.integration.core_helpers import WORK_CONFIG, running
from tests.recording_client import RecordingClient

ITEMS = 10_000
PENDING_BOUND = 10  # per application, so that a message of asks goes over it
MOST_LINES = 5  # "a handful" per message


@pytest.fixture(scope="module")
def core() -> Iterator[CoreProcess]:
    limit = f"max_pending_asks_per_application={PENDING_BOUND}"
    yield from running(CoreProcess(extra_args=["--limit", limit]))


def _warnings(core: CoreProcess) -> list[dict[str, object]]:
    lines = (json.loads(line) for line in core.log_text().splitlines() if line.startswith("{"))
    return [line for line in lines if line.get("level") == "warning"]


async def _refused_in_one_message(
    client: RecordingClient, asks: list[si_pb2.Allocation], seen_before: int
) -> list[str]:
    """The reasons for the next ITEMS refused asks, all from sending `asks` in one message."""
    await client.asks(asks)
    rejected = await client.wait_rejected_allocations(seen_before + ITEMS, timeout=60)
    return [r.reason for r in rejected[seen_before:]]


async def test_ten_thousand_refused_items_in_one_message_are_a_few_log_lines(core: CoreProcess) -> None:
    async with RecordingClient(core.address, "rm-noisy") as client:
        await client.register(config=WORK_CONFIG)
        await client.add_node("node-1", {"memory": 10**6})
        await client.wait_nodes_answered(1)
        await client.add_application("app-1", "root.work")
        await client.wait_apps_answered(1)
        before = len(_warnings(core))

        # Refused by the engine: applications it does not know.
        unknown = [messages.ask(f"ghost-{i}", f"g{i}", {"memory": 1}) for i in range(ITEMS)]
        reasons = await _refused_in_one_message(client, unknown, 0)
        assert len(reasons) == ITEMS and all(f"ghost-{i}" in r for i, r in enumerate(reasons))
        # Refused on arrival: a negative amount.
        bad = [messages.ask("app-1", f"b{i}", {"memory": -1}) for i in range(ITEMS)]
        reasons = await _refused_in_one_message(client, bad, ITEMS)
        assert len(reasons) == ITEMS and all("negative amount of memory" in r for r in reasons)
        # Refused over a limit: more pending asks than one application may hold (the first ones fit
        # and stay pending, the node being full).
        over = [messages.ask("app-1", f"o{i}", {"memory": 10**7}) for i in range(PENDING_BOUND + ITEMS)]
        reasons = await _refused_in_one_message(client, over, 2 * ITEMS)
        assert len(reasons) == ITEMS and all("max_pending_asks_per_application" in r for r in reasons)
        await client.barrier()

    lines = _warnings(core)[before:]
    by_event = Counter(str(line["event"]) for line in lines)
    assert len(lines) <= 3 * MOST_LINES, by_event
    # One line per message and kind of reason, with the count and a few sample keys (the barrier's
    # probe, refused on purpose, is one more).
    summaries = [line for line in lines if line.get("count") == ITEMS]
    assert sorted(str(line["event"]) for line in summaries) == [
        "allocations rejected",
        "items rejected",
        "items rejected",
    ], by_event
    assert all(len(line["samples"]) == 3 for line in summaries)  # type: ignore[arg-type]
