"""yunikorn-core's configuration loading tests, run through pykorn's public interfaces.

Ported from pkg/common/configs/config_test.go at apache/yunikorn-core commit YUNIKORN_CORE_COMMIT
(tests.conformance.upstream). The code those tests exercise is config.go (strict YAML decoding into Go
structs with KnownFields, ParseAndValidateConfig, the checksum) and configvalidator.go.

Each case is the queues.yaml text the upstream test loads. It goes to the core two ways:
  * UpdateConfiguration on a registered RM (`probe.update`, or registration where the case is about
    what an RM registers with): accepted or refused, and for an accepted text the result on REST
    (queue tree, isLeaf, resources, maxRunningApps, properties, placement rules, the partitions'
    preemption flags, user and group limits on the usage views, ACLs by placing applications);
  * POST /ws/v1/validate-conf, which upstream answers with exactly the function these tests call
    (LoadSchedulerConfigFromByteArray, webservice/handlers.go validateConf): allowed or not.
Upstream's answers on the two differ only where the core does more than the validator: placement rule
names the validator lets through and the placement manager refuses on a reload
(scheduler/placement/rule.go newRule, scheduler/partition.go updatePartitionDetails), and the empty
text, which the core replaces by its default configuration (scheduler/context.go) while validate-conf
validates it as an empty configuration. Such cases say both expectations.

go-yaml v3 semantics the cases rely on: a struct field without a tag is matched by its name lower-cased,
exactly (`maxapplications`, `placementrules`); with KnownFields an unknown key is an error; a value
that does not decode into the field's Go type (`create: bogus` into a bool) is an error; a null
resource quantity decodes to "" and then fails to parse as a quantity.

Ported cases per upstream Test function (upstream rows or checks -> ported):
  TestConfigSerdeQueues                    1 ->  1 (the struct as YAML: valid, and the tree it gives)
  TestConfigSerdeLimits                    1 ->  1 (the struct as YAML: valid, tree and user limits)
  TestLoadQueueConfig                      8 ->  8 (the sequence of asserts, one case each)
  TestDeepQueueHierarchy                   2 ->  2
  TestParsePartitionFail                   3 ->  3
  TestParseQueue                           1 ->  1
  TestParseQueueFail                       5 ->  5
  TestParseResourceFail                    3 ->  3
  TestParseACLFail                         3 ->  3
  TestPartitionPreemptionParameter         3 ->  3
  TestParseRule                            4 ->  4
  TestParseRuleFail                        5 ->  5
  TestRecurseParent                        1 ->  1
  TestPartitionLimits                      1 ->  1 (accepted only: the partition has no leaf to run in)
  TestQueueLimits                          1 ->  1
  TestSameLevelQueueLimitsResourceFail     5 ->  5
  TestComplexUsers                         1 ->  1 (accepted only: the partition has no leaf to run in)
  TestLimitsFail                          15 -> 15
  TestLoadSchedulerConfigFromByteArray     4 ->  4
  TestGetConfigurationString               7 ->  5 (the checksum /ws/v1/config shows)
  TestUserLimitsWithHierarchicalQueue      5 ->  5
  TestGroupLimitsWithHierarchicalQueue     5 ->  5
  TestUserGroupResolverConfig              2 ->  2
  total                                   86 -> 84

Not ported (2):
  * TestGetConfigurationString/Empty config and checksum: the core replaces an empty text by its own
    default configuration before it takes the checksum, and pykorn's default differs from YuniKorn's
    on purpose; that the empty text is accepted is TestLoadSchedulerConfigFromByteArray/Empty config.
  * TestGetConfigurationString/Empty config: a text of only a checksum line has no partitions, so no
    RM can run with it (upstream would register an RM with no partition at all); that the checksum
    line is left out of the checksum is what the other rows check.
Partly observable: the serde tests' Go round trips (yaml.Marshal, json.Marshal) are not; what is, the
YAML text of the struct they build loading and giving that tree, is ported.
"""

from __future__ import annotations

import hashlib
from collections.abc import Awaitable, Callable
from dataclasses import dataclass
from typing import Any

import aiohttp
import pytest

from rmclient import messages
from tests.conformance.core_probe import CoreProbe
from tests.conformance.upstream import YUNIKORN_CORE_COMMIT, deliberate, yunikorn_case

UNKNOWN_RULES = deliberate("unknown-rule-names")
RESOLVERS = deliberate("group-resolvers")

assert YUNIKORN_CORE_COMMIT  # the commit the cases were read at

Check = Callable[[CoreProbe], Awaitable[None]]


@dataclass(frozen=True)
class Case:
    config: str
    accepted: bool  # what UpdateConfiguration (or registration) answers upstream
    valid: bool | None = None  # what validate-conf answers upstream; None: the same as `accepted`
    register: bool = False  # send it as a fresh RM's registration instead of an update
    names: tuple[str, ...] = ()  # a refusal should name one of these (the offending key or value)
    check: Check | None = None  # for an accepted text: what REST shows


# Helpers ------------------------------------------------------------------------------------------


async def validate_conf(probe: CoreProbe, text: str) -> tuple[bool, str]:
    """POST /ws/v1/validate-conf: YuniKorn's {"allowed", "reason"}."""
    url = f"{probe.rest_url}/ws/v1/validate-conf"
    async with aiohttp.ClientSession() as session, session.post(url, data=text.encode()) as response:
        body = await response.json(content_type=None)
        assert response.status == 200, (response.status, body)
    return bool(body["allowed"]), str(body.get("reason", ""))


async def config_json(probe: CoreProbe) -> dict[str, Any]:
    """/ws/v1/config for this RM as JSON (YuniKorn's ConfigDAOInfo)."""
    async with (
        aiohttp.ClientSession() as session,
        session.get(
            f"{probe.rest_url}/ws/v1/config",
            params={"rmID": probe.rm_id},
            headers={"Accept": "application/json"},
        ) as response,
    ):
        body = await response.json(content_type=None)
        assert response.status == 200, (response.status, body)
    assert isinstance(body, dict), body
    return body


def vcore(cores: int) -> int:
    """YuniKorn reads a `vcore` quantity in cores and keeps it in millicores."""
    return cores * 1000


async def tree(probe: CoreProbe, partition: str = "default") -> dict[str, dict[str, Any]]:
    return await probe.queues(partition)


def expect_queues(queues: dict[str, dict[str, Any]], leaves: set[str], parents: set[str]) -> None:
    assert set(queues) == leaves | parents, sorted(queues)
    for name in leaves:
        assert queues[name]["isLeaf"] is True, (name, queues[name])
    for name in parents:
        assert queues[name]["isLeaf"] is False, (name, queues[name])


async def configured_rules(probe: CoreProbe, partition: str = "default") -> list[dict[str, Any]]:
    """The partition's rules on REST, without the recovery rule YuniKorn always appends."""
    return [rule for rule in await probe.placement_rules(partition) if rule.get("name") != "recovery"]


async def partition_info(probe: CoreProbe, name: str) -> dict[str, Any]:
    partitions = await probe.get("/ws/v1/partitions")
    mine = [p for p in partitions if p.get("clusterId") == probe.rm_id and p.get("name") == name]
    assert len(mine) == 1, partitions
    info: dict[str, Any] = mine[0]
    return info


