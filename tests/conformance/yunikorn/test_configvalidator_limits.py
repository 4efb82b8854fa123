"""yunikorn-core's configuration checks of limits, queue structure, queue names and node sorting, held
against pykorn as whole queues.yaml files sent over UpdateConfiguration.

Ported from apache/yunikorn-core pkg/common/configs/configvalidator_test.go at the commit in
`YUNIKORN_CORE_COMMIT` (tests/conformance/upstream.py), the test functions from TestCheckLimitResource to
the end of the file; the code under test is pkg/common/configs/configvalidator.go. Upstream calls one
check helper per row on a Go struct; here each row is a complete configuration whose verdict comes from
the whole check chain (configvalidator.go Validate: queue structure, limits structure, per-queue names,
ACLs and limits, resources, placement, node sorting, maxapplications, then limits down the tree). A row
upstream puts at the top of its helper's recursion (a queue called "parent") sits under `root` here; the
root carries no limits, so what the helper sees is unchanged. Limits that upstream builds from a Go map
(createLimitMaxResources, createLimitMaxApplications: one limit per name, in random order) are written
one per name with the wildcard last, the only order the per-queue check (checkLimit) accepts.

A refused row also asserts that the configuration in force did not change (the tree is still the open
root the probe registered with) and, where there is an obvious one, that an error names the offending
user, group, queue, key or value. An accepted row asserts the queue tree the core built on REST.

Ported cases per upstream test function:
  TestCheckLimitResource          20 of 20 rows
  TestCheckLimitMaxApplications   14 of 14 rows
  TestCheckLimits                 15 of 15 rows
  TestCheckLimitsStructure         6 of 6 checks ("TestCheckLimitsStructure/<check>"); where the limits
                                   land on the root queue, read on REST as the limit a user's or group's
                                   usage of root is held to (/usage/user, /usage/group), which needs a
                                   leaf queue under root and one running application added to the row
  TestCheckQueuesStructure         6 of 6 rows
  TestCheckQueues                  8 of 8 rows
  TestCheckNodeSortingPolicy       4 of 4 rows (the policy and weights read on /ws/v1/partitions)
  TestIsQueueNameValid             3 of 3 checks ("TestIsQueueNameValid/<name>")
  Total                           76 cases

Not ported: none (0). Two rows are observed differently from the helper call upstream makes, because a
real load never reaches the helper in the state the row builds:
  * TestCheckLimitsStructure/top queue is not root: checkLimitsStructure refuses a top queue that is
    not root, but Validate runs checkQueuesStructure first, which puts a root above it; the same
    configuration loaded is accepted with root.test, and that is what the case asserts.
  * TestCheckQueues rows whose queue is not called root ("validQueue"): written as the single top-level
    queue, so a root is inserted above it and checkQueues reaches it from there.
"""

from __future__ import annotations

from collections.abc import Iterator, Mapping, Sequence
from dataclasses import dataclass
from typing import Any
from urllib.parse import quote

import pytest
import yaml

from tests.conformance.core_probe import CoreProbe, Verdict
from tests.conformance.upstream import YUNIKORN_CORE_COMMIT, yunikorn_case

Json = dict[str, Any]
WILDCARD = "*"

UPSTREAM = f"apache/yunikorn-core@{YUNIKORN_CORE_COMMIT} pkg/common/configs/configvalidator_test.go"


# Configuration builders -------------------------------------------------------------------------------
def _wildcard_last(names: Mapping[str, Any] | None) -> list[tuple[str, Any]]:
    items = list((names or {}).items())
    return [i for i in items if i[0] != WILDCARD] + [i for i in items if i[0] == WILDCARD]


def res_limits(
    users: Mapping[str, Mapping[str, str]] | None, groups: Mapping[str, Mapping[str, str]] | None
) -> list[Json]:
    """One maxresources limit per user, then one per group (upstream's createLimitMaxResources)."""
    out: list[Json] = [
        {"limit": "user-limit", "users": [name], "maxresources": dict(res)}
        for name, res in _wildcard_last(users)
    ]
    out += [
        {"limit": "group-limit", "groups": [name], "maxresources": dict(res)}
        for name, res in _wildcard_last(groups)
    ]
    return out


def app_limits(users: Mapping[str, int] | None, groups: Mapping[str, int] | None) -> list[Json]:
    """One maxapplications limit per user, then one per group (upstream's createLimitMaxApplications)."""
    out: list[Json] = [
        {"limit": "user-limit", "users": [name], "maxapplications": apps}
        for name, apps in _wildcard_last(users)
    ]
    out += [
        {"limit": "group-limit", "groups": [name], "maxapplications": apps}
        for name, apps in _wildcard_last(groups)
    ]
    return out


