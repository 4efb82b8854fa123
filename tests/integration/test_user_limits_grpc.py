"""User and group limits over gRPC: what a user, a group and a parent queue may use, maxapplications,
a core restart, a reload that lowers a limit, and the REST usage views. Each test waits for the
fact it asserts on: the allocations it expects, and the pending reason the core gives (over REST)
for the ask a limit holds, which proves the cycle that placed the others has run."""

from __future__ import annotations

import asyncio
import json
import subprocess
import sys
from collections import Counter
from collections.abc import Callable, Mapping
from pathlib import Path
from typing import Any
from urllib.parse import quote

import aiohttp

from rmclient import messages
from rmclient.core_process import CoreProcess
from tests.integration.rest_helpers import get_json
from tests.limits_config import limits_config
from tests.recording_client import RecordingClient

ASK = {"memory": 1_000, "vcore": 100}


def _config(leaf_limits: str = "", parent_limits: str = "") -> str:
    return limits_config(leaf_limits, parent_limits, parent="team")


async def _setup(
    client: RecordingClient, config: str, apps: Mapping[str, tuple[str, str, tuple[str, ...]]]
) -> None:
    """Register, one roomy node, and applications: id -> (leaf, user, groups)."""
    await client.register(config=config)
    await client.add_node("node-1", {"memory": 100_000, "vcore": 100_000})
    await client.wait_nodes_answered(1)
    for app_id, (leaf, user, groups) in apps.items():
        await client.add_application(app_id, f"root.team.{leaf}", user=user, groups=groups)
    await client.wait_apps_answered(len(apps))
    assert sorted(client.seen.accepted_apps) == sorted(apps), client.seen.rejected_apps


async def _ask(client: RecordingClient, app_id: str, count: int, prefix: str = "") -> None:
    await client.asks(messages.ask(app_id, f"{prefix or app_id}-{i}", ASK) for i in range(count))


def _per_app(client: RecordingClient) -> Counter[str]:
    return Counter(a.applicationID for a in client.seen.allocations.values())


def _app_url(rest_url: str, rm_id: str, app_id: str) -> str:
    return f"{rest_url}/ws/v1/partition/{quote(f'[{rm_id}]default', safe='')}/application/{app_id}"


async def _until(
    read: Callable[[], Any], done: Callable[[Any], bool], what: str, timeout: float = 15.0
) -> Any:
    """Read (a REST view) until `done` holds: the core has said what the test waits for."""
    loop = asyncio.get_running_loop()
    deadline = loop.time() + timeout
    while True:
        value = await read()
        if done(value):
            return value
        if loop.time() > deadline:
            raise TimeoutError(f"timed out waiting for {what}; last read {value}")
        await asyncio.sleep(0.05)


async def _reason(rest_url: str, rm_id: str, app_id: str, words: str) -> str:
    """Wait until a pending ask of `app_id` says why it waits with `words`; returns the reason."""
    async with aiohttp.ClientSession() as session:

        async def read() -> list[str]:
            app = await get_json(session, _app_url(rest_url, rm_id, app_id))
            return [log["message"] for ask in app.get("requests", []) for log in ask.get("allocationLog", [])]

        reasons = await _until(
            read, lambda rs: any(words in r for r in rs), f"a pending reason with {words!r}"
        )
        return str(next(r for r in reasons if words in r))


async def test_a_named_users_maxresources_caps_that_user_and_not_another(
    client: RecordingClient, rm_id: str, rest_url: str
) -> None:
    apps = {"alice-app": ("a", "alice", ()), "bob-app": ("a", "bob", ())}
    await _setup(client, _config("- users: [alice]\n  maxresources: {memory: 3000}"), apps)
    await _ask(client, "alice-app", 5)
    await _ask(client, "bob-app", 5)
    await client.wait_allocations(8)
    reason = await _reason(rest_url, rm_id, "alice-app", "user alice's limit")
    assert (
        reason
        == "over user alice's limit in queue root.team.a: asks {'memory': 1000}, room left {'memory': 0}"
    )
    assert _per_app(client) == {"alice-app": 3, "bob-app": 5}