async def run_one(probe: CoreProbe, app_id: str, queue: str, user: str, groups: tuple[str, ...] = ()) -> None:
    """An application of `user` in `queue` with one allocation, so the usage views track the user."""
    if "node-1" not in probe.client.seen.accepted_nodes:
        await probe.client.add_node("node-1", {"memory": 1_000_000, "vcore": 1_000_000})
        await probe.client.wait_nodes_answered(1)
        assert "node-1" in probe.client.seen.accepted_nodes, probe.client.seen.rejected_nodes
    placed = await probe.place(app_id, queue, user=user, groups=groups)
    assert placed.queue == queue, placed
    before = len(probe.client.seen.new_allocations)
    await probe.client.asks([messages.ask(app_id, f"{app_id}-1", {"memory": 1, "vcore": 1})])
    await probe.client.wait_allocations(before + 1)


async def open_leaf(probe: CoreProbe, text: str, leaf_line: str) -> None:
    """Reload `text` with `submitacl: "*"` on the leaf named by `leaf_line`: these configurations let
    nobody submit, and a user's limits show on REST once the user runs something. Nothing else changes,
    so the limits in force are the configuration's own."""
    assert text.count(leaf_line) == 1, leaf_line
    indent = " " * (len(leaf_line) - len(leaf_line.lstrip()) + 2)
    verdict = await probe.update(text.replace(leaf_line, f'{leaf_line}{indent}submitacl: "*"\n'))
    assert verdict.accepted, verdict.errors


def usage_queue(usage: dict[str, Any], path: str) -> dict[str, Any]:
    """The entry for queue `path` in a /usage/user or /usage/group answer."""
    stack = [usage["queues"]]
    while stack:
        entry = stack.pop()
        if entry.get("queuePath") == path:
            found: dict[str, Any] = entry
            return found
        stack.extend(entry.get("children") or [])
    raise AssertionError(f"{path} not in {usage}")


async def user_usage(probe: CoreProbe, user: str) -> dict[str, Any]:
    result: dict[str, Any] = await probe.get(f"{probe.partition_path()}/usage/user/{user}")
    return result


async def group_usage(probe: CoreProbe, group: str) -> dict[str, Any]:
    result: dict[str, Any] = await probe.get(f"{probe.partition_path()}/usage/group/{group}")
    return result


# TestConfigSerdeQueues / TestConfigSerdeLimits: the Go structs they marshal, written as YAML ------

SERDE_QUEUES = """
partitions:
  - name: default
    queues:
      - name: a
        parent: true
        properties:
          acl: abc
          x: y
        resources:
          guaranteed:
            a: 100
          max: {}
        queues:
          - name: a1
            properties: {}
            resources:
              guaranteed:
                memory: 100
              max:
                cpu: 10
            queues: []
          - name: a2
            properties: {}
            resources:
              guaranteed:
                memory: 200
              max:
                cpu: 20
            queues: []
      - name: b
        parent: true
        properties:
          acl: abc
          x: y
        resources:
          guaranteed:
            a: 100
          max: {}
        queues:
          - name: b1
            properties: {}
            resources:
              guaranteed:
                memory: 10
              max:
                cpu: 1
            queues: []
          - name: b2
            properties: {}
            resources:
              guaranteed:
                memory: 20
              max:
                cpu: 2
            queues: []
"""


async def check_serde_queues(probe: CoreProbe) -> None:
    queues = await tree(probe)
    expect_queues(queues, {"root.a.a1", "root.a.a2", "root.b.b1", "root.b.b2"}, {"root", "root.a", "root.b"})
    for parent in ("root.a", "root.b"):
        assert queues[parent].get("guaranteedResource") == {"a": 100}, queues[parent]
        props = queues[parent].get("properties") or {}
        assert props.get("acl") == "abc" and props.get("x") == "y", queues[parent]
    for leaf, memory, cpu in (
        ("root.a.a1", 100, 10),
        ("root.a.a2", 200, 20),
        ("root.b.b1", 10, 1),
        ("root.b.b2", 20, 2),
    ):
        assert queues[leaf].get("guaranteedResource") == {"memory": memory}, queues[leaf]
        assert queues[leaf].get("maxResource") == {"cpu": cpu}, queues[leaf]


SERDE_LIMITS = """
partitions:
  - name: default
    queues:
      - name: test
        limits:
          - limit: queue limit
            users:
              - user1
            groups:
              - group1
            maxresources:
              memory: 10
              vcores: 10
            maxapplications: 1
    limits:
      - limit: partition limit 1
        users:
          - user1
        groups:
          - group1
        maxresources:
          memory: 10
          vcores: 10
        maxapplications: 1
      - limit: partition limit 2
        users:
          - user2
        maxresources:
          memory: 10
      - limit: partition limit 3
        groups:
          - group3
        maxapplications: 1
"""


async def check_serde_limits(probe: CoreProbe) -> None:
    expect_queues(await tree(probe), {"root.test"}, {"root"})
    await open_leaf(probe, SERDE_LIMITS, "      - name: test\n")
    await run_one(probe, "serde-user1", "root.test", "user1", ("group1",))
    usage = await user_usage(probe, "user1")
    for path in ("root", "root.test"):
        entry = usage_queue(usage, path)
        assert entry.get("maxApplications") == 1, entry
        assert entry.get("maxResources") == {"memory": 10, "vcores": 10}, entry


# TestLoadQueueConfig -------------------------------------------------------------------------------

LOAD_QUEUE_CONFIG = """
partitions:
  - name: default
    queues:
      - name: root
        queues:
          - name: production
            resources:
              guaranteed:
                {memory: 1000, vcore: 10}
              max:
                {memory: 10000, vcore: 100}
          - name: test
            properties:
              something: withAvalue
            resources:
              guaranteed:
                memory: 200
                vcore: 2
              max:
                memory: 3000
                vcore: 30
          - name: sandbox
            parent: true
            submitacl: " sandbox"
            resources:
              guaranteed:
                memory: 400
                vcore: 4
              max:
                memory: 5000
                vcore: 50
  - name: gpu
    queues:
      - name: production
        adminacl: "admin admin"
        maxapplications: 10
      - name: test
        submitacl: "*"
        resources:
          max: {memory: 1000, vcore: 10}
"""


async def check_load_partitions(probe: CoreProbe) -> None:
    expect_queues(await tree(probe), {"root.production", "root.test"}, {"root", "root.sandbox"})
    # gpu: two top-level queues, so a root is put above them
    expect_queues(await tree(probe, "gpu"), {"root.production", "root.test"}, {"root"})


async def check_load_guaranteed(probe: CoreProbe) -> None:
    queues = await tree(probe)
    assert queues["root.production"].get("guaranteedResource") == {"memory": 1000, "vcore": vcore(10)}


async def check_load_max(probe: CoreProbe) -> None:
    queues = await tree(probe)
    assert queues["root.test"].get("maxResource") == {"memory": 3000, "vcore": vcore(30)}
    assert queues["root.production"].get("maxResource") == {"memory": 10000, "vcore": vcore(100)}
    gpu = await tree(probe, "gpu")
    assert gpu["root.test"].get("maxResource") == {"memory": 1000, "vcore": vcore(10)}


