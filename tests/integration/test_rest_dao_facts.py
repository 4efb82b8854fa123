"""Every REST endpoint's JSON against YuniKorn's dao json tags (tests/data/yunikorn_rest_facts.json,
read from yunikorn-core's pkg/webservice): each key one upstream has (or pykorn's own, under "pykorn"),
each value of the Go type's JSON kind, every field without omitempty present. On a state that holds
running, pending, completed, rejected and gang applications, a child template, a filtered placement
rule, a foreign allocation and a reservation."""

from __future__ import annotations

import json
import re
import time
from pathlib import Path
from typing import Any

import aiohttp
import pytest

from core.scheduler.cluster import ClusterContext
from core.server.rest import StateAPI, json_handler
from core.server.rest_cluster import ClusterAPI
from rmclient import messages
from tests.integration.rest_helpers import get_json, partition_url
from tests.recording_client import RecordingClient

FACTS = json.loads((Path(__file__).parent.parent / "data" / "yunikorn_rest_facts.json").read_text())
STRUCTS: dict[str, dict[str, dict[str, Any]]] = FACTS["structs"]
# Nested structs the dao refers to by type; si.Resource and time are checked by their JSON kind.
_SCALARS = {"string": str, "bool": bool, "float64": float}
_INTS = {"int", "int32", "int64", "uint64", "*int64"}

CONFIG = """
partitions:
  - name: default
    placementrules:
      - name: provided
        create: false
      - name: tag
        value: namespace
        create: true
        filter: {type: allow, users: [alice, bob]}
        parent: {name: fixed, value: root.teams}
    queues:
      - name: root
        submitacl: "*"
        queues:
          - name: teams
            parent: true
            childtemplate:
              maxapplications: 3
              resources: {max: {memory: 8000}}
          - name: jobs
            properties: {application.sort.policy: fifo, preemption.delay: 90s}
            resources: {max: {memory: 8000}}
          - name: apps
            maxapplications: 5
            resources: {guaranteed: {memory: 1000}, max: {memory: 6000}}
"""


def _kind_errors(value: Any, go: str, where: str) -> list[str]:
    """Whether `value` is what encoding/json writes for Go type `go`."""
    if go.startswith("*") and go not in _INTS and go not in ("*resources.Resource",):
        return _kind_errors(value, go[1:], where)
    if go in _INTS:
        ok = isinstance(value, int) and not isinstance(value, bool)
        return [] if ok else [f"{where}: {value!r} is not an integer ({go})"]
    if go in _SCALARS:
        wanted = _SCALARS[go]
        ok = isinstance(value, wanted) or (wanted is float and isinstance(value, int | float))
        return (
            []
            if ok and not (wanted is not bool and isinstance(value, bool))
            else [f"{where}: {value!r} is not {go}"]
        )
    if go.startswith("map[string]"):
        if not isinstance(value, dict):
            return [f"{where}: {value!r} is not an object ({go})"]
        inner = go[len("map[string]") :]
        if inner == "interface{}":
            return []
        return [e for k, v in value.items() for e in _kind_errors(v, inner, f"{where}.{k}")]
    if go.startswith("[]"):
        if not isinstance(value, list):
            return [f"{where}: {value!r} is not a list ({go})"]
        return [e for i, v in enumerate(value) for e in _kind_errors(v, go[2:], f"{where}[{i}]")]
    name = go.split(".")[-1]
    if name in STRUCTS and go.split(".")[0] in (name, "dao"):
        return shape_errors(value, name, where)
    if name == "Time":
        return [] if isinstance(value, str) else [f"{where}: {value!r} is not a time string"]
    return [] if isinstance(value, dict) else [f"{where}: {value!r} is not an object ({go})"]


def shape_errors(value: Any, struct: str, where: str = "") -> list[str]:
    """Keys and kinds of one JSON object against an upstream struct."""
    if not isinstance(value, dict):
        return [f"{where or struct}: {value!r} is not an object ({struct})"]
    fields = STRUCTS[struct]
    errors: list[str] = []
    for key, item in value.items():
        if key == "pykorn":
            continue  # pykorn's own additions, under a name upstream will not use
        if key not in fields:
            errors.append(f"{where or struct}: {key!r} is not a field of {struct}")
            continue
        errors += _kind_errors(item, fields[key]["go"], f"{where or struct}.{key}")
    for key, fact in fields.items():
        if key.startswith("<") or fact.get("omitempty") or fact.get("untagged") or key in value:
            continue
        errors.append(f"{where or struct}: {key!r} (no omitempty upstream) is missing")
    return errors


def _list_errors(value: Any, struct: str, where: str) -> list[str]:
    if not isinstance(value, list):
        return [f"{where}: not a list"]
    return [e for i, item in enumerate(value) for e in shape_errors(item, struct, f"{where}[{i}]")]


