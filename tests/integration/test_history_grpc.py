"""History in a real database through a real core process (`pykorn core --history URL`), SQLite and a
real PostgreSQL: a scenario over gRPC with the core SIGKILLed and restarted in the middle, the history
API answering for what ran before the kill with no record twice after the RM registered again; and the
database stopped mid-run, scheduling going on, the writes resuming once it is back."""

from __future__ import annotations

import asyncio
import subprocess
import sys
from collections import Counter
from collections.abc import AsyncIterator
from functools import partial
from pathlib import Path
from typing import Any

import aiohttp
import pytest

from rmclient.core_process import CoreProcess
from shim_fake.scenario.runner import Runner
from tests.fake_scenarios import parse_scenario
from tests.integration.core_helpers import free_port
from tests.integration.postgres import PostgresServer
from tests.integration.rest_helpers import get_json, rest_until
from tests.recording_client import RecordingClient

SCENARIO = """
name: history
speed: 1
end: %(end)ss
queues: |
  partitions:
    - name: default
      queues:
        - name: root
          submitacl: "*"
          queues:
            - name: services
            - name: batch
nodes:
  - count: 2
    prefix: node
    resources: {memory: 8Gi, vcore: 4}
applications:
  - id: web
    queue: root.services
    user: alice
    restart: true
    tasks:
      - {name: svc, count: 4, resources: {memory: 1Gi, vcore: 1}, duration: until stopped}
  - id: etl
    queue: root.batch
    user: bob
    restart: true
    tasks:
      - {name: step, count: 10, resources: {memory: 512Mi, vcore: 1}, duration: 2s}
"""


@pytest.fixture(params=["sqlite", "postgresql"])
def history_url(request: pytest.FixtureRequest, tmp_path: Path) -> str:
    if request.param == "sqlite":
        return f"sqlite:///{tmp_path}/history.db"
    server: PostgresServer = request.getfixturevalue("postgres")
    return server.create_database(f"history_{request.node.name.split('[')[0][-40:]}")


@pytest.fixture
async def history_core(history_url: str) -> AsyncIterator[CoreProcess]:
    core = CoreProcess(listen=f"127.0.0.1:{free_port()}", extra_args=["--history", history_url])
    await core.start()
    try:
        yield core
    finally:
        await core.stop()
        assert "Traceback" not in core.log_text()


async def _runner(core: CoreProcess, rm_id: str, end: float) -> tuple[Runner, asyncio.Task[Any]]:
    client = RecordingClient(core.address, rm_id)
    await client.connect()
    runner = Runner(parse_scenario(SCENARIO % {"end": end}), client, 1.0, None)
    return runner, asyncio.create_task(runner.run())


async def _finish(runner: Runner, task: asyncio.Task[Any]) -> None:
    try:
        await asyncio.wait_for(task, 60)
    finally:
        await runner.client.close()
    assert all(t.ran for t in runner.all_tasks), "a task never ran"


def _reconnected(runner: Runner) -> bool:
    return runner.reconnects > 0


def _history(core: CoreProcess, path: str) -> str:
    return f"{core.rest_url}/ws/v1/history/{path}"