def queue(name: str, *children: Json, limits: Sequence[Json] = (), **fields: Any) -> Json:
    out: Json = {"name": name, **fields}
    if limits:
        out["limits"] = list(limits)
    if children:
        out["queues"] = list(children)
    return out


class _Plain(yaml.SafeDumper):
    """Writes an object used twice (the same limit on partition and root) out twice, not as an alias:
    an alias would make both one YAML node, hiding how the core compares two written limits."""

    def ignore_aliases(self, data: Any) -> bool:
        return True


def config(*top_queues: Json, **partition: Any) -> str:
    """A one-partition queues.yaml; `queues` is left out when no queue is given."""
    part: Json = {"name": "default", **partition}
    if top_queues:
        part["queues"] = list(top_queues)
    return yaml.dump({"partitions": [part]}, Dumper=_Plain, sort_keys=False)


def under_root(*queues: Json) -> str:
    return config(queue("root", *queues))


def paths(q: Json, prefix: str = "") -> Iterator[str]:
    """The full path of `q` and of every queue below it, lower case as the core names queues."""
    path = f"{prefix}.{q['name']}".lstrip(".").lower()
    yield path
    for child in q.get("queues", ()):
        yield from paths(child, path)


# Assertions -------------------------------------------------------------------------------------------
async def assert_refused(probe: CoreProbe, text: str, mentions: Sequence[str] = ()) -> Verdict:
    verdict = await probe.update(text)
    assert not verdict.accepted, f"accepted, upstream refuses:\n{text}"
    said = "\n".join(verdict.errors).lower()
    for word in mentions:
        assert word.lower() in said, f"no error names {word!r}: {verdict.errors}"
    assert set(await probe.queues()) == {"root"}, "a refused configuration changed the queue tree"
    return verdict


async def assert_accepted(probe: CoreProbe, text: str, tree: Sequence[str] | None = None) -> Json:
    """Accepted, and (given `tree`) exactly these queues on REST; returns the queues by path."""
    verdict = await probe.update(text)
    assert verdict.accepted, f"refused, upstream accepts: {verdict.errors}\n{text}"
    queues = await probe.queues()
    if tree is not None:
        assert sorted(queues) == sorted(tree)
    return queues


@dataclass(frozen=True)
class Row:
    """An upstream row: the queue it checks (placed under root), and what upstream answers."""

    parent: Json
    refused: bool = False
    mentions: tuple[str, ...] = ()


def _params(test: str, rows: Mapping[str, object]) -> list[Any]:
    return [pytest.param(row, id=yunikorn_case(test, name)) for name, row in rows.items()]


async def _check_row(probe: CoreProbe, row: Row) -> None:
    text = under_root(row.parent)
    if row.refused:
        await assert_refused(probe, text, row.mentions)
    else:
        await assert_accepted(probe, text, ["root", *paths(row.parent, "root")])


# TestCheckLimitResource -------------------------------------------------------------------------------
MEM = {"memory": "100"}


def _mem(value: str) -> dict[str, str]:
    return {"memory": value}


