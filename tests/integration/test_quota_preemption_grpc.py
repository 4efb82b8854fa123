"""Quota enforcement through preemption over real gRPC: the design document's successful,
best-effort and unsuccessful cases, each first previewed by the dry run, which must match what the
real run then does.

The delay runs on the daemon's real clock, so each case waits it out once (it is kept short); what
the tests wait on is the fact that the run happened (its preemptions, or its outcome over REST), and
"not before the delay" is read from the core's own event times: the reload that lowered the max, and
the run.
"""

from __future__ import annotations

import asyncio
import subprocess
import sys
from pathlib import Path
from typing import Any

import aiohttp

from rmclient import messages
from si.v1 import si_pb2
from tests.integration.rest_helpers import get_json, named_event, partition_url, rest_until
from tests.recording_client import RecordingClient

CONFIG = """
partitions:
  - name: default
    preemption: {quotapreemptionenabled: true}
    queues:
      - name: root
        submitacl: "*"
        queues:
          - name: q
            resources: {guaranteed: {memory: %(guaranteed)d}, max: {memory: %(max)d}}
            properties: {quota.preemption.delay: %(delay)s}
"""
NODE = {"memory": 20_000, "vcore": 20_000}
DELAY = 0.5  # seconds: short, as each run waits it out (the engine looks at timers every 0.5 s)


def _config(guaranteed: int, maximum: int, delay: str = f"{DELAY}s") -> str:
    return CONFIG % {"guaranteed": guaranteed, "max": maximum, "delay": delay}


def preempted(client: RecordingClient) -> list[si_pb2.AllocationRelease]:
    return [r for r in client.seen.released if r.terminationType == si_pb2.PREEMPTED_BY_SCHEDULER]


async def _running(client: RecordingClient, guaranteed: int, sizes: list[int]) -> None:
    await client.register(config=_config(guaranteed, 20_000))
    await client.add_node("n1", NODE)
    await client.wait_nodes_answered(1)
    await client.add_application("app", "root.q")
    await client.wait_apps_answered(1)
    await client.asks(
        messages.ask(
            "app", f"t{i}", {"memory": size, "vcore": 1}, tags={"creationTime": str(1_700_000_000 + i)}
        )
        for i, size in enumerate(sizes)
    )
    await client.wait_allocations(len(sizes))


async def _lower(
    client: RecordingClient, guaranteed: int, new_max: int
) -> si_pb2.DryRunConfigurationResponse:
    """Preview, then apply the lowered max; returns the preview."""
    preview = await client.dry_run_configuration(_config(guaranteed, new_max))
    assert preview.valid, list(preview.errors)
    response = await client.update_configuration(_config(guaranteed, new_max))
    assert response.accepted, list(response.errors)
    return preview


def _victims(preview: si_pb2.DryRunConfigurationResponse) -> list[str]:
    return [v.allocationKey for q in preview.queues for v in q.victims]


async def _quota_state(rest_url: str, rm_id: str, ran: bool = False) -> dict[str, Any]:
    """root.q's quotaPreemption over REST; with `ran`, once its run's outcome shows."""
    url = f"{partition_url(rest_url, rm_id)}/queue/root.q"
    async with aiohttp.ClientSession() as session:
        if ran:
            queue = await rest_until(
                session,
                url,
                lambda q: q["pykorn"]["quotaPreemption"]["lastOutcome"],
                "the quota run",
                timeout=15,
            )
        else:
            queue = await get_json(session, url)
    return queue["pykorn"]["quotaPreemption"]


async def _ran_after_the_delay(rest_url: str, rm_id: str) -> None:
    """The run came no sooner than the delay after the reload that lowered the max, by the core's own
    clock: its QUEUE_PREEMPTION event against the QUEUE_MAX event of the reload (one of each)."""
    async with aiohttp.ClientSession() as session:
        events = await get_json(session, f"{rest_url}/ws/v1/events/batch")
    named = [named_event(e) for e in events["EventRecords"]]
    mine = [e for e in named if e["rmID"] == rm_id and e["objectID"] == "root.q"]
    times = {
        detail: [e["timestampNano"] for e in mine if e["eventChangeDetail"] == detail]
        for detail in ("QUEUE_MAX", "QUEUE_PREEMPTION")
    }
    [lowered], [ran] = times["QUEUE_MAX"], times["QUEUE_PREEMPTION"]
    assert ran - lowered >= DELAY * 1e9 - 1_000, f"ran {(ran - lowered) / 1e9:.3f}s after the reload"