async def test_history_outlives_a_sigkilled_core_with_nothing_twice(
    history_core: CoreProcess, history_url: str
) -> None:
    rm_id = "rm-history"
    runner, task = await _runner(history_core, rm_id, end=10)
    await runner.client.wait_for(lambda: runner.clock.now() >= 2.5, timeout=20, what="the scenario under way")
    assert history_core.kill() == -9
    await history_core.start()  # the same database: what was written before the kill is there
    await runner.client.wait_for(partial(_reconnected, runner), timeout=20, what="the RM registered again")
    # The queues changed by the RM: one configuration change; the registrations before it were one
    # (the same text again after the restart is no change).
    queues = parse_scenario(SCENARIO % {"end": 10}).config
    more = queues.replace("  - name: batch", "  - name: adhoc\n          - name: batch")
    updated = await runner.client.update_configuration(more)
    assert updated.accepted, updated.errors
    await _finish(runner, task)
    async with aiohttp.ClientSession() as session:
        changes = await rest_until(
            session, _history(history_core, f"configchanges?rmID={rm_id}"),
            lambda body: len(body["changes"]) >= 2, "the configuration changes in the history",
        )  # fmt: skip
        assert [c["change"] for c in changes["changes"]] == ["updated", "registered"]
        assert all(c["who"].startswith("ipv4:127.0.0.1:") for c in changes["changes"])
        assert "+          - name: adhoc" in changes["changes"][0]["diff"]
        assert "+          - name: batch" in changes["changes"][1]["diff"]  # from nothing
        # Both applications, once each, with what they were submitted as.
        listed = await rest_until(
            session, _history(history_core, "applications?limit=10"),
            lambda body: body["total"] == 2, "both applications in the history",
        )  # fmt: skip
        apps = {a["applicationID"]: a for a in listed["applications"]}
        assert set(apps) == {"web", "etl"}
        assert (apps["web"]["queueName"], apps["web"]["user"]) == ("root.services", "alice")
        assert apps["web"]["submittedTime"] is not None and apps["web"]["runningTime"] is not None
        # Filtered by user, by queue.
        alice = await get_json(session, _history(history_core, "applications?user=alice"))
        assert [a["applicationID"] for a in alice["applications"]] == ["web"]
        batch = await get_json(session, _history(history_core, "applications?queue=root.batch"))
        assert [a["applicationID"] for a in batch["applications"]] == ["etl"]
        # web's four services: one allocation row each, however often the core was told of them.
        web = await get_json(session, _history(history_core, "partition/default/application/web"))
        keys = Counter(a["allocationKey"] for a in web["allocations"])
        assert len(keys) == 4 and set(keys.values()) == {1}, keys
        assert all(a["nodeID"].startswith("node-") for a in web["allocations"])
        assert any(e["changeDetail"] == "APP_NEW" for e in web["events"])
        # etl's ten steps: each at most once open, never two rows of one run.
        etl = await get_json(session, _history(history_core, "partition/default/application/etl"))
        open_rows = Counter(a["allocationKey"] for a in etl["allocations"] if a["endTime"] is None)
        assert all(count == 1 for count in open_rows.values()), open_rows
        assert len({a["allocationKey"] for a in etl["allocations"]}) == 10
        # Usage by user: alice's memory-seconds, counted from the allocations' times.
        usage = await get_json(session, _history(history_core, "usage?by=user&from=0"))
        users = {u["user"] for u in usage["usage"]}
        assert {"alice", "bob"} <= users
    # The command line reads the same.
    listing = await _pykorn("history", "--core-rest", history_core.rest_url, "apps", "--user", "bob")
    assert "1 applications" in listing and "etl" in listing and "web" not in listing
    one = await _pykorn("history", "--core-rest", history_core.rest_url, "app", "web")
    assert "web in default (root.services, user alice)" in one and one.count("node-") == 4
    # And from the database itself, no core needed.
    direct = await _pykorn("history", "--db", history_url, "apps", "--queue", "root.services")
    assert "1 applications" in direct and "web" in direct
    config = await _pykorn("history", "--db", history_url, "config", "--rm", rm_id)
    assert "2 configuration changes" in config and "+          - name: adhoc" in config


async def _pykorn(*args: str) -> str:
    done = await asyncio.to_thread(
        subprocess.run,
        [sys.executable, "-m", "pykorn_cli", *args],
        capture_output=True,
        text=True,
        timeout=60,
    )
    assert done.returncode == 0, done.stderr
    return done.stdout


async def test_the_database_stopped_mid_run_does_not_stop_scheduling_and_writes_resume(
    postgres: PostgresServer,
) -> None:
    url = postgres.create_database("history_outage")
    core = CoreProcess(listen=f"127.0.0.1:{free_port()}", extra_args=["--history", url])
    await core.start()
    try:
        rm_id = "rm-outage"
        runner, task = await _runner(core, rm_id, end=8)
        await runner.client.wait_for(lambda: runner.clock.now() >= 1.0, timeout=20, what="under way")
        await asyncio.to_thread(postgres.stop)  # the database goes away: the core schedules on
        await _finish(runner, task)  # every task ran, the database down
        async with aiohttp.ClientSession() as session:
            async with session.get(_history(core, "applications")) as down:
                assert down.status == 503  # said, not hung
            await asyncio.to_thread(postgres.start)
            etl = await rest_until(
                session, _history(core, "partition/default/application/etl"),
                lambda body: len({a["allocationKey"] for a in body.get("allocations", [])}) == 10,
                "etl's ten steps written once the database is back", timeout=60,
            )  # fmt: skip
            assert etl["state"] in ("Running", "Completing", "Completed")
        assert "history database write failed" in core.log_text()
        assert "history database writes resumed" in core.log_text()
    finally:
        await core.stop()
        if not (postgres.data / "postmaster.pid").exists():
            await asyncio.to_thread(postgres.start)
