"""Shared pieces of the ports of yunikorn-core's user and group limit tests (pkg/scheduler/ugm).

Upstream drives its user/group manager directly: `IncreaseTrackedResource` stands for an allocation,
`DecreaseTrackedResource` for a release (with removeApp when the application has nothing left),
`Headroom` and `CanRunApp` for the two checks the scheduler makes before it allocates (application.go
tryAllocate, queue.go TryAllocate). Here the same steps go through pykorn's interfaces: a queues.yaml
with the limits, one node big enough for everything, applications submitted as the row's users, asks
that are allocated or stay pending, releases, and the REST usage views (/ws/v1/partition/{p}/usage/...).

* Headroom H (per resource type) of an application is read as: an ask of H+1 in any one type stays
  pending, and an ask of exactly H is allocated (`Ugm.assert_room`). A headroom of zero: an ask of 1
  in any limited type stays pending. These asks change the usage, so a case reads headroom last.
* CanRunApp of a new application is read as: an ask of a type no limit names (`pods`) is allocated
  iff the application may start; one that may not stays pending with the application Accepted.
"""

from __future__ import annotations

import itertools
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any
from urllib.parse import quote

import yaml

from rmclient import messages
from tests.conformance.core_probe import CoreProbe

Json = dict[str, Any]
Res = Mapping[str, int]

# The node every case runs on: far more than any limit, in every resource type the cases use.
NODE = {
    "memory": 10**12,
    "mem": 10**12,
    "vcores": 10**12,
    "vcore": 10**12,
    "pods": 10**6,
    "cpu": 10**12,
    "gpu": 10**6,
    "first": 10**6,
    "unknown": 10**6,
}
POD = {"pods": 1}  # an ask no limit holds on resources: only maxapplications can keep it pending

# upstream manager_test.go resources (memory and vcores, as plain quantities)
LARGE = {"memory": "100", "vcores": "100"}
MEDIUM = {"memory": "50", "vcores": "50"}
MEDIUM_MEM = {"memory": "50"}
MEDIUM_VCORES = {"vcores": "50"}
TINY = {"memory": "25", "vcores": "25"}


def res(conf: Mapping[str, str] | None) -> dict[str, int]:
    """A configuration's quantities as an ask's (the plain numbers these cases use)."""
    return {k: int(v) for k, v in (conf or {}).items()}


# Configuration ---------------------------------------------------------------------------------------
@dataclass(frozen=True)
class Lim:
    """One `limits` entry. Empty names are left out, as upstream's ugm skips them (manager.go
    internalProcessConfig) and its configuration check refuses them (configvalidator.go checkLimit)."""

    users: Sequence[str] = ()
    groups: Sequence[str] = ()
    max_resources: Mapping[str, str] | None = None
    max_apps: int = 0
    name: str = ""

    def as_yaml(self) -> Json | None:
        users = [u for u in self.users if u]
        groups = [g for g in self.groups if g]
        if not users and not groups:
            return None
        out: Json = {}
        if self.name:
            out["limit"] = self.name
        if users:
            out["users"] = users
        if groups:
            out["groups"] = groups
        if self.max_resources is not None:
            out["maxresources"] = dict(self.max_resources)
        if self.max_apps:
            out["maxapplications"] = self.max_apps
        return out


def limit(users: Sequence[str] | None, groups: Sequence[str] | None, max_res: Any, apps: int) -> Lim:
    """upstream createLimit"""
    return Lim(tuple(users or ()), tuple(groups or ()), max_res, apps)


@dataclass(frozen=True)
class Q:
    name: str
    limits: Sequence[Lim] = ()
    children: Sequence[Q] = ()

    def as_yaml(self) -> Json:
        out: Json = {"name": self.name, "submitacl": "*"}
        if self.children:
            out["parent"] = True
            out["queues"] = [c.as_yaml() for c in self.children]
        rendered = [y for y in (lim.as_yaml() for lim in self.limits) if y is not None]
        if rendered:
            out["limits"] = rendered
        return out


def queues_yaml(root: Q) -> str:
    return yaml.safe_dump({"partitions": [{"name": "default", "queues": [root.as_yaml()]}]}, sort_keys=False)


def leaves(names: Iterable[str]) -> tuple[Q, ...]:
    return tuple(Q(n) for n in names)