async def check_load_properties(probe: CoreProbe) -> None:
    queues = await tree(probe)
    assert (queues["root.test"].get("properties") or {}).get("something") == "withAvalue", queues["root.test"]


async def check_load_second_partition(probe: CoreProbe) -> None:
    gpu = await tree(probe, "gpu")
    assert gpu["root.production"]["queuename"] == "root.production"
    assert gpu["root.production"]["partition"] in ("gpu", f"[{probe.rm_id}]gpu"), gpu["root.production"]


async def check_load_maxapplications(probe: CoreProbe) -> None:
    gpu = await tree(probe, "gpu")
    assert gpu["root.production"].get("maxRunningApps") == 10, gpu["root.production"]


async def check_load_admin_acl(probe: CoreProbe) -> None:
    # gpu's root has no ACL; root.production's admin ACL "admin admin" lets user admin (and group
    # admin) submit, and nobody else
    assert (await probe.place("by-admin", "root.production", user="admin", partition="gpu")).queue == (
        "root.production"
    )
    assert (
        await probe.place(
            "by-admin-group", "root.production", user="alice", groups=("admin",), partition="gpu"
        )
    ).queue == "root.production"
    assert (await probe.place("by-other", "root.production", user="bob", partition="gpu")).rejected


async def check_load_submit_acl(probe: CoreProbe) -> None:
    assert (await probe.place("anyone", "root.test", user="anyone", partition="gpu")).queue == "root.test"


# TestParseRule -----------------------------------------------------------------------------------


async def check_rule_user_filter(probe: CoreProbe) -> None:
    rules = await configured_rules(probe)
    assert len(rules) == 1, rules
    rule = rules[0]
    assert rule["name"] == "user", rule
    assert (rule.get("parameters") or {}).get("create") == "true", rule
    assert rule.get("parentRule") is None, rule
    flt = rule.get("filter") or {}
    assert flt.get("type") == "allow", rule
    assert set(flt.get("userList") or ()) == {"test1"}, rule
    assert set(flt.get("groupList") or ()) == {"test1"}, rule


async def check_rule_values(probe: CoreProbe) -> None:
    expect_queues(await tree(probe), {"root.default"}, {"root"})
    rules = await configured_rules(probe)
    assert [r["name"] for r in rules] == ["fixed", "tag"], rules
    assert (rules[0].get("parameters") or {}).get("queue") == "root.default", rules[0]
    # YuniKorn keeps a rule's value lower-cased (placement/rule.go normalise)
    assert (rules[1].get("parameters") or {}).get("tagName") == "just any value", rules[1]


async def check_recurse_parent(probe: CoreProbe) -> None:
    rules = await configured_rules(probe)
    assert len(rules) == 1, rules
    user = rules[0]
    assert user["name"] == "user", user
    fixed = user.get("parentRule") or {}
    assert fixed.get("name") == "fixed" and (fixed.get("parameters") or {}).get("queue") == "test", user
    provided = fixed.get("parentRule") or {}
    assert provided.get("name") == "provided" and provided.get("parentRule") is None, user


# TestPartitionPreemptionParameter ----------------------------------------------------------------


def preemption_check(enabled: bool, quota: bool) -> Check:
    async def check(probe: CoreProbe) -> None:
        default = await partition_info(probe, "default")
        assert default["preemptionEnabled"] is enabled, default
        assert default["quotaPreemptionEnabled"] is quota, default
        other = await partition_info(probe, "partition-0")  # no preemption section: the defaults
        assert other["preemptionEnabled"] is True and other["quotaPreemptionEnabled"] is False, other

    return check


def preemption_config(section: str) -> str:
    return f"""
partitions:
  - name: default
    queues:
      - name: root
{section}  - name: "partition-0"
    queues:
      - name: root
"""


# TestQueueLimits ---------------------------------------------------------------------------------

QUEUE_LIMITS = """
partitions:
  - name: default
    queues:
      - name: root
        limits:
          - limit:
            users:
            - user1
            maxresources: {memory: 10000, vcore: 10}
            maxapplications: 5
          - limit:
            users:
            - user2
            groups:
            - prod
            maxapplications: 10
        queues:
          - name: level1
            limits:
              - limit:
                users:
                - subuser
                maxapplications: 1
"""


async def check_queue_limits(probe: CoreProbe) -> None:
    expect_queues(await tree(probe), {"root.level1"}, {"root"})
    await open_leaf(probe, QUEUE_LIMITS, "          - name: level1\n")
    await run_one(probe, "app-user1", "root.level1", "user1")
    await run_one(probe, "app-user2", "root.level1", "user2", ("prod",))
    await run_one(probe, "app-subuser", "root.level1", "subuser")
    user1 = usage_queue(await user_usage(probe, "user1"), "root")
    assert user1.get("maxApplications") == 5, user1
    assert user1.get("maxResources") == {"memory": 10000, "vcore": vcore(10)}, user1
    user2 = usage_queue(await user_usage(probe, "user2"), "root")
    assert user2.get("maxApplications") == 10 and not user2.get("maxResources"), user2
    prod = usage_queue(await group_usage(probe, "prod"), "root")
    assert prod.get("maxApplications") == 10 and not prod.get("maxResources"), prod
    sub = usage_queue(await user_usage(probe, "subuser"), "root.level1")
    assert sub.get("maxApplications") == 1 and not sub.get("maxResources"), sub


# TestLoadSchedulerConfigFromByteArray / TestGetConfigurationString -------------------------------

VALID_CONF = """
partitions:
  -
    name: default
    placementrules:
      - name: tag
        value: namespace
        create: true
    queues:
      - name: root
        submitacl: '*'
        properties:
          application.sort.policy: fifo
          sample: value2
"""

INVALID_CONF = """
partitions:
  -
    name: default
    placementrules:
      - name: tag
        value: namespace
        create: true
    queues:
      - name: root
        submitacl: '*'
        sample: value1
"""

MIXED_SPACES_CONF = """
partitions:
  -
    name: default
    placementrules:
      - name: tag
        value: namespace
        create: true
    queues:
      - name: root
        submitacl: '*'
        properties:
            application.sort.policy: fifo
"""


def root_properties_check(expected: dict[str, str]) -> Check:
    async def check(probe: CoreProbe) -> None:
        root = (await tree(probe))["root"]
        props = root.get("properties") or {}
        assert {k: props.get(k) for k in expected} == expected, root
        rules = await configured_rules(probe)
        assert [r["name"] for r in rules] == ["tag"], rules
        params = rules[0].get("parameters") or {}
        assert params.get("tagName") == "namespace" and params.get("create") == "true", rules[0]

    return check


async def check_default_config(probe: CoreProbe) -> None:
    root = (await tree(probe))["root"]
    assert root["isLeaf"] is False, root


def sha256_upper(text: str) -> str:
    return hashlib.sha256(text.encode()).hexdigest().upper()


CHECKSUM_LINE = "checksum: " + sha256_upper(VALID_CONF)


def checksum_check(without_checksum: str) -> Check:
    """/ws/v1/config's Checksum: the SHA-256 of the text with its `checksum: <64 characters>` taken out
    (config.go SetChecksum and GetConfigurationString)."""

    async def check(probe: CoreProbe) -> None:
        conf = await config_json(probe)
        assert conf.get("Checksum") == sha256_upper(without_checksum), conf.get("Checksum")
        assert [p.get("Name") for p in conf.get("Partitions") or ()] == ["default"], conf

    return check