async def test_successful_quota_preemption(client: RecordingClient, rest_url: str) -> None:
    await _running(client, guaranteed=2_000, sizes=[1_000] * 6)  # 6000 used
    preview = await _lower(client, guaranteed=2_000, new_max=3_000)  # 3000 must go
    [queue] = preview.queues
    assert queue.queue == "root.q" and queue.willRun and queue.delaySeconds == DELAY
    assert queue.target.resources["memory"].value == 3_000
    assert queue.achievable.resources["memory"].value == 3_000 and not queue.reason
    assert _victims(preview) == ["t5", "t4", "t3"]  # the youngest first
    await client.wait_for(lambda: len(preempted(client)) == 3, timeout=15, what="three preemptions")
    await client.barrier()  # and no more: everything the run decided has arrived
    assert [r.allocationKey for r in preempted(client)] == _victims(preview)  # the dry run was right
    assert all("enforce the max of root.q" in r.message for r in preempted(client))
    await _ran_after_the_delay(rest_url, client.rm_id)  # not before the delay
    outcome = (await _quota_state(rest_url, client.rm_id))["lastOutcome"]
    assert (outcome["victims"], outcome["complete"]) == (3, True), outcome


async def test_best_effort_quota_preemption_stops_at_the_guarantee(
    client: RecordingClient, rest_url: str
) -> None:
    # The document's example: usage 10000 in five tasks of 2000, guaranteed 5000, new max 5500: the
    # target is 4500, but a third victim would take the queue to 4000, below its guarantee.
    await _running(client, guaranteed=5_000, sizes=[2_000] * 5)
    preview = await _lower(client, guaranteed=5_000, new_max=5_500)
    [queue] = preview.queues
    assert queue.target.resources["memory"].value == 4_500
    assert queue.achievable.resources["memory"].value == 4_000
    assert "guaranteed" in queue.reason
    await client.wait_for(lambda: len(preempted(client)) == 2, timeout=15, what="two preemptions")
    await client.barrier()  # and no more
    assert [r.allocationKey for r in preempted(client)] == _victims(preview) == ["t4", "t3"]
    await _ran_after_the_delay(rest_url, client.rm_id)
    outcome = (await _quota_state(rest_url, client.rm_id))["lastOutcome"]
    assert (outcome["victims"], outcome["complete"]) == (2, False), outcome
    assert "guaranteed" in outcome["reason"]


async def test_unsuccessful_quota_preemption_takes_nothing(client: RecordingClient, rest_url: str) -> None:
    # One task of 6000, guaranteed 5000, new max 5500: releasing it would leave nothing.
    await _running(client, guaranteed=5_000, sizes=[6_000])
    preview = await _lower(client, guaranteed=5_000, new_max=5_500)
    [queue] = preview.queues
    assert queue.target.resources["memory"].value == 500
    assert not queue.achievable.resources or queue.achievable.resources["memory"].value == 0
    assert _victims(preview) == [] and "guaranteed" in queue.reason
    # The run happens (its outcome shows over REST) and takes nothing: once everything it decided has
    # arrived (a barrier), no preemption is among it.
    outcome = (await _quota_state(rest_url, client.rm_id, ran=True))["lastOutcome"]
    await client.barrier()
    assert preempted(client) == []
    assert (outcome["victims"], outcome["complete"]) == (0, False), outcome
    assert "guaranteed" in outcome["reason"]
    await _ran_after_the_delay(rest_url, client.rm_id)


async def test_an_invalid_lowering_is_refused(client: RecordingClient) -> None:
    await _running(client, guaranteed=2_000, sizes=[1_000])
    response = await client.update_configuration(_config(2_000, 2_000))  # max not above guaranteed
    assert not response.accepted
    assert any("must be greater than its guaranteed" in e for e in response.errors)


def test_config_diff_cli_lists_changes_and_the_preview(core_address: str, tmp_path: Path) -> None:
    old, new = tmp_path / "old.yaml", tmp_path / "new.yaml"
    old.write_text(_config(2_000, 20_000, delay="1s"))
    new.write_text(_config(2_000, 3_000, delay="1s"))

    async def setup() -> None:
        async with RecordingClient(core_address, "diff-rm") as client:
            await _running(client, guaranteed=2_000, sizes=[1_000] * 6)

    asyncio.run(setup())
    result = subprocess.run(
        [sys.executable, "-m", "pykorn_cli", "config", "diff", str(old), str(new), "--core", core_address,
         "--rm-id", "diff-rm"],
        capture_output=True, text=True, timeout=60,
    )  # fmt: skip
    assert result.returncode == 0, result.stdout + result.stderr
    out = result.stdout
    # In the units a person reads (core/quantity_text.py): 20000 bytes is 20.0k.
    assert "[default] root.q: max {memory: 20.0k} -> {memory: 3.0k}" in out
    assert "root.q: over its new max by {memory: 3.0k}; after 1s" in out
    assert "- app/t5 on n1 in root.q" in out and "- app/t3 on n1 in root.q" in out