LIMIT_RESOURCE_ROWS: dict[str, Row] = {
    "leaf queue user group maxresources are within immediate parent queue user group maxresources": Row(
        queue(
            "parent",
            queue(
                "child1",
                queue(
                    "child2",
                    limits=res_limits(
                        {"test-user": _mem("10"), "test-user2": _mem("10")},
                        {"test-group": _mem("10"), "test-group2": _mem("10")},
                    ),
                ),
                limits=res_limits(
                    {"test-user": _mem("50"), "test-user2": _mem("50")},
                    {"test-group": _mem("50"), "test-group2": _mem("50")},
                ),
            ),
            limits=res_limits({"test-user": MEM, "*": MEM}, {"test-group": MEM, "*": MEM}),
        )
    ),
    "leaf queue user group maxresources are within ancestor parent queue user group maxresources": Row(
        queue(
            "parent",
            queue(
                "child1",
                queue("childA", limits=res_limits({"test-user": _mem("50")}, {"test-group": _mem("50")})),
                queue("childB", limits=res_limits({"test-user": _mem("10")}, {"test-group": _mem("10")})),
            ),
            limits=res_limits({"test-user": MEM}, {"test-group": MEM}),
        )
    ),
    "leaf queue user maxresources exceed parent queue user maxresources": Row(
        queue(
            "parent",
            queue("child1", limits=res_limits({"test-user": _mem("200")}, {"test-group": _mem("50")})),
            limits=res_limits({"test-user": MEM}, {"test-group": MEM}),
        ),
        refused=True,
        mentions=("test-user",),
    ),
    "leaf queue group maxresources exceed parent queue group maxresources": Row(
        queue(
            "parent",
            queue("child1", limits=res_limits({"test-user": _mem("50")}, {"test-group": _mem("200")})),
            limits=res_limits({"test-user": MEM}, {"test-group": MEM}),
        ),
        refused=True,
        mentions=("test-group",),
    ),
    "queues at same level maxresources can be greater or less than or equal to the other but with in "
    "immediate parent": Row(
        queue(
            "parent",
            queue("child1", limits=res_limits({"test-user": _mem("50")}, {"test-group": _mem("50")})),
            queue("child2", limits=res_limits({"test-user": _mem("60")}, {"test-group": _mem("60")})),
            limits=res_limits({"test-user": MEM}, {"test-group": MEM}),
        )
    ),
    "queues at same level maxresources can be greater or less than or equal to the other but with in "
    "ancestor parent": Row(
        queue(
            "parent",
            queue(
                "child1",
                queue("childA", limits=res_limits({"test-user": _mem("50")}, {"test-group": _mem("50")})),
                queue("childB", limits=res_limits({"test-user": _mem("60")}, {"test-group": _mem("60")})),
            ),
            limits=res_limits({"test-user": MEM}, {"test-group": MEM}),
        )
    ),
    "leaf queue user maxresources exceed grandparent queue user maxresources": Row(
        queue(
            "parent",
            queue(
                "child1",
                queue(
                    "child2", limits=res_limits({"test-user1": _mem("10"), "test-user2": _mem("150")}, None)
                ),
                limits=res_limits({"test-user1": _mem("50")}, None),
            ),
            limits=res_limits({"test-user1": MEM, "test-user2": MEM}, None),
        ),
        refused=True,
        mentions=("test-user2",),
    ),
    "leaf queue group maxresources exceed grandparent queue group maxresources": Row(
        queue(
            "parent",
            queue(
                "child1",
                queue(
                    "child2", limits=res_limits(None, {"test-group1": _mem("10"), "test-group2": _mem("150")})
                ),
                limits=res_limits(None, {"test-group1": _mem("50")}),
            ),
            limits=res_limits(None, {"test-group1": MEM, "test-group2": MEM}),
        ),
        refused=True,
        mentions=("test-group2",),
    ),
    "leaf queue user maxresources exceed parent queue wildcard maxresources": Row(
        queue(
            "parent",
            queue("child1", limits=res_limits({"test-user1": _mem("50"), "test-user2": _mem("150")}, None)),
            limits=res_limits({"test-user1": MEM, "*": MEM}, None),
        ),
        refused=True,
        mentions=("test-user2",),
    ),
    "leaf queue group maxresources exceed parent queue wildcard maxresources": Row(
        queue(
            "parent",
            queue("child1", limits=res_limits(None, {"test-group1": _mem("50"), "test-group2": _mem("150")})),
            limits=res_limits(None, {"test-group1": MEM, "*": MEM}),
        ),
        refused=True,
        mentions=("test-group2",),
    ),
    "leaf queue user maxresources exceed grandparent queue wildcard maxresources": Row(
        queue(
            "parent",
            queue(
                "child1",
                queue(
                    "child2", limits=res_limits({"test-user1": _mem("10"), "test-user2": _mem("150")}, None)
                ),
                limits=res_limits({"test-user1": _mem("50")}, None),
            ),
            limits=res_limits({"test-user1": MEM, "*": MEM}, None),
        ),
        refused=True,
        mentions=("test-user2",),
    ),
    "leaf queue group maxresources exceed grandparent queue wildcard maxresources": Row(
        queue(
            "parent",
            queue(
                "child1",
                queue(
                    "child2", limits=res_limits(None, {"test-group1": _mem("10"), "test-group2": _mem("150")})
                ),
                limits=res_limits(None, {"test-group1": _mem("50")}),
            ),
            limits=res_limits(None, {"test-group1": MEM, "*": MEM}),
        ),
        refused=True,
        mentions=("test-group2",),
    ),
    "leaf queue user wildcard maxresources are within immediate parent queue wildcard maxresources": Row(
        queue(
            "parent",
            queue(
                "child1",
                queue("child2", limits=res_limits({"*": _mem("10")}, {})),
                limits=res_limits({"*": _mem("50")}, {}),
            ),
            limits=res_limits({"*": MEM}, {}),
        )
    ),
    "leaf queue user wildcard maxresources are within grandparent queue wildcard maxresources": Row(
        queue(
            "parent",
            queue("child1", queue("child2", limits=res_limits({"*": _mem("10")}, {}))),
            limits=res_limits({"*": MEM}, {}),
        )
    ),
    "leaf queue user wildcard maxresources exceed immediate parent queue wildcard maxresources": Row(
        queue(
            "parent",
            queue("child1", limits=res_limits({"*": _mem("150")}, {})),
            limits=res_limits({"*": MEM}, {}),
        ),
        refused=True,
        mentions=("child1",),
    ),
    "leaf queue user wildcard maxresources exceed grandparent queue wildcard maxresources": Row(
        queue(
            "parent",
            queue("child1", queue("child2", limits=res_limits({"*": _mem("150")}, {}))),
            limits=res_limits({"*": MEM}, {}),
        ),
        refused=True,
        mentions=("child2",),
    ),
    "overflow vcore of limit resources": Row(
        queue("parent", limits=res_limits({"*": {"vcore": "1000P"}}, {})), refused=True, mentions=("1000P",)
    ),
    "invalid vcore of limit resources": Row(
        queue("parent", limits=res_limits({"*": {"vcore": "-1"}}, {})), refused=True, mentions=("-1",)
    ),
    "overflow quantity of limit resources": Row(
        queue("parent", limits=res_limits({"*": {"memory": "1000E"}}, {})), refused=True, mentions=("1000E",)
    ),
    "invalid quantity of limit resources": Row(
        queue("parent", limits=res_limits({"*": {"memory": "500m"}}, {})), refused=True, mentions=("500m",)
    ),
}