# TestUserLimitsWithHierarchicalQueue / TestGroupLimitsWithHierarchicalQueue ----------------------

USER_LIMITS = """
partitions:
  - name: default
    queues:
      - name: root
        maxapplications: 3000
        limits:
          - limit:
            users:
            - user1
            maxresources: {memory: 10000, vcore: 10000}
            maxapplications: 500
          - limit:
            users:
            - user2
            groups:
            - prod
            maxresources: {memory: 10000, vcore: 10000}
            maxapplications: 300
        queues:
          - name: level1
            maxapplications: 100
            resources:
              guaranteed:
                {memory: 1000, vcore: 10}
              max:
                {memory: 10000, vcore: 1000}
            limits:
              - limit:
                users:
                - user1
                maxapplications: 50
                maxresources: {memory: 1000, vcore: 100}
            queues:
              - name: leaf
                maxapplications: 100
                resources:
                  guaranteed:
                    {memory: 1000, vcore: 10}
                  max:
                    {memory: 10000, vcore: 1000}
                limits:
                  - limit:
                    users:
                    - user1
                    maxapplications: %d
                    maxresources: %s
          - name: level2
            maxapplications: 100
            resources:
              guaranteed:
                {memory: 1000, vcore: 10}
              max:
                {memory: 10000, vcore: 1000}
            limits:
              - limit:
                users:
                - user1
                maxapplications: 10
                maxresources: {memory: 1000, vcore: 100}
"""

USER_LIMITS_TWO_LEVELS = """
partitions:
  - name: default
    queues:
      - name: root
        maxapplications: 3000
        limits:
          - limit:
            users:
            - user1
            maxresources: {memory: 10000, vcore: 10000}
            maxapplications: 500
          - limit:
            users:
            - user2
            groups:
            - prod
            maxresources: {memory: 10000, vcore: 10000}
            maxapplications: 300
        queues:
          - name: level1
            maxapplications: 900
            resources:
              guaranteed:
                {memory: 1000, vcore: 10}
              max:
                %s
            queues:
              - name: leaf
                maxapplications: 900
                resources:
                  guaranteed:
                    {memory: 1000, vcore: 10}
                  max:
                    %s
                limits:
                  - limit:
                    users:
                    - user1
                    maxapplications: %d
                    maxresources: %s
          - name: level2
            maxapplications: 100
            resources:
              guaranteed:
                {memory: 1000, vcore: 10}
              max:
                {memory: 10000, vcore: 1000}
            limits:
              - limit:
                users:
                - user1
                maxapplications: 10
                maxresources: {memory: 1000, vcore: 100}
"""


def user_limits(apps: int, leaf_max: str) -> str:
    return USER_LIMITS % (apps, leaf_max)


def user_limits_two_levels(apps: int, queue_max: str, user_max: str) -> str:
    return USER_LIMITS_TWO_LEVELS % (queue_max, queue_max, apps, user_max)


def group_limits(apps: int, leaf_max: str) -> str:
    return _as_group(user_limits(apps, leaf_max))


def group_limits_two_levels(apps: int, queue_max: str, group_max: str) -> str:
    return _as_group(user_limits_two_levels(apps, queue_max, group_max))


def _as_group(text: str) -> str:
    """The group variant upstream writes out: each `users: [user1]` limit becomes `groups: [group1]`."""
    out = text.replace("users:\n            - user1", "groups:\n            - group1")
    out = out.replace("users:\n                - user1", "groups:\n                - group1")
    out = out.replace("users:\n                    - user1", "groups:\n                    - group1")
    assert "- user1" not in out
    return out


USER_WILDCARD_HIERARCHY = """
partitions:
  - name: default
    queues:
      - name: root
        maxapplications: 3000
        limits:
          - limit:
            users:
            - "*"
            maxresources: {memory: 10000, vcore: 10000}
            maxapplications: 500
        queues:
          - name: level1
            maxapplications: 900
            resources:
              guaranteed:
                {memory: 1000, vcore: 10}
              max:
                {memory: 100000, vcore: 1000}
            queues:
              - name: leaf
                maxapplications: 900
                resources:
                  guaranteed:
                    {memory: 1000, vcore: 10}
                  max:
                    {memory: 100000, vcore: 1000}
                limits:
                  - limit:
                    users:
                    - "*"
                    maxapplications: 90
                    maxresources: {memory: 90000, vcore: 100}
          - name: level2
            maxapplications: 100
            resources:
              guaranteed:
                {memory: 1000, vcore: 10}
              max:
                {memory: 10000, vcore: 1000}
            limits:
              - limit:
                users:
                - user1
                maxapplications: 10
                maxresources: {memory: 1000, vcore: 100}
"""

GROUP_WILDCARD_HIERARCHY = """
partitions:
  - name: default
    queues:
      - name: root
        maxapplications: 3000
        limits:
          - limit:
            groups:
            - test
            maxresources: {memory: 10000, vcore: 10000}
            maxapplications: 500
          - limit:
            groups:
            - "*"
            maxresources: {memory: 10000, vcore: 10000}
            maxapplications: 500
        queues:
          - name: level1
            maxapplications: 900
            resources:
              guaranteed:
                {memory: 1000, vcore: 10}
              max:
                {memory: 100000, vcore: 1000}
            queues:
              - name: leaf
                maxapplications: 900
                resources:
                  guaranteed:
                    {memory: 1000, vcore: 10}
                  max:
                    {memory: 100000, vcore: 1000}
                limits:
                  - limit:
                    groups:
                    - "test"
                    maxapplications: 9
                    maxresources: {memory: 900, vcore: 100}
                  - limit:
                    groups:
                    - "*"
                    maxapplications: 90
                    maxresources: {memory: 90000, vcore: 100}
                  - limit:
                    users:
                    - "*"
                    maxapplications: 9
                    maxresources: {memory: 900, vcore: 100}
          - name: level2
            maxapplications: 100
            resources:
              guaranteed:
                {memory: 1000, vcore: 10}
              max:
                {memory: 10000, vcore: 1000}
            limits:
              - limit:
                users:
                - user1
                maxapplications: 10
                maxresources: {memory: 1000, vcore: 100}
"""


# TestSameLevelQueueLimitsResourceFail / TestLimitsFail --------------------------------------------


def same_level(root_extra: str, prod_apps: int, level1_apps: str, level1_max: str, *limit_lines: str) -> str:
    """TestSameLevelQueueLimitsResourceFail's config: `limit_lines` end root.level1's limit for user test."""
    limit = "".join(f"                {line}\n" for line in limit_lines)
    return f"""
partitions:
  - name: default
    queues:
      - name: root
{root_extra}        limits:
          - limit:
            users:
            - user1
            maxresources: {{memory: 10000, vcore: 10}}
            maxapplications: 5
          - limit:
            users:
            - user2
            groups:
            - prod
            maxapplications: {prod_apps}
        queues:
          - name: level1
{level1_apps}            resources:
              guaranteed:
                {{memory: 1000, vcore: 10}}
              max:
                {level1_max}
            limits:
              - limit:
                users:
                - test
{limit}"""