@pytest.fixture
async def loaded(client: RecordingClient) -> RecordingClient:
    """Running, pending, completed, rejected and gang applications; a foreign pod; a reservation."""
    await client.register(config=CONFIG)
    for node in ("node-1", "node-2"):
        await client.add_node(node, {"memory": 4_000, "vcore": 4_000}, attributes={"si/hostname": node})
    await client.wait_nodes_answered(2)
    await client.asks(
        [messages.ask("", "dns", {"memory": 500}, node_id="node-2", tags={"foreign": "default"})]
    )
    await client.add_applications(
        messages.application("running", "root.apps", user="alice", groups=("dev",)),
        messages.application("waiting", "root.jobs", user="bob"),
        messages.application("done", "root.apps"),
        messages.application("lost", "root.nowhere"),  # no rule places it: rejected
        messages.application("gang", "root.jobs", placeholder_ask={"memory": 1_000}, gang_style="Soft"),
        messages.application("ns-app", "", user="alice", tags={"namespace": "ml"}),
    )
    await client.wait_apps_answered(6)
    await client.asks([
        messages.ask("running", "r0", {"memory": 1_000}, priority=5),
        messages.ask("running", "r1", {"memory": 1_000}),
        messages.ask("waiting", "w0", {"memory": 7_000}),  # more than any node holds: pending
        messages.ask("done", "d0", {"memory": 100}),
        messages.ask("gang", "ph-0", {"memory": 500}, task_group="workers", placeholder=True),
        messages.ask("gang", "ph-1", {"memory": 500}, task_group="workers", placeholder=True),
        messages.ask("ns-app", "n0", {"memory": 100}),
    ])  # fmt: skip
    await client.wait_allocations(6)
    await client.remove_application("done")  # completed at once
    await client.barrier()
    return client


ENDPOINTS = [
    ("/ws/v1/clusters", "[]ClusterDAOInfo"),
    ("/ws/v1/partitions", "[]PartitionInfo"),
    ("{part}/placementrules", "[]RuleDAO"),
    ("{part}/queues", "PartitionQueueDAOInfo"),
    ("{part}/queue/root.jobs", "PartitionQueueDAOInfo"),
    ("{part}/queue/root.apps/applications", "[]ApplicationDAOInfo"),
    ("{part}/queue/root.apps/application/running", "ApplicationDAOInfo"),
    ("{part}/queue/root.jobs/applications/active", "[]ApplicationDAOInfo"),
    ("{part}/nodes", "[]NodeDAOInfo"),
    ("{part}/node/node-2", "NodeDAOInfo"),
    ("{part}/application/running", "ApplicationDAOInfo"),
    ("{part}/application/gang", "ApplicationDAOInfo"),
    ("{part}/application/waiting", "ApplicationDAOInfo"),
    ("{part}/applications/active", "[]ApplicationDAOInfo"),
    ("{part}/applications/completed", "[]ApplicationDAOInfo"),
    ("{part}/applications/rejected", "[]ApplicationDAOInfo"),
    ("{part}/usage/users", "[]UserResourceUsageDAOInfo"),
    ("{part}/usage/user/alice", "UserResourceUsageDAOInfo"),
    ("/ws/v1/history/apps", "[]ApplicationHistoryDAOInfo"),
    ("/ws/v1/history/containers", "[]ContainerHistoryDAOInfo"),
    ("/ws/v1/scheduler/node-utilizations", "[]PartitionNodesUtilDAOInfo"),
    ("/ws/v1/scheduler/healthcheck", "SchedulerHealthDAOInfo"),
    ("/ws/v1/events/batch", "EventRecordDAO"),
    ("/debug/fullstatedump", "AggregatedStateInfo"),
]


@pytest.mark.parametrize(
    "path, shape", ENDPOINTS, ids=[re.sub(r"[^a-z0-9]+", "-", p).strip("-") for p, _ in ENDPOINTS]
)
async def test_each_endpoint_has_upstreams_keys_and_types(
    loaded: RecordingClient, rest_url: str, rm_id: str, path: str, shape: str
) -> None:
    url = path.format(part=partition_url(rest_url, rm_id)) if path.startswith("{") else rest_url + path
    async with aiohttp.ClientSession() as session:
        body = await get_json(session, url)
    errors = (
        _list_errors(body, shape[2:], path) if shape.startswith("[]") else shape_errors(body, shape, path)
    )
    assert not errors, "\n".join(errors)
    if shape.startswith("[]"):
        assert body, f"{path}: nothing to compare"