@pytest.mark.parametrize("row", _params("TestCheckLimitResource", LIMIT_RESOURCE_ROWS))
async def test_check_limit_resource(probe: CoreProbe, row: Row) -> None:
    await _check_row(probe, row)


# TestCheckLimitMaxApplications ------------------------------------------------------------------------
LIMIT_MAX_APPLICATIONS_ROWS: dict[str, Row] = {
    "leaf queue user group maxapplications are within immediate parent queue user group maxapplications": Row(
        queue(
            "parent",
            queue(
                "child1",
                queue(
                    "child2",
                    limits=app_limits(
                        {"test-user": 100, "test-user2": 100}, {"test-group": 100, "test-group2": 100}
                    ),
                ),
                limits=app_limits(
                    {"test-user": 100, "test-user2": 100}, {"test-group": 100, "test-group2": 100}
                ),
            ),
            limits=app_limits({"test-user": 100, "*": 100}, {"test-group": 100, "*": 100}),
        )
    ),
    "leaf queue user group maxapplications are within ancestor parent queue user group maxapplications": Row(
        queue(
            "parent",
            queue(
                "child1",
                queue("childA", limits=app_limits({"test-user": 50}, {"test-group": 50})),
                queue("childB", limits=app_limits({"test-user": 10}, {"test-group": 10})),
            ),
            limits=app_limits({"test-user": 100}, {"test-group": 100}),
        )
    ),
    "leaf queue user maxapplications exceed immediate parent queue user maxapplications": Row(
        queue(
            "parent",
            queue("child1", limits=app_limits({"test-user": 200}, {"test-group": 50})),
            limits=app_limits({"test-user": 100}, {"test-group": 100}),
        ),
        refused=True,
        mentions=("test-user",),
    ),
    "leaf queue group maxapplications exceed parent queue group maxapplications": Row(
        queue(
            "parent",
            queue("child1", limits=app_limits({"test-user": 50}, {"test-group": 200})),
            limits=app_limits({"test-user": 100}, {"test-group": 100}),
        ),
        refused=True,
        mentions=("test-group",),
    ),
    "leaf queue user maxapplications are exceed grandparent queue user maxapplications": Row(
        queue(
            "parent",
            queue("child1", queue("child2", limits=app_limits({"test-user": 150}, {"test-group": 50}))),
            limits=app_limits({"test-user": 100}, {"test-group": 100}),
        ),
        refused=True,
        mentions=("test-user",),
    ),
    "leaf queue group maxapplications are exceed grandparent queue group maxapplications": Row(
        queue(
            "parent",
            queue("child1", queue("child2", limits=app_limits({"test-user": 50}, {"test-group": 150}))),
            limits=app_limits({"test-user": 100}, {"test-group": 100}),
        ),
        refused=True,
        mentions=("test-group",),
    ),
    "leaf queue user maxapplications exceed parent queue wildcard maxapplications": Row(
        queue(
            "parent",
            queue("child1", limits=app_limits({"test-user1": 50, "test-user2": 150}, None)),
            limits=app_limits({"test-user1": 100, "*": 100}, None),
        ),
        refused=True,
        mentions=("test-user2",),
    ),
    "leaf queue group maxapplications exceed parent queue wildcard maxapplications": Row(
        queue(
            "parent",
            queue("child1", limits=app_limits(None, {"test-group1": 50, "test-group2": 150})),
            limits=app_limits(None, {"test-group1": 100, "*": 100}),
        ),
        refused=True,
        mentions=("test-group2",),
    ),
    "leaf queue user maxapplications exceed grandparent queue wildcard maxapplications": Row(
        queue(
            "parent",
            queue(
                "child1",
                queue("child2", limits=app_limits({"test-user1": 10, "test-user2": 150}, None)),
                limits=app_limits({"test-user1": 50}, None),
            ),
            limits=app_limits({"test-user1": 100, "*": 100}, None),
        ),
        refused=True,
        mentions=("test-user2",),
    ),
    "leaf queue group maxapplications exceed grandparent queue wildcard maxapplications": Row(
        queue(
            "parent",
            queue(
                "child1",
                queue("child2", limits=app_limits(None, {"test-group1": 10, "test-group2": 150})),
                limits=app_limits(None, {"test-group1": 50}),
            ),
            limits=app_limits(None, {"test-group1": 100, "*": 100}),
        ),
        refused=True,
        mentions=("test-group2",),
    ),
    "leaf queue wildcard maxapplications is within immediate parent queue wildcard maxapplications": Row(
        queue(
            "parent",
            queue(
                "child1",
                queue("child2", limits=app_limits({"*": 10}, None)),
                limits=app_limits({"*": 50}, None),
            ),
            limits=app_limits({"*": 100}, None),
        )
    ),
    "leaf queue wildcard maxapplications is within grandparent queue wildcard maxapplications": Row(
        queue(
            "parent",
            queue("child1", queue("child2", limits=app_limits({"*": 10}, None))),
            limits=app_limits({"*": 100}, None),
        )
    ),
    "leaf queue wildcard maxapplications exceed immediate parent queue wildcard maxapplications": Row(
        queue(
            "parent",
            queue("child1", limits=app_limits({"*": 150}, None)),
            limits=app_limits({"*": 100}, None),
        ),
        refused=True,
        mentions=("child1",),
    ),
    "leaf queue wildcard maxapplications exceed grandparent queue wildcard maxapplications": Row(
        queue(
            "parent",
            queue("child1", queue("child2", limits=app_limits({"*": 150}, None))),
            limits=app_limits({"*": 100}, None),
        ),
        refused=True,
        mentions=("child2",),
    ),
}