def partition_limits(*entries: str) -> str:
    """A default partition with only root and these partition limits (TestLimitsFail's shape)."""
    return (
        "\npartitions:\n  - name: default\n    limits:\n"
        + "".join(entries)
        + "    queues:\n      - name: root\n"
    )


def limit(name: str, kind: str, member: str, apps: int = 1) -> str:
    return f"      - limit: {name}\n        {kind}:\n        - {member}\n        maxapplications: {apps}\n"


COMPLEX_LIMITS = (
    limit("dot user", "users", "user.lastname"),
    limit('"@ user"', "users", "user@domain"),
    limit("wildcard user", "users", '"*"'),
    limit("no wildcard group", "groups", '"test"'),
    limit("wildcard group", "groups", '"*"'),
)


async def check_complex_users(probe: CoreProbe) -> None:
    expect_queues(await tree(probe), set(), {"root"})


DIFFERENT_QUEUES_SAME_NAMES = """
partitions:
  - name: default
    queues:
      - name: root
        maxapplications: 500
        limits:
          - limit:
            users:
            - user1
            maxresources: {memory: 10000, vcore: 10}
            maxapplications: 5
          - limit:
            users:
            - user2
            groups:
            - prod
            maxapplications: 3
        queues:
          - name: level1
            maxapplications: 100
            resources:
              guaranteed:
                {memory: 1000, vcore: 10}
              max:
                {memory: 10000, vcore: 10}
            limits:
              - limit:
                users:
                - user1
                groups:
                - prod
                maxapplications: 2
                maxresources: {memory: 10000, vcore: 10}
"""


async def check_different_queues_same_names(probe: CoreProbe) -> None:
    expect_queues(await tree(probe), {"root.level1"}, {"root"})
    await open_leaf(probe, DIFFERENT_QUEUES_SAME_NAMES, "          - name: level1\n")
    await run_one(probe, "app-user1", "root.level1", "user1")
    usage = await user_usage(probe, "user1")
    root = usage_queue(usage, "root")
    assert root.get("maxApplications") == 5, root
    assert root.get("maxResources") == {"memory": 10000, "vcore": vcore(10)}, root
    level1 = usage_queue(usage, "root.level1")
    assert level1.get("maxApplications") == 2, level1
    assert level1.get("maxResources") == {"memory": 10000, "vcore": vcore(10)}, level1


# TestUserGroupResolverConfig ---------------------------------------------------------------------


def resolver_config(section: str) -> str:
    return f"""
partitions:
  -
    name: default
{section}    placementrules:
      - name: tag
        value: namespace
        create: true
    queues:
      - name: root
        submitacl: '*'
        properties:
          application.sort.policy: fifo
          sample: value2
"""


async def _deep(probe: CoreProbe) -> None:
    path = "root"
    parents = {"root"}
    for level in range(1, 5):
        path += f".level{level}"
        parents.add(path)
    expect_queues(await tree(probe), {path + ".level5"}, parents)


async def _every_char(probe: CoreProbe) -> None:
    # a single top-level queue that is not root gets a root above it; queue names are lower-cased
    name = "root.abcdefghijklmnopqrstuvwxyzabcdefghijklmnopqrstuvwxyz0123456789-_"
    expect_queues(await tree(probe), {name}, {"root"})


# The table ---------------------------------------------------------------------------------------

LIMITS_ROOT = """
partitions:
  - name: default
    queues:
      - name: root
    limits:
      - limit:
        users:
        - user1
        maxresources: {memory: 10000, vcore: 10}
        maxapplications: 5
      - limit:
        users:
        - user2
        groups:
        - prod
        maxapplications: 10
      - limit:
        groups:
        - dev
        - test
        maxapplications: 20
"""


async def check_root_only(probe: CoreProbe) -> None:
    expect_queues(await tree(probe), set(), {"root"})