# Scenario -------------------------------------------------------------------------------------------
@dataclass
class Ugm:
    """One case's RM: a registered configuration, one big node, applications, asks and releases."""

    probe: CoreProbe
    _keys: itertools.count[int] = field(default_factory=itertools.count)
    _asks: dict[str, str] = field(default_factory=dict)  # key -> application

    @classmethod
    async def start(cls, probe: CoreProbe, config: str) -> Ugm:
        verdict = await probe.register(config)
        assert verdict, verdict.errors
        await probe.client.add_node("node-1", NODE)
        await probe.client.wait_nodes_answered(1)
        assert probe.client.seen.accepted_nodes == ["node-1"], probe.client.seen.rejected_nodes
        return cls(probe)

    async def update(self, config: str) -> None:
        verdict = await self.probe.update(config)
        assert verdict, verdict.errors
        await self.settle()

    async def app(self, app_id: str, queue: str, user: str, groups: Sequence[str] = ()) -> None:
        placed = await self.probe.place(app_id, queue, user, groups)
        assert placed.queue == queue, placed

    async def ask(self, app_id: str, resource: Res, count: int = 1) -> list[str]:
        """Send `count` asks of `resource` for the application; their allocation keys."""
        keys = [f"{app_id}-ask-{next(self._keys)}" for _ in range(count)]
        await self.probe.client.asks(messages.ask(app_id, key, resource) for key in keys)
        for key in keys:
            self._asks[key] = app_id
        return keys

    async def settle(self) -> None:
        await self.probe.client.barrier()

    async def alloc(self, app_id: str, resource: Res, count: int = 1) -> list[str]:
        """Asks that upstream's IncreaseTrackedResource stands for: each must be allocated."""
        keys = await self.ask(app_id, resource, count)
        await self.settle()
        missing = [k for k in keys if not self.allocated(k)]
        assert not missing, f"asks {missing} of {app_id} {dict(resource)} were not allocated"
        return keys

    def allocated(self, key: str) -> bool:
        return key in self.probe.client.seen.allocations

    async def release(self, *keys: str) -> None:
        await self.probe.client.release_many([(self._asks[k], k) for k in keys])
        await self.settle()
        left = [k for k in keys if k in self.probe.client.seen.allocations]
        assert not left, f"allocations {left} were not released"

    # what a user sees ------------------------------------------------------------------------------
    async def pending(self, app_id: str, resource: Res, count: int = 1) -> bool:
        """Send asks and say whether all of them stay pending after the core has scheduled."""
        keys = await self.ask(app_id, resource, count)
        await self.settle()
        return not any(self.allocated(k) for k in keys)

    async def fits(self, app_id: str, resource: Res) -> bool:
        """Send one ask and say whether it was allocated."""
        (key,) = await self.ask(app_id, resource)
        await self.settle()
        return self.allocated(key)

    async def room(self, app_id: str, expected: Res) -> tuple[dict[str, bool], bool]:
        """How the application's headroom compares with `expected`: for each type whether an ask of one
        more stays pending, then whether an ask of exactly `expected` (if non-zero) is allocated."""
        over = {k: (await self.ask(app_id, {k: v + 1}))[0] for k, v in expected.items()}
        exact = [k for k, v in expected.items() if v > 0]
        key = (await self.ask(app_id, {k: expected[k] for k in exact}))[0] if exact else ""
        await self.settle()
        return {k: not self.allocated(v) for k, v in over.items()}, (not key or self.allocated(key))

    async def assert_room(self, app_id: str, expected: Res) -> None:
        over, exact = await self.room(app_id, expected)
        assert over == dict.fromkeys(expected, True), (
            f"{app_id}: an ask over {dict(expected)} was allocated in {[k for k, v in over.items() if not v]}"
        )
        assert exact, f"{app_id}: an ask of {dict(expected)} stayed pending"

    async def state(self, app_id: str) -> str:
        app = await self.probe.get(f"{self.probe.partition_path()}/application/{quote(app_id, safe='')}")
        return str(app["applicationState"])

    # REST usage views ------------------------------------------------------------------------------
    def _usage(self, path: str) -> str:
        return f"{self.probe.partition_path()}/usage/{path}"

    async def users(self) -> dict[str, Json]:
        body = await self.probe.get(self._usage("users"))
        return {u["userName"]: u for u in body or []}

    async def groups(self) -> dict[str, Json]:
        body = await self.probe.get(self._usage("groups"))
        return {g["groupName"]: g for g in body or []}

    async def user(self, name: str) -> Json | None:
        """/usage/user/{name}, None when the core says it tracks no such user (404)."""
        return await self._one("user", name)

    async def group(self, name: str) -> Json | None:
        return await self._one("group", name)

    async def _one(self, kind: str, name: str) -> Json | None:
        assert self.probe._session is not None
        url = self.probe.rest_url + self._usage(f"{kind}/{quote(name, safe='')}")
        async with self.probe._session.get(url) as response:
            body = await response.json(content_type=None)
            assert response.status in (200, 404), (url, response.status, body)
            return body if response.status == 200 else None


def levels(tracker: Json | None) -> dict[str, Json]:
    """A user's or group's queue usage tree flattened by queue path."""
    out: dict[str, Json] = {}
    stack = [tracker["queues"]] if tracker and tracker.get("queues") else []
    while stack:
        queue = stack.pop()
        out[queue["queuePath"]] = queue
        stack.extend(queue.get("children") or [])
    return out


def level(tracker: Json | None, path: str) -> Json:
    """One queue level of a usage tree ({} when the tracker does not have it)."""
    return levels(tracker).get(path, {})


def limits_of(tracker: Json | None) -> dict[str, tuple[dict[str, int], int]]:
    """Per queue level: (maxResources, maxApplications), empty/0 where none."""
    return {
        path: (dict(q.get("maxResources") or {}), int(q.get("maxApplications") or 0))
        for path, q in levels(tracker).items()
    }


def usage_of(tracker: Json | None) -> dict[str, tuple[dict[str, int], list[str]]]:
    """Per queue level: (resourceUsage, sorted runningApplications)."""
    return {
        path: (dict(q.get("resourceUsage") or {}), sorted(q.get("runningApplications") or []))
        for path, q in levels(tracker).items()
    }