@pytest.mark.parametrize("row", _params("TestCheckLimitMaxApplications", LIMIT_MAX_APPLICATIONS_ROWS))
async def test_check_limit_max_applications(probe: CoreProbe, row: Row) -> None:
    await _check_row(probe, row)


# TestCheckLimits --------------------------------------------------------------------------------------
def _limit(
    kind: str, names: Sequence[str], max_resources: Mapping[str, str] | None = None, apps: int = 0
) -> Json:
    out: Json = {"limit": f"{kind}-limit", f"{kind}s": list(names)}
    if max_resources is not None:
        out["maxresources"] = dict(max_resources)
    if apps:
        out["maxapplications"] = apps
    return out


def _limited(limits: Sequence[Json], max_memory: str = "", max_apps: int = 0) -> Json:
    fields: Json = {}
    if max_memory:
        fields["resources"] = {"max": {"memory": max_memory}}
    if max_apps:
        fields["maxapplications"] = max_apps
    return queue("parent", limits=limits, **fields)


LIMITS_ROWS: dict[str, Row] = {
    "user group maxresources and maxapplications are within queue limits": Row(
        _limited(
            [_limit("user", ["test-user", "*"], MEM, 100), _limit("group", ["test-group", "*"], MEM, 100)],
            "100",
            100,
        )
    ),
    "default queue maxapplications": Row(
        _limited([_limit("user", ["test-user"], apps=100), _limit("group", ["test-group"], apps=100)])
    ),
    "partial fields in maxresources are 0": Row(
        _limited([_limit("user", ["test-user"], {"memory": "100", "cpu": "0", "nvidia.com/gpu": "0"}, 1)])
    ),
    "all fields in maxresources are 0": Row(
        _limited([_limit("user", ["test-user"], {"memory": "0", "cpu": "0"}, 1)]),
        refused=True,
        mentions=("maxresources",),
    ),
    "both maxresources and maxresources are 0": Row(
        _limited([_limit("user", ["test-user"])]), refused=True, mentions=("user-limit",)
    ),
    "user maxresources exceed queue limits": Row(
        _limited(
            [_limit("user", ["test-user"], _mem("200"), 1), _limit("group", ["test-group"], MEM, 1)], "100"
        ),
        refused=True,
        mentions=("maxresources",),
    ),
    "group maxresources exceed queue limits": Row(
        _limited(
            [_limit("user", ["test-user"], MEM, 1), _limit("group", ["test-group"], _mem("200"), 1)], "100"
        ),
        refused=True,
        mentions=("maxresources",),
    ),
    "user maxapplications exceed queue limits": Row(
        _limited(
            [_limit("user", ["test-user"], apps=200), _limit("group", ["test-group"], apps=100)], max_apps=100
        ),
        refused=True,
        mentions=("maxapplications",),
    ),
    "group maxapplications exceed queue limits": Row(
        _limited(
            [_limit("user", ["test-user"], apps=100), _limit("group", ["test-group"], apps=200)], max_apps=100
        ),
        refused=True,
        mentions=("maxapplications",),
    ),
    "user maxapplications is 0": Row(
        _limited([_limit("user", ["test-user"], MEM), _limit("group", ["test-group"], MEM, 100)], "100", 100)
    ),
    "group maxapplications is 0": Row(
        _limited([_limit("user", ["test-user"], MEM, 100), _limit("group", ["test-group"], MEM)], "100", 100)
    ),
    "user wildcard is not last entry": Row(
        _limited(
            [_limit("user", ["*", "test-user"], MEM, 100), _limit("group", ["test-group", "*"], MEM, 100)],
            "100",
            100,
        ),
        refused=True,
        mentions=("test-user",),
    ),
    "group wildcard is not last entry": Row(
        _limited(
            [_limit("user", ["test-user", "*"], MEM, 100), _limit("group", ["*", "test-group"], MEM, 100)],
            "100",
            100,
        ),
        refused=True,
        mentions=("test-group",),
    ),
    "group wildcard is only entry": Row(
        _limited([_limit("group", ["*"], MEM, 100)], "100", 100), refused=True, mentions=("groups",)
    ),
    "both user list and group list in limits are empty": Row(
        queue("parent", limits=[{"users": [], "groups": []}]), refused=True
    ),
}