CASES = [
    # TestConfigSerdeQueues / TestConfigSerdeLimits
    pytest.param(
        Case(SERDE_QUEUES, True, check=check_serde_queues), id=yunikorn_case("TestConfigSerdeQueues")
    ),
    pytest.param(
        Case(SERDE_LIMITS, True, check=check_serde_limits), id=yunikorn_case("TestConfigSerdeLimits")
    ),
    # TestLoadQueueConfig: one config, each of upstream's asserts a case
    pytest.param(
        Case(LOAD_QUEUE_CONFIG, True, check=check_load_partitions),
        id=yunikorn_case("TestLoadQueueConfig", "partitions, root and sub queues"),
    ),
    pytest.param(
        Case(LOAD_QUEUE_CONFIG, True, check=check_load_guaranteed),
        id=yunikorn_case("TestLoadQueueConfig", "guaranteed resource"),
    ),
    pytest.param(
        Case(LOAD_QUEUE_CONFIG, True, check=check_load_max),
        id=yunikorn_case("TestLoadQueueConfig", "max resource"),
    ),
    pytest.param(
        Case(LOAD_QUEUE_CONFIG, True, check=check_load_properties),
        id=yunikorn_case("TestLoadQueueConfig", "properties"),
    ),
    pytest.param(
        Case(LOAD_QUEUE_CONFIG, True, check=check_load_second_partition),
        id=yunikorn_case("TestLoadQueueConfig", "second partition queues"),
    ),
    pytest.param(
        Case(LOAD_QUEUE_CONFIG, True, check=check_load_maxapplications),
        id=yunikorn_case("TestLoadQueueConfig", "maxapplications"),
    ),
    pytest.param(
        Case(LOAD_QUEUE_CONFIG, True, check=check_load_admin_acl),
        id=yunikorn_case("TestLoadQueueConfig", "admin ACL"),
    ),
    pytest.param(
        Case(LOAD_QUEUE_CONFIG, True, check=check_load_submit_acl),
        id=yunikorn_case("TestLoadQueueConfig", "submit ACL"),
    ),
    # TestDeepQueueHierarchy
    pytest.param(
        Case(
            """
partitions:
  - name: default
    queues:
      - name: root
        queues:
          - name: level1
            queues:
              - name: level2
                queues:
                  - name: level3
                    queues:
                      - name: level4
                        queues:
                          - name: level5
""",
            True,
            check=_deep,
        ),
        id=yunikorn_case("TestDeepQueueHierarchy", "five levels"),
    ),
    pytest.param(
        Case(
            """
partitions:
  - name: default
    queues:
      - name: root
        queues:
          - name: level1
            queues:
              - name: level2
                queues:
                  - name: level3
                    queues:
                      - name: level4
                        queues:
                          - name: $$$$
""",
            False,
            names=("$$$$",),
        ),
        id=yunikorn_case("TestDeepQueueHierarchy", "invalid name at level five"),
    ),
    # TestParsePartitionFail
    pytest.param(
        Case("\npartitions:\n  - name: default\n", False),
        id=yunikorn_case("TestParsePartitionFail", "no queue config"),
    ),
    pytest.param(
        Case(
            """
partitions:
  - name: default
    queues:
      - name: root
  - name: default
    queues:
      - name: root
  - name: part1
    queues:
      - name: root
""",
            False,
            names=("default",),
        ),
        id=yunikorn_case("TestParsePartitionFail", "multiple default partitions"),
    ),
    pytest.param(
        Case(
            """
partitions:
  - name: default
    queues:
      - name: root
  - name: part1
    queues:
      - name: root
  - name: part1
    queues:
      - name: root
  - name: part2
    queues:
      - name: root
""",
            False,
            names=("part1",),
        ),
        id=yunikorn_case("TestParsePartitionFail", "duplicate partitions"),
    ),
    # TestParseQueue
    pytest.param(
        Case(
            """
partitions:
  - name: default
    queues:
      - name: abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ0123456789-_
""",
            True,
            check=_every_char,
        ),
        id=yunikorn_case("TestParseQueue", "every allowed char, 64 long"),
    ),
    # TestParseQueueFail
    pytest.param(
        Case(
            """
partitions:
  - name: default
    queues:
      - name: root
        resources:
          max: {memory: 10000, vcore: 100}
""",
            False,
        ),
        id=yunikorn_case("TestParseQueueFail", "resource limit on root queue"),
    ),
    pytest.param(
        Case(
            "\npartitions:\n  - name: default\n    queues:\n      - name: test\n      - name: test\n",
            False,
            names=("test",),
        ),
        id=yunikorn_case("TestParseQueueFail", "duplicate queue names"),
    ),
    pytest.param(
        Case(
            """
partitions:
  - name: default
    queues:
      - name: this-name-is-longer-than-sixtyfour-characters-and-thus-fails-parsing
""",
            False,
            names=("this-name-is-longer",),
        ),
        id=yunikorn_case("TestParseQueueFail", "too long queue name"),
    ),
    pytest.param(
        Case(
            "\npartitions:\n  - name: default\n    queues:\n      - name: no.in-name\n",
            False,
            names=("no.in-name",),
        ),
        id=yunikorn_case("TestParseQueueFail", "dot in queue name"),
    ),
    pytest.param(
        Case(
            "\npartitions:\n  - name: default\n    queues:\n      - name: special-$-name\n",
            False,
            names=("special-$-name",),
        ),
        id=yunikorn_case("TestParseQueueFail", "special char in queue name"),
    ),
    # TestParseResourceFail
    pytest.param(
        Case(
            """
partitions:
  - name: default
    queues:
      - name: test
        resources:
          max:
            memory: text
""",
            False,
            names=("memory",),
        ),
        id=yunikorn_case("TestParseResourceFail", "resource not a number"),
    ),
    pytest.param(
        Case(
            """
partitions:
  - name: default
    queues:
      - name: test
        resources:
          max: {memory: }
""",
            False,
            names=("memory",),
        ),
        id=yunikorn_case("TestParseResourceFail", "resource without a value"),
    ),
    pytest.param(
        Case(
            """
partitions:
  - name: default
    queues:
      - name: test
        resources:
          max:
            memory:
            vcore:
""",
            False,
            names=("memory", "vcore"),
        ),
        id=yunikorn_case("TestParseResourceFail", "resources without values"),
    ),
    # TestParseACLFail
    pytest.param(
        Case(
            """
partitions:
  - name: default
    queues:
      - name: root
        adminacl: "users groups something_to_fail_it"
""",
            False,
            names=("adminacl", "something_to_fail_it"),
        ),
        id=yunikorn_case("TestParseACLFail", "3 fields in ACL"),
    ),
    pytest.param(
        Case(
            "\npartitions:\n  - name: default\n    queues:\n      - name: root\n        adminacl: *\n", False
        ),
        id=yunikorn_case("TestParseACLFail", "unescaped wild card ACL"),
    ),
    pytest.param(
        Case(
            '\npartitions:\n  - name: default\n    queues:\n      - name: root\n        adminacl: "user""\n',
            False,
        ),
        id=yunikorn_case("TestParseACLFail", "unbalanced quotes ACL"),
    ),
    # TestPartitionPreemptionParameter
    pytest.param(
        Case(preemption_config(""), True, check=preemption_check(True, False)),
        id=yunikorn_case("TestPartitionPreemptionParameter", "not set"),
    ),
    pytest.param(
        Case(
            preemption_config("    preemption:\n      enabled: true\n      quotapreemptionenabled: true\n"),
            True,
            check=preemption_check(True, True),
        ),
        id=yunikorn_case("TestPartitionPreemptionParameter", "enabled"),
    ),
    pytest.param(
        Case(
            preemption_config("    preemption:\n      enabled: false\n      quotapreemptionenabled: false\n"),
            True,
            check=preemption_check(False, False),
        ),
        id=yunikorn_case("TestPartitionPreemptionParameter", "disabled"),
    ),
    # TestParseRule
    pytest.param(
        Case(
            """
partitions:
  - name: default
    queues:
      - name: root
    placementrules:
      - name: User
        create: true
        filter:
          type: allow
          users:
            - test1
            - test1
          groups:
            - test1
            - test1
""",
            True,
            check=check_rule_user_filter,
        ),
        id=yunikorn_case("TestParseRule", "create and filter lists"),
    ),
    pytest.param(
        # the validator takes any identifier as a rule name; the core knows no PrimaryGroup rule
        Case(
            """
partitions:
  - name: default
    queues:
      - name: root
    placementrules:
      - name: User
        create: false
        parent:
          name: PrimaryGroup
          create: false
          filter:
            type: allow
            users:
              - test1
""",
            False,
            valid=False,  # upstream's validate-conf says valid: docs/compatibility.md, UNKNOWN_RULES
            names=("primarygroup",),
        ),
        id=yunikorn_case("TestParseRule", "parent rule"),
    ),
    pytest.param(
        # as above for PrimaryGroup and Something
        Case(
            """
partitions:
  - name: default
    queues:
      - name: root
    placementrules:
      - name: User
        filter:
          users:
            - test.test
      - name: PrimaryGroup
        filter:
          users:
            - test1*
      - name: Something
        filter:
          users:
            - test[1-9]
""",
            False,
            valid=False,  # upstream's validate-conf says valid: docs/compatibility.md, UNKNOWN_RULES
            names=("primarygroup", "something"),
        ),
        id=yunikorn_case("TestParseRule", "user name and regexp filters"),
    ),
    pytest.param(
        Case(
            """
partitions:
  - name: default
    queues:
      - name: root
        queues:
          - name: default
            parent: false
    placementrules:
      - name: fixed
        value: root.default
      - name: tag
        value: Just Any value
""",
            True,
            check=check_rule_values,
        ),
        id=yunikorn_case("TestParseRule", "rule values"),
    ),
    # TestParseRuleFail
    pytest.param(
        Case(
            """
partitions:
  - name: default
    queues:
      - name: root
    placementrules:
      - name: User
        create: bogus
""",
            False,
            names=("bogus", "create"),
        ),
        id=yunikorn_case("TestParseRuleFail", "create not a boolean"),
    ),
    pytest.param(
        Case(
            """
partitions:
  - name: default
    queues:
      - name: root
    placementrules:
      - name: User
        filter:
          type: bogus
""",
            False,
            names=("bogus",),
        ),
        id=yunikorn_case("TestParseRuleFail", "filter type"),
    ),
    pytest.param(
        Case(
            """
partitions:
  - name: default
    queues:
      - name: root
    placementrules:
      - name: User
        filter:
          users:
            - 99test
""",
            False,
            names=("99test",),
        ),
        id=yunikorn_case("TestParseRuleFail", "user filter not a name or regexp"),
    ),
    pytest.param(
        Case(
            """
partitions:
  - name: default
    queues:
      - name: root
    placementrules:
      - name: User
        filter:
          groups:
            - test@group
""",
            False,
            names=("test@group",),
        ),
        id=yunikorn_case("TestParseRuleFail", "group filter not a name or regexp"),
    ),
    pytest.param(
        Case(
            """
partitions:
  - name: default
    queues:
      - name: root
    placementrules:
      - name: User
        filter:
          users:
            - test[test
""",
            False,
            names=("test[test",),
        ),
        id=yunikorn_case("TestParseRuleFail", "user filter regexp does not compile"),
    ),
    # TestRecurseParent
    pytest.param(
        Case(
            """
partitions:
  - name: default
    queues:
      - name: root
    placementrules:
      - name: user
        parent:
          name: fixed
          value: test
          parent:
            name: provided
""",
            True,
            check=check_recurse_parent,
        ),
        id=yunikorn_case("TestRecurseParent"),
    ),
    # TestPartitionLimits / TestQueueLimits
    pytest.param(Case(LIMITS_ROOT, True, check=check_root_only), id=yunikorn_case("TestPartitionLimits")),
    pytest.param(Case(QUEUE_LIMITS, True, check=check_queue_limits), id=yunikorn_case("TestQueueLimits")),
    # TestSameLevelQueueLimitsResourceFail
    pytest.param(
        Case(
            same_level(
                "",
                10,
                "            maxapplications: 100\n",
                "{memory: 10000, vcore: 10}",
                "maxapplications: 1000",
                "maxresources: {memory: 10000, vcore: 10}",
            ),
            False,
        ),
        id=yunikorn_case("TestSameLevelQueueLimitsResourceFail", "limit max apps above queue max apps"),
    ),
    pytest.param(
        Case(
            same_level(
                "",
                10,
                "            maxapplications: 100\n",
                "{memory: 10000, vcore: 10}",
                "maxresources: {memory: 10000, vcore: 10}",
            ),
            True,
        ),
        id=yunikorn_case("TestSameLevelQueueLimitsResourceFail", "queue max apps, limit without max apps"),
    ),
    pytest.param(
        Case(
            same_level(
                "",
                10,
                "",
                "{memory: 10000, vcore: 10}",
                "maxresources: {memory: 10000, vcore: 10}",
                "maxapplications: 100",
            ),
            True,
        ),
        id=yunikorn_case("TestSameLevelQueueLimitsResourceFail", "limit max apps, queue without max apps"),
    ),
    pytest.param(
        Case(
            same_level(
                "        maxapplications: 50\n",
                3,
                "            maxapplications: 100\n",
                "{memory: 10000, vcore: 10}",
                "maxapplications: 5",
                "maxresources: {memory: 100000, vcore: 100}",
            ),
            False,
        ),
        id=yunikorn_case("TestSameLevelQueueLimitsResourceFail", "limit max resources above queue max"),
    ),
    pytest.param(
        Case(
            same_level(
                "        maxapplications: 50\n",
                3,
                "            maxapplications: 100\n",
                "{memory: parseFailed, vcore: 10}",
                "maxapplications: 5",
                "maxresources: {memory: 100000, vcore: 100}",
            ),
            False,
            names=("parseFailed",),
        ),
        id=yunikorn_case("TestSameLevelQueueLimitsResourceFail", "queue max resource does not parse"),
    ),
    # TestComplexUsers
    pytest.param(
        Case(partition_limits(*COMPLEX_LIMITS), True, check=check_complex_users),
        id=yunikorn_case("TestComplexUsers"),
    ),
    # TestLimitsFail
    pytest.param(
        Case(
            partition_limits(
                "      - limit:\n        users:\n        - user1\n        maxresources: {}\n"
                "        maxapplications: 0\n"
            ),
            False,
        ),
        id=yunikorn_case("TestLimitsFail", "resource nil"),
    ),
    pytest.param(
        Case(
            partition_limits("      - limit:\n        users:\n        - user1\n        maxapplications: 0\n"),
            False,
        ),
        id=yunikorn_case("TestLimitsFail", "max app zero"),
    ),
    pytest.param(
        Case(
            partition_limits(
                "      - limit:\n        users:\n        - user1\n        maxresources: {memory: 0}\n"
                "        maxapplications: 0\n"
            ),
            False,
        ),
        id=yunikorn_case("TestLimitsFail", "all limits zero"),
    ),
    pytest.param(
        Case(
            partition_limits(
                "      - limit:\n        users:\n        - user\n        maxresources: {memory: x}\n"
            ),
            False,
        ),
        id=yunikorn_case("TestLimitsFail", "max resource not a number"),
    ),
    pytest.param(
        Case(
            partition_limits(
                "      - limit:\n        users:\n        - user\n        maxresources: {memory: 0}\n"
            ),
            False,
        ),
        id=yunikorn_case("TestLimitsFail", "max resource zero"),
    ),
    pytest.param(
        Case(partition_limits(limit("illegal user", "users", "user space")), False, names=("user space",)),
        id=yunikorn_case("TestLimitsFail", "user space"),
    ),
    pytest.param(
        Case(
            partition_limits(limit("illegal group", "groups", "group@domain")), False, names=("group@domain",)
        ),
        id=yunikorn_case("TestLimitsFail", "group @"),
    ),
    pytest.param(
        Case(
            partition_limits(
                *COMPLEX_LIMITS, limit("error no wildcard user after wildcard user", "users", '"user1"')
            ),
            False,
            names=("user1",),
        ),
        id=yunikorn_case("TestLimitsFail", "no wildcard user after wildcard user"),
    ),
    pytest.param(
        Case(
            partition_limits(
                *COMPLEX_LIMITS, limit("error no wildcard group after wildcard user", "groups", '"group1"')
            ),
            False,
            names=("group1",),
        ),
        id=yunikorn_case("TestLimitsFail", "no wildcard group after wildcard group"),
    ),
    pytest.param(
        Case(
            partition_limits(*COMPLEX_LIMITS, limit("more than one wildcard user", "users", '"*"', apps=2)),
            False,
        ),
        id=yunikorn_case("TestLimitsFail", "more than one wildcard user"),
    ),
    pytest.param(
        Case(
            partition_limits(*COMPLEX_LIMITS, limit("more than one wildcard group", "groups", '"*"', apps=2)),
            False,
        ),
        id=yunikorn_case("TestLimitsFail", "more than one wildcard group"),
    ),
    pytest.param(
        Case(partition_limits(*COMPLEX_LIMITS[:3], COMPLEX_LIMITS[4]), False),
        id=yunikorn_case("TestLimitsFail", "only one group limit, the wildcard"),
    ),
    pytest.param(
        Case(
            partition_limits(
                COMPLEX_LIMITS[0], limit("duplicated user", "users", "user.lastname"), *COMPLEX_LIMITS[1:]
            ),
            False,
            names=("user.lastname",),
        ),
        id=yunikorn_case("TestLimitsFail", "duplicated user"),
    ),
    pytest.param(
        Case(
            partition_limits(
                *COMPLEX_LIMITS[:4], limit("duplicated group", "groups", '"test"'), COMPLEX_LIMITS[4]
            ),
            False,
            names=("test",),
        ),
        id=yunikorn_case("TestLimitsFail", "duplicated group"),
    ),
    pytest.param(
        Case(DIFFERENT_QUEUES_SAME_NAMES, True, check=check_different_queues_same_names),
        id=yunikorn_case("TestLimitsFail", "different queues, same user and group names"),
    ),
    # TestLoadSchedulerConfigFromByteArray
    pytest.param(
        Case(
            VALID_CONF,
            True,
            check=root_properties_check({"application.sort.policy": "fifo", "sample": "value2"}),
        ),
        id=yunikorn_case("TestLoadSchedulerConfigFromByteArray", "Valid config"),
    ),
    pytest.param(
        Case(INVALID_CONF, False, names=("sample",)),
        id=yunikorn_case("TestLoadSchedulerConfigFromByteArray", "Invalid checksum"),
    ),
    pytest.param(
        Case(MIXED_SPACES_CONF, True, check=root_properties_check({"application.sort.policy": "fifo"})),
        id=yunikorn_case("TestLoadSchedulerConfigFromByteArray", "Mixed space"),
    ),
    pytest.param(
        Case("", True, register=True, check=check_default_config),
        id=yunikorn_case("TestLoadSchedulerConfigFromByteArray", "Empty config"),
    ),
    # TestGetConfigurationString: the checksum of what was registered
    pytest.param(
        Case(VALID_CONF, True, register=True, check=checksum_check(VALID_CONF)),
        id=yunikorn_case("TestGetConfigurationString", "No checksum"),
    ),
    pytest.param(
        Case(CHECKSUM_LINE + VALID_CONF, True, register=True, check=checksum_check(VALID_CONF)),
        id=yunikorn_case("TestGetConfigurationString", "Checksum at the beginning"),
    ),
    pytest.param(
        Case(VALID_CONF + CHECKSUM_LINE, True, register=True, check=checksum_check(VALID_CONF)),
        id=yunikorn_case("TestGetConfigurationString", "Checksum at the end"),
    ),
    pytest.param(
        Case(
            VALID_CONF + CHECKSUM_LINE + "extra config",
            True,
            register=True,
            check=checksum_check(VALID_CONF + "extra config"),
        ),
        id=yunikorn_case("TestGetConfigurationString", "Checksum in the middle"),
    ),
    pytest.param(
        Case(VALID_CONF + "checksum: ", True, register=True, check=checksum_check(VALID_CONF)),
        id=yunikorn_case("TestGetConfigurationString", "Empty checksum"),
    ),
    # TestUserLimitsWithHierarchicalQueue
    pytest.param(
        Case(user_limits(50, "{memory: 10000, vcore: 100}"), False, names=("user1",)),
        id=yunikorn_case("TestUserLimitsWithHierarchicalQueue", "leaf max resource above parent's"),
    ),
    pytest.param(
        Case(user_limits(90, "{memory: 1000, vcore: 100}"), False, names=("user1",)),
        id=yunikorn_case("TestUserLimitsWithHierarchicalQueue", "leaf max apps above parent's"),
    ),
    pytest.param(
        Case(
            user_limits_two_levels(90, "{memory: 100000, vcore: 100}", "{memory: 90000, vcore: 100}"),
            False,
            names=("user1",),
        ),
        id=yunikorn_case("TestUserLimitsWithHierarchicalQueue", "leaf max resource above ancestor's"),
    ),
    pytest.param(
        Case(
            user_limits_two_levels(900, "{memory: 10000, vcore: 1000}", "{memory: 1000, vcore: 100}"),
            False,
            names=("user1",),
        ),
        id=yunikorn_case("TestUserLimitsWithHierarchicalQueue", "leaf max apps above ancestor's"),
    ),
    pytest.param(
        Case(USER_WILDCARD_HIERARCHY, False),
        id=yunikorn_case("TestUserLimitsWithHierarchicalQueue", "wildcard user"),
    ),
    # TestGroupLimitsWithHierarchicalQueue
    pytest.param(
        Case(group_limits(50, "{memory: 10000, vcore: 100}"), False, names=("group1",)),
        id=yunikorn_case("TestGroupLimitsWithHierarchicalQueue", "leaf max resource above parent's"),
    ),
    pytest.param(
        Case(group_limits(90, "{memory: 1000, vcore: 100}"), False, names=("group1",)),
        id=yunikorn_case("TestGroupLimitsWithHierarchicalQueue", "leaf max apps above parent's"),
    ),
    pytest.param(
        Case(
            group_limits_two_levels(90, "{memory: 100000, vcore: 1000}", "{memory: 90000, vcore: 100}"),
            False,
            names=("group1",),
        ),
        id=yunikorn_case("TestGroupLimitsWithHierarchicalQueue", "leaf max resource above ancestor's"),
    ),
    pytest.param(
        Case(
            group_limits_two_levels(900, "{memory: 10000, vcore: 1000}", "{memory: 10000, vcore: 100}"),
            False,
            names=("group1",),
        ),
        id=yunikorn_case("TestGroupLimitsWithHierarchicalQueue", "leaf max apps above ancestor's"),
    ),
    pytest.param(
        Case(GROUP_WILDCARD_HIERARCHY, False),
        id=yunikorn_case("TestGroupLimitsWithHierarchicalQueue", "wildcard group"),
    ),
    # TestUserGroupResolverConfig
    pytest.param(
        # upstream accepts it (and panics without LDAP secrets): docs/compatibility.md, RESOLVERS
        Case(resolver_config("    usergroupresolver:\n      type: ldap\n"), False, names=("ldap",)),
        id=yunikorn_case("TestUserGroupResolverConfig", "ldap"),
    ),
    pytest.param(
        Case(
            resolver_config(""),
            True,
            check=root_properties_check({"application.sort.policy": "fifo", "sample": "value2"}),
        ),
        id=yunikorn_case("TestUserGroupResolverConfig", "no resolver"),
    ),
]