async def test_the_wildcard_caps_each_user_separately(
    client: RecordingClient, rm_id: str, rest_url: str
) -> None:
    apps = {f"{u}-app": ("a", u, ()) for u in ("ann", "ben", "cat")}
    await _setup(client, _config("- users: ['*']\n  maxresources: {memory: 2000}"), apps)
    for app_id in apps:
        await _ask(client, app_id, 4)
    await client.wait_allocations(6)
    for app_id in apps:
        await _reason(rest_url, rm_id, app_id, "'s limit in queue root.team.a")
    assert _per_app(client) == dict.fromkeys(apps, 2)


async def test_a_groups_limit_is_shared_by_its_members(
    client: RecordingClient, rm_id: str, rest_url: str
) -> None:
    apps = {"x-app": ("a", "x", ("dev",)), "y-app": ("a", "y", ("dev", "ops")), "z-app": ("a", "z", ("ops",))}
    await _setup(client, _config("- groups: [dev]\n  maxresources: {memory: 3000}"), apps)
    for app_id in apps:
        await _ask(client, app_id, 4)
    await client.wait_allocations(7)  # dev: 3 between x and y; z is not in dev
    await _reason(rest_url, rm_id, "x-app", "group dev's limit")
    await _reason(rest_url, rm_id, "y-app", "group dev's limit")
    got = _per_app(client)
    assert got["x-app"] + got["y-app"] == 3 and got["z-app"] == 4


async def test_maxapplications_keeps_a_users_second_application_waiting_until_the_first_completes(
    client: RecordingClient, rm_id: str, rest_url: str
) -> None:
    apps = {"first": ("a", "alice", ()), "second": ("a", "alice", ())}
    await _setup(client, _config("- users: [alice]\n  maxapplications: 1"), apps)
    await _ask(client, "first", 2)
    await client.wait_allocations(2)
    await _ask(client, "second", 2)
    reason = await _reason(rest_url, rm_id, "second", "may not start yet")
    assert "user alice's limit in queue root.team.a (1 running application) is reached" in reason
    # The REST API can show the state before the stream's answer has reached the client: wait for it.
    await client.wait_for(lambda: "second" in client.seen.app_states, what="second's state")
    assert client.seen.app_states["second"][-1] == "Accepted"
    assert _per_app(client) == {"first": 2}
    await client.release("first")  # the first completes: its allocations go
    await client.wait_allocations(4)
    assert _per_app(client) == {"second": 2}
    await client.wait_for(lambda: client.seen.app_states["second"][-1] == "Running", what="second to run")


async def test_a_parent_queue_limit_caps_usage_across_its_children(
    client: RecordingClient, rm_id: str, rest_url: str
) -> None:
    apps = {"in-a": ("a", "carol", ()), "in-b": ("b", "carol", ())}
    await _setup(client, _config(parent_limits="- users: [carol]\n  maxresources: {memory: 5000}"), apps)
    await _ask(client, "in-a", 4)
    await _ask(client, "in-b", 4)
    await client.wait_allocations(5)
    await _reason(rest_url, rm_id, "in-b" if _per_app(client)["in-a"] == 4 else "in-a", "queue root.team")
    assert sum(_per_app(client).values()) == 5


async def test_a_reload_that_lowers_a_limit_blocks_new_allocations_and_preempts_nothing(
    client: RecordingClient, rm_id: str, rest_url: str
) -> None:
    await _setup(
        client, _config("- users: [alice]\n  maxresources: {memory: 6000}"), {"app": ("a", "alice", ())}
    )
    await _ask(client, "app", 4)
    await client.wait_allocations(4)
    reply = await client.update_configuration(_config("- users: [alice]\n  maxresources: {memory: 2000}"))
    assert reply.accepted, list(reply.errors)
    await client.asks([messages.ask("app", "after-reload", ASK)])
    reason = await _reason(rest_url, rm_id, "app", "user alice's limit")
    assert "room left {'memory': 0}" in reason
    assert len(client.seen.allocations) == 4 and client.seen.released == []  # nothing taken back
    async with aiohttp.ClientSession() as session:
        base = f"{rest_url}/ws/v1/partition/{quote(f'[{rm_id}]default', safe='')}"
        alice = await get_json(session, f"{base}/usage/user/alice")
    leaf = alice["queues"].get("children", [])[0].get("children", [])[0]
    assert leaf["queuePath"] == "root.team.a"
    assert leaf.get("resourceUsage", {})["memory"] == 4000 and leaf.get("maxResources", {}) == {
        "memory": 2000
    }