@pytest.mark.parametrize("row", _params("TestCheckLimits", LIMITS_ROWS))
async def test_check_limits(probe: CoreProbe, row: Row) -> None:
    await _check_row(probe, row)


# TestCheckLimitsStructure -----------------------------------------------------------------------------
USER_LIMIT: Json = {
    "limit": "user-limit",
    "users": ["test-user"],
    "maxapplications": 100,
    "maxresources": MEM,
}
GROUP_LIMIT: Json = {"limit": "group-limit", "groups": ["test-group"], "maxresources": MEM}
NODE = {"memory": 1_000, "vcore": 1_000}
TASK = {"memory": 10, "vcore": 10}


def _limits_structure(partition_limits: Sequence[Json], root_limits: Sequence[Json]) -> str:
    """Upstream's partition with these limits; a leaf under root (and an open submit ACL) is added so
    an application can run and show on REST which limits root holds its user and group to."""
    root = queue("root", queue("leaf"), limits=root_limits, submitacl="*")
    extra: Json = {"limits": list(partition_limits)} if partition_limits else {}
    return config(root, **extra)


async def _root_limits_seen(probe: CoreProbe) -> tuple[Json, Json | None]:
    """Run one application of test-user (group test-group) in root.leaf; its user's and group's usage of
    root as /usage serves them (the group's None when the core tracks no group for it)."""
    client = probe.client
    await client.add_node("node-1", NODE)
    await client.wait_nodes_answered(1)
    assert client.seen.accepted_nodes == ["node-1"], client.seen.rejected_nodes
    placed = await probe.place("app-1", "root.leaf", user="test-user", groups=["test-group"])
    assert placed.queue == "root.leaf", placed.reason
    await client.ask("app-1", "ask-1", TASK)
    await client.wait_allocations(1)
    await client.barrier()
    base = probe.partition_path() + "/usage"
    user = await probe.get(f"{base}/user/{quote('test-user')}")
    groups = await probe.get(f"{base}/groups")
    group = next((g for g in groups if g.get("groupName") == "test-group"), None)
    return user["queues"], (group or {}).get("queues")


def _limit_on(usage: Json | None) -> tuple[Json | None, int | None]:
    assert usage is not None and usage["queuePath"] == "root", usage
    return usage.get("maxResources"), usage.get("maxApplications")