def _names_one(errors: tuple[str, ...] | str, names: tuple[str, ...]) -> bool:
    text = " ".join(errors) if isinstance(errors, tuple) else errors
    return any(name.lower() in text.lower() for name in names)


@pytest.mark.parametrize("case", CASES)
async def test_config_load(probe: CoreProbe, case: Case) -> None:
    """Both answers are taken before either is asserted, so a failure shows every difference."""
    valid = case.accepted if case.valid is None else case.valid
    allowed, reason = await validate_conf(probe, case.config)
    verdict = await (probe.register(case.config) if case.register else probe.update(case.config))
    how = "registration" if case.register else "update"
    wrong = []
    if allowed is not valid:
        wrong.append(f"validate-conf: allowed={allowed}, upstream {valid}: {reason}")
    elif not allowed and case.names and not _names_one(reason, case.names):
        wrong.append(f"validate-conf's reason names none of {case.names}: {reason}")
    if verdict.accepted is not case.accepted:
        wrong.append(f"{how}: accepted={verdict.accepted}, upstream {case.accepted}: {verdict.errors}")
    elif not verdict.accepted and case.names and not _names_one(verdict.errors, case.names):
        wrong.append(f"the {how}'s refusal names none of {case.names}: {verdict.errors}")
    assert not wrong, "\n".join(wrong)
    if verdict.accepted and case.check is not None:
        await case.check(probe)