async def test_the_rest_usage_views_show_users_and_groups_in_yunikorns_shape(
    client: RecordingClient, rm_id: str, rest_url: str
) -> None:
    config = _config(
        "- users: [alice]\n  maxapplications: 3\n- groups: [dev]\n  maxresources: {memory: 9000}"
    )
    await _setup(client, config, {"app-1": ("a", "alice", ("dev",)), "app-2": ("b", "bob", ())})
    await _ask(client, "app-1", 2)
    await _ask(client, "app-2", 1)
    await client.wait_allocations(3)
    base = f"{rest_url}/ws/v1/partition/{quote(f'[{rm_id}]default', safe='')}"
    async with aiohttp.ClientSession() as session:
        users = await get_json(session, f"{base}/usage/users")
        alice = await get_json(session, f"{base}/usage/user/alice")
        groups = await get_json(session, f"{base}/usage/groups")
        dev = await get_json(session, f"{base}/usage/group/dev")
        missing = await get_json(session, f"{base}/usage/user/nobody-here", status=404)
        invalid = await get_json(session, f"{base}/usage/group/{quote('*')}", status=400)
    assert [u["userName"] for u in users] == ["alice", "bob"]
    assert users[0] == alice
    assert alice == {
        "userName": "alice",
        "groups": {"app-1": "dev"},
        "queues": {
            "queuePath": "root", "resourceUsage": {"memory": 2000, "vcore": 200},
            "runningApplications": ["app-1"],
            "children": [{
                "queuePath": "root.team", "resourceUsage": {"memory": 2000, "vcore": 200},
                "runningApplications": ["app-1"],
                "children": [{
                    "queuePath": "root.team.a", "resourceUsage": {"memory": 2000, "vcore": 200},
                    "runningApplications": ["app-1"], "maxApplications": 3,
                }],
            }],
        },
    }  # fmt: skip
    assert [g["groupName"] for g in groups] == ["dev"]  # a group is tracked where a limit names it
    assert dev["applications"] == ["app-1"]
    assert dev["queues"].get("children", [])[0].get("children", [])[0].get("maxResources", {}) == {
        "memory": 9000
    }
    assert "User not found" in missing["message"] and "Invalid group name" in invalid["message"]


async def test_a_limit_holds_after_a_core_restart_because_replayed_usage_counts(rm_id: str) -> None:
    config = _config("- users: [alice]\n  maxresources: {memory: 3000}")
    first = CoreProcess()
    await first.start()
    address = first.address
    second = CoreProcess(listen=address)
    try:
        async with RecordingClient(address, rm_id) as client:
            await _setup(client, config, {"app": ("a", "alice", ())})
            await _ask(client, "app", 3)
            running = await client.wait_allocations(3)
        await first.stop()
        await second.start()
        async with RecordingClient(address, rm_id) as client:
            # What an RM re-sends after a restart: nodes, applications, what runs (with its node), asks.
            await _setup(client, config, {"app": ("a", "alice", ())})
            await client.asks(messages.ask("app", a.allocationKey, ASK, node_id=a.nodeID) for a in running)
            await client.wait_allocations(3)  # each replayed allocation is confirmed
            await client.asks([messages.ask("app", "new", ASK)])
            reason = await _reason(second.rest_url, rm_id, "app", "user alice's limit")
            assert "room left {'memory': 0}" in reason
            assert len(client.seen.new_allocations) == 3
    finally:
        await second.stop()
        await first.stop()


def test_the_user_limits_example_holds_the_queue_where_its_limits_say(
    core_address: str, tmp_path: Path
) -> None:
    """examples/user-limits.yaml through the fake RM against a running core: every expectation met."""
    report_path = tmp_path / "limits.json"
    example = Path(__file__).resolve().parents[2] / "examples" / "user-limits.yaml"
    result = subprocess.run(
        [sys.executable, "-m", "pykorn_cli", "fake", "run", str(example), "--core", core_address,
         "--speed", "8", "--report", str(report_path)],
        capture_output=True, text=True, timeout=120,
    )  # fmt: skip
    assert result.returncode == 0, result.stdout + result.stderr
    report = json.loads(report_path.read_text())
    assert report["all_expectations_met"] and report["tasks"]["finished"] == 54
    assert report["queues"]["root.shared"]["usage"]["max"] == 18_000  # milli-vcores