@dataclass(frozen=True)
class OnRoot:
    """A TestCheckLimitsStructure check: partition and root limits, and what root holds test-user and
    test-group to once loaded ((maxResources, maxApplications); group None: no group is tracked).
    `top` other than root: the partition's only queue has that name, and no limits are set."""

    partition: tuple[Json, ...] = ()
    root: tuple[Json, ...] = ()
    refused: bool = False
    user: tuple[Json | None, int | None] = (None, None)
    group: tuple[Json | None, int | None] | None = None
    top: str = "root"


USER_ON_ROOT = ({"memory": 100}, 100)
GROUP_ON_ROOT = ({"memory": 100}, None)
LIMITS_STRUCTURE_CHECKS: dict[str, OnRoot] = {
    # checkLimitsStructure refuses a top queue that is not root, but a load never gets there with one:
    # checkQueuesStructure, before it, has put a root above the queue. The configuration is accepted.
    "top queue is not root": OnRoot(top="test"),
    "partition limits and root queue limits are not equivalent": OnRoot(
        (GROUP_LIMIT,), (USER_LIMIT,), refused=True
    ),
    "partition limits and root queue limits are equivalent": OnRoot(
        (USER_LIMIT,), (USER_LIMIT,), user=USER_ON_ROOT
    ),
    "only partition limits exist": OnRoot((GROUP_LIMIT,), (), group=GROUP_ON_ROOT),
    "only root queue limits exist": OnRoot((), (USER_LIMIT,), user=USER_ON_ROOT),
    "no limits exist": OnRoot(),
}


@pytest.mark.parametrize("case", _params("TestCheckLimitsStructure", LIMITS_STRUCTURE_CHECKS))
async def test_check_limits_structure(probe: CoreProbe, case: OnRoot) -> None:
    if case.top != "root":
        await assert_accepted(probe, config(queue(case.top)), ["root", f"root.{case.top}"])
        return
    text = _limits_structure(case.partition, case.root)
    if case.refused:
        await assert_refused(probe, text, ("limits",))
        return
    await assert_accepted(probe, text, ["root", "root.leaf"])
    user, group = await _root_limits_seen(probe)
    assert _limit_on(user) == case.user
    if case.group is None:
        assert group is None, f"test-group is tracked though no group limit applies: {group}"
    else:
        assert _limit_on(group) == case.group


# TestCheckQueuesStructure -----------------------------------------------------------------------------
# Upstream's rows give root negative resources; its load refuses them for being on root before it
# reads a value (checkQueuesStructure), pykorn for the negative value: the same verdict either way.
NEGATIVE = {"memory": "-50", "vcores": "33"}
QUEUES_STRUCTURE_ROWS: dict[str, Any] = {
    "No Queues Configured": (config(), None, ("queues",)),
    "Single Root Queue": (config(queue("root", parent=True)), {"root": False}, ()),
    "Single Non-Root Queue": (config(queue("non-root")), {"root": False, "root.non-root": True}, ()),
    "Multiple Top-Level Queues": (
        config(queue("queue1"), queue("queue2")),
        {"root": False, "root.queue1": True, "root.queue2": True},
        (),
    ),
    "Root Queue With Guaranteed Resources": (
        config(queue("root", parent=True, resources={"guaranteed": NEGATIVE})),
        None,
        ("resources",),
    ),
    "Root Queue With Max Resources": (
        config(queue("root", parent=True, resources={"max": NEGATIVE})),
        None,
        ("resources",),
    ),
}


@pytest.mark.parametrize(
    ("text", "leaves", "mentions"),
    [
        pytest.param(*row, id=yunikorn_case("TestCheckQueuesStructure", name))
        for name, row in QUEUES_STRUCTURE_ROWS.items()
    ],
)
async def test_check_queues_structure(
    probe: CoreProbe, text: str, leaves: dict[str, bool] | None, mentions: tuple[str, ...]
) -> None:
    """`leaves`: the queues the core builds, each with whether it is a leaf; None: refused."""
    if leaves is None:
        await assert_refused(probe, text, mentions)
        return
    queues = await assert_accepted(probe, text, list(leaves))
    assert {path: q["isLeaf"] for path, q in queues.items()} == leaves