async def test_the_state_shows_what_the_web_ui_reads(
    loaded: RecordingClient, rest_url: str, rm_id: str
) -> None:
    """The fields the issue names, with values a user would check."""
    base = partition_url(rest_url, rm_id)
    async with aiohttp.ClientSession() as session:
        running = await get_json(session, f"{base}/application/running")
        assert [e["applicationState"] for e in running["stateLog"]] == ["New", "Accepted", "Running"]
        assert (
            running["maxUsedResource"] == {"memory": 2_000} and "maxRequestPriority" not in running
        )  # no asks
        assert running["startTime"] > 0 and "finishedTime" not in running
        done = (await get_json(session, f"{base}/applications/completed"))[0]
        assert done["applicationID"] == "done" and done["finishedTime"] >= done["submissionTime"]
        rejected = (await get_json(session, f"{base}/applications/rejected"))[0]
        assert rejected["applicationState"] == "Rejected" and rejected["rejectedMessage"]
        gang = await get_json(session, f"{base}/application/gang")
        assert gang["placeholderData"][0]["taskGroupName"] == "workers"
        assert all(a["placeholder"] for a in gang["allocations"])
        apps = await get_json(session, f"{base}/queue/root.apps")
        assert apps["absUsedCapacity"] == {"memory": 33}  # 2000 of 6000
        assert apps["maxRunningApps"] == 5 and apps["sortingPolicy"] == "fifo"
        assert apps["preemptionEnabled"] is True and apps["isPreemptionFence"] is False
        jobs = await get_json(session, f"{base}/queue/root.jobs")
        assert jobs["preemptionDelay"] == "1m30s"
        teams = await get_json(session, f"{base}/queue/root.teams")
        assert teams["template"] == {"maxApplications": 3, "maxResource": {"memory": 8_000}}
        root = await get_json(session, f"{base}/queues")
        assert "root.teams" in root["childNames"] and "root.teams.ml" in teams["childNames"]
        partition = next(
            p for p in await get_json(session, f"{rest_url}/ws/v1/partitions") if p["clusterId"] == rm_id
        )
        assert partition["preemptionEnabled"] is True and partition["quotaPreemptionEnabled"] is False
        assert partition["lastStateTransitionTime"] > 0
        rules = await get_json(session, f"{base}/placementrules")
        assert [r["name"] for r in rules] == ["provided", "tag", "recovery"]  # recovery: always last
        assert rules[1]["parameters"] == {"create": "true", "tagName": "namespace"}
        assert rules[1]["filter"] == {"type": "allow", "userList": ["alice", "bob"]}
        assert rules[1]["parentRule"]["parameters"]["queue"] == "root.teams"
        node = await get_json(session, f"{base}/node/node-2")
        assert [a["allocationKey"] for a in node["foreignAllocations"]] == ["dns"]


async def test_unknown_application_states_answer_400_as_upstream(
    loaded: RecordingClient, rest_url: str, rm_id: str
) -> None:
    base = partition_url(rest_url, rm_id)
    async with aiohttp.ClientSession() as session:
        body = await get_json(session, f"{base}/applications/sleeping", status=400)
        assert body["message"] == "Only following application states are allowed: active, rejected, completed"
        bad_status = await get_json(session, f"{base}/applications/active?status=dreaming", status=400)
        assert bad_status["message"].startswith("Only following active statuses are allowed: new,accepted")
        queue = await get_json(session, f"{base}/queue/root.apps/applications/completed", status=400)
        assert queue["message"] == "Only following application states are allowed: active"


async def test_cors_config_json_redirects_stack_and_pprof(
    loaded: RecordingClient, rest_url: str, rm_id: str
) -> None:
    async with aiohttp.ClientSession() as session:
        async with session.get(f"{rest_url}/ws/v1/partitions") as response:
            assert response.headers["Access-Control-Allow-Origin"] == "*"
            assert response.headers["Access-Control-Allow-Methods"] == "GET, OPTIONS"
        preflight = {"Origin": "http://ui.example", "Access-Control-Request-Method": "GET"}
        async with session.options(f"{rest_url}/ws/v1/partitions", headers=preflight) as response:
            assert response.status == 200 and response.headers["Access-Control-Allow-Origin"] == "*"
        headers = {"Accept": "application/json"}
        async with session.get(f"{rest_url}/ws/v1/config?rmID={rm_id}", headers=headers) as response:
            config = await response.json()
        assert config["Partitions"][0]["Name"] == "default"
        assert config["Partitions"][0]["Queues"][0]["Queues"][1]["Properties"]["preemption.delay"] == "90s"
        assert set(config) >= {"DeadlockDetectionEnabled", "DeadlockTimeoutSeconds"}
        assert not shape_errors(config, "ConfigDAOInfo")
        async with session.get(f"{rest_url}/ws/v1/stack", allow_redirects=False) as response:
            assert response.status == 301 and response.headers["Location"] == "/debug/stack"
        async with session.get(f"{rest_url}/debug/stack") as response:
            assert "thread MainThread" in await response.text()
        async with session.get(f"{rest_url}/debug/pprof/heap") as response:
            assert response.status == 501


def test_every_upstream_route_is_served() -> None:
    """The route table of routes.go, each one answered by a handler here (checked by path shape)."""
    context = ClusterContext(time.monotonic)
    routes = StateAPI(context, "").routes() + ClusterAPI(context, lambda rm_id: "").routes(json_handler)
    served = {(route.method, route.path) for route in routes}
    missing = [
        (r["method"], r["path"])
        for r in FACTS["routes"]
        if (r["method"], _aiohttp_path(r["path"])) not in served
        and not (r["path"].startswith("/debug/pprof") and ("GET", "/debug/pprof/{tail:.*}") in served)
    ]
    assert not missing, missing


def _aiohttp_path(path: str) -> str:
    parts = [("{" + {"partition": "p", "queue": "q", "application": "a", "node": "n", "state": "s",
                     "user": "u", "group": "g"}[p[1:]] + "}") if p.startswith(":") else p
             for p in path.split("/")]  # fmt: skip
    return "/".join(parts)