# TestCheckQueues --------------------------------------------------------------------------------------
TOO_LONG = "thisQueueNameIsTooLongthisQueueNameIsTooLongthisQueueNameIsTooLong"
ACLS: Json = {"adminacl": "admin", "submitacl": "submit"}
CHECK_QUEUES_ROWS: dict[str, Any] = {
    "Invalid ACL Format for AdminACL": (
        config(queue("validQueue", queue("validSubQueue"), adminacl="admin group extra", submitacl="submit")),
        None,
        ("adminacl",),
    ),
    "Invalid ACL Format for SubmitACL": (
        config(queue("validQueue", queue("validSubQueue"), adminacl="admin", submitacl="submit group extra")),
        None,
        ("submitacl",),
    ),
    "Duplicate Child Queue Names": (
        config(queue("root", queue("duplicateQueue"), queue("duplicateQueue"), **ACLS)),
        None,
        ("duplicateQueue",),
    ),
    "Duplicate Child Queue Names at level 1": (
        config(
            queue("root", queue("subqueue", queue("duplicateQueue"), queue("duplicateQueue"), **ACLS), **ACLS)
        ),
        None,
        ("duplicateQueue",),
    ),
    "Check Limits Error With Duplicated User Name": (
        config(
            queue(
                "root",
                queue("subqueue"),
                limits=[{"limit": "user-limit", "users": ["user1", "user2", "user1"]}],
                **ACLS,
            )
        ),
        None,
        ("user1",),
    ),
    "Invalid Child Queue Name Length": (config(queue("root", queue(TOO_LONG), **ACLS)), None, (TOO_LONG,)),
    "Invalid Child Queue Name With Special Character": (
        config(queue("root", queue("queue_Name$"), **ACLS)),
        None,
        ("queue_Name$",),
    ),
    "Valid Multiple Queues": (
        config(queue("root", queue("queue_One"), queue("queue-Two"), **ACLS)),
        ["root", "root.queue_one", "root.queue-two"],
        (),
    ),
}


@pytest.mark.parametrize(
    ("text", "tree", "mentions"),
    [
        pytest.param(*row, id=yunikorn_case("TestCheckQueues", name))
        for name, row in CHECK_QUEUES_ROWS.items()
    ],
)
async def test_check_queues(
    probe: CoreProbe, text: str, tree: list[str] | None, mentions: tuple[str, ...]
) -> None:
    """`tree`: the queues the core builds; None: refused."""
    if tree is None:
        await assert_refused(probe, text, mentions)
    else:
        await assert_accepted(probe, text, tree)


# TestCheckNodeSortingPolicy ---------------------------------------------------------------------------
NODE_SORTING_ROWS: dict[str, Any] = {
    "Valid Sorting Policy with Positive Weights": ("fair", {"memory": 1.0}, False),
    "Negative Resource Weight": ("fair", {"memory": -1.0}, True),
    "Undefined Sorting Policy": ("undefinedPolicy", {"memory": 1.0}, True),
    "Valid Policy with Multiple Resources": ("binpacking", {"memory": 2.0, "cpu": 3.0}, False),
}


async def _partition_info(probe: CoreProbe) -> Json:
    """This RM's default partition as /ws/v1/partitions lists it."""
    listed: list[Json] = await probe.get("/ws/v1/partitions")
    mine = [
        p
        for p in listed
        if p.get("name") == f"[{probe.rm_id}]default"
        or (p.get("clusterId") == probe.rm_id and p["name"] == "default")
    ]
    assert len(mine) == 1, listed
    return mine[0]


@pytest.mark.parametrize(
    ("policy", "weights", "refused"),
    [
        pytest.param(*row, id=yunikorn_case("TestCheckNodeSortingPolicy", name))
        for name, row in NODE_SORTING_ROWS.items()
    ],
)
async def test_check_node_sorting_policy(
    probe: CoreProbe, policy: str, weights: dict[str, float], refused: bool
) -> None:
    text = config(queue("root"), nodesortpolicy={"type": policy, "resourceweights": weights})
    if refused:
        mentions = [policy] if policy != "fair" else list(weights)
        await assert_refused(probe, text, mentions)
        return
    await assert_accepted(probe, text, ["root"])
    info = await _partition_info(probe)
    assert info["nodeSortingPolicy"] == {"type": policy, "resourceWeights": weights}


# TestIsQueueNameValid ---------------------------------------------------------------------------------
QUEUE_NAMES = {
    "parent_Child_test-a_b_#_c_#_d_/_e@dom:ain": True,
    "invalid!queue": False,
    "root.parent": False,
}


@pytest.mark.parametrize(
    ("name", "valid"),
    [
        pytest.param(name, valid, id=yunikorn_case("TestIsQueueNameValid", name))
        for name, valid in QUEUE_NAMES.items()
    ],
)
async def test_is_queue_name_valid(probe: CoreProbe, name: str, valid: bool) -> None:
    text = config(queue("root", queue(name)))
    if valid:
        await assert_accepted(probe, text, ["root", f"root.{name.lower()}"])
    else:
        await assert_refused(probe, text, (name,))
