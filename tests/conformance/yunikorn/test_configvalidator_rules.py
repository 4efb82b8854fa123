"""yunikorn-core's configuration checks on queue resources, maxapplications, placement rules and user
and group names, held against pykorn through UpdateConfiguration and the REST API.

Ported from pkg/common/configs/configvalidator_test.go (lines 33-874) at yunikorn-core commit
`YUNIKORN_CORE_COMMIT`; the code under test is pkg/common/configs/configvalidator.go. Upstream calls
internal helpers (checkQueueResource, checkPlacementRules, checkPlacementFilter, ...) on fragments;
each row here is a whole queues.yaml that reaches exactly that check through `Validate` (which runs
them all, config.go:187), sent with `probe.update`. Where a row would trip a different check first
when made a whole configuration, the fragment is adjusted so the row's own check decides:

* a top-level QueueConfig carrying resources becomes the queue `root.parent` (root may not have
  resources, configvalidator.go:728), its unnamed children `child1`/`child2`;
* createQueueWithSumGuaranteedHigherThanParentMax names both children `child1`; the second is
  `child2` here, else the duplicate name (checkQueues) would refuse it first;
* a `parent: true` of the Go struct is written as `parent: true` (upstream does not infer it from
  children when checking placement paths, configvalidator.go:398-404);
* TestCheckPlacementRule's "valid parent's rule name with a-z" chains `fixed root.default` ->
  `fixed leaf` (upstream's two fully qualified values would be refused by getLongestStaticPath).

The row "valid rule name start with underscore" is a name checkPlacementRule lets through, but no
rule is called `_fixed`: the core refuses the configuration when it builds the rules on update
(placement/rule.go:124, partition.go:180), so the expectation here is "refused".

TestUserName, TestGroupName and TestServiceAccount{User,Group}Name are each ported twice: as the
upstream row (a single-entry placement filter, `users: [name]`, `groups: [ok]`, or the reverse), and
as a limit naming that user or group, which upstream accepts exactly when the name matches UserRegExp
or GroupRegExp (configvalidator.go:87,90, checked in checkLimit :486-505); a single filter entry may
also be a regular expression, a limit entry may not, so the two expectations differ for
`username*regexp`, `username$$`, `groupname*regexp` and `system:serviceaccounts:username:regexp*`.
The empty name is go test's `TestUserName/#00`.

Ported cases per upstream test:
  TestCheckResourceConfigurationsForQueue   18 of 18 rows (accepted rows also read the queues on REST)
  TestCheckQueueMaxApplicationsForQueue       4 of 4 rows (accepted rows read maxRunningApps on REST)
  TestGetLongestPlacementPath                 4 checks
  TestCheckQueueHierarchyForPlacement        10 of 10 checks
  TestCheckPlacementRule                     10 of 10 rows
  TestCheckPlacementRules                     5 of 5 checks
  TestUserName                               11 rows, x2 (filter, limit)
  TestGroupName                              10 rows, x2 (filter, limit)
  TestServiceAccountUserName                 11 rows, x2 (the repeated row as `#01`, as go test names it)
  TestServiceAccountGroupName                11 rows, x2 (the repeated row as `#01`)

Not ported (2):
  TestGetLongestPlacementPath: the `ruleNo` of each static path - only in an error text.
  TestGetLongestPlacementPath: the `ruleChain` string ("fixed->tag->user") - only in an error text.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

import pytest
import yaml

from tests.conformance.core_probe import CoreProbe, Verdict
from tests.conformance.upstream import YUNIKORN_CORE_COMMIT, yunikorn_case

SOURCE = f"apache/yunikorn-core@{YUNIKORN_CORE_COMMIT}: pkg/common/configs/configvalidator_test.go"

Queue = dict[str, Any]
Rule = dict[str, Any]


# Configuration builders --------------------------------------------------------------------------
def render(root_children: list[Queue], rules: list[Rule] | None = None, **root_fields: Any) -> str:
    """A one-partition queues.yaml: an open root with these children (and fields), and these rules."""
    root: Queue = {"name": "root", "submitacl": "*", **root_fields}
    if root_children:
        root["queues"] = root_children
    partition: dict[str, Any] = {"name": "default", "queues": [root]}
    if rules:
        partition["placementrules"] = rules
    return yaml.safe_dump({"partitions": [partition]}, sort_keys=False)


def queue(
    name: str,
    guaranteed: dict[str, str] | None = None,
    max_res: dict[str, str] | None = None,
    children: list[Queue] | None = None,
    parent: bool | None = None,
    max_apps: int = 0,
) -> Queue:
    out: Queue = {"name": name}
    if parent is not None:
        out["parent"] = parent
    resources: dict[str, dict[str, str]] = {}
    if guaranteed is not None:
        resources["guaranteed"] = guaranteed
    if max_res is not None:
        resources["max"] = max_res
    if resources:
        out["resources"] = resources
    if max_apps:
        out["maxapplications"] = max_apps
    if children:
        out["queues"] = children
    return out


def fixed(value: str, create: bool = False, parent: Rule | None = None, **extra: Any) -> Rule:
    rule: Rule = {"name": "fixed", "value": value}
    if create:
        rule["create"] = True
    if parent is not None:
        rule["parent"] = parent
    rule.update(extra)
    return rule


async def expect(probe: CoreProbe, config: str, accepted: bool) -> Verdict:
    verdict = await probe.update(config)
    if accepted:
        assert verdict.accepted, f"upstream accepts this configuration; refused: {verdict.errors}\n{config}"
    else:
        assert not verdict.accepted, f"upstream refuses this configuration; it was accepted\n{config}"
    return verdict


def same_resource(served: dict[str, Any] | None, expected: dict[str, int] | None) -> bool:
    """A REST resource map against the configured one; unset and empty are the same (omitempty)."""
    return (served or {}) == (expected or {})


# TestCheckResourceConfigurationsForQueue ---------------------------------------------------------
NEGATIVE = {"memory": "-50", "vcores": "33"}
SYNTAX_ERROR = {"memory": "ten", "vcores": ""}
HIGHER = {"memory": "50", "vcores": "33"}
UNDEFINED_VCORES = {"memory": "20"}
LOWER = {"memory": "10", "vcores": "30"}


def as_served(conf: dict[str, str] | None) -> dict[str, int] | None:
    return None if conf is None else {k: int(v) for k, v in conf.items()}


@dataclass(frozen=True)
class ResourceRow:
    children: list[Queue]  # root's children
    accepted: bool
    # queue path -> (guaranteed, max) as configured, read on REST for accepted rows
    served: dict[str, tuple[dict[str, str] | None, dict[str, str] | None]] = field(default_factory=dict)


def _under_parent(
    guaranteed: dict[str, str] | None, max_res: dict[str, str] | None, *kids: Queue
) -> list[Queue]:
    return [queue("parent", guaranteed, max_res, list(kids) or None)]


RESOURCE_ROWS = [
    ("Negative guaranteed resource", ResourceRow(_under_parent(NEGATIVE, None), False)),
    ("Negative max resource", ResourceRow(_under_parent(None, NEGATIVE), False)),
    (
        "Nil guaranteed resource",
        ResourceRow(_under_parent(None, LOWER), True, {"root.parent": (None, LOWER)}),
    ),
    (
        "Nil max resource",
        ResourceRow(_under_parent(LOWER, None), True, {"root.parent": (LOWER, None)}),
    ),
    ("Syntax error in guaranteed resource", ResourceRow(_under_parent(SYNTAX_ERROR, None), False)),
    ("Syntax error in max resource", ResourceRow(_under_parent(None, SYNTAX_ERROR), False)),
    (
        "Higher guaranteed resource in child queues",
        ResourceRow(_under_parent(LOWER, None, queue("child1", HIGHER)), False),
    ),
    (
        "Higher sum of guaranteed resource in child queues than the parent's guaranteed",
        ResourceRow(
            _under_parent(LOWER, HIGHER, queue("child1", LOWER, LOWER), queue("child2", LOWER, LOWER)), False
        ),
    ),
    (
        "Higher sum of guaranteed resource in child queues than the parent's Max when guaranteed is undefined",  # noqa: E501
        ResourceRow(
            _under_parent(
                UNDEFINED_VCORES, HIGHER, queue("child1", LOWER, LOWER), queue("child2", LOWER, LOWER)
            ),
            False,
        ),
    ),
    (
        "Higher max resource in child queues",
        ResourceRow(_under_parent(None, LOWER, queue("child1", None, HIGHER)), False),
    ),
    ("Higher guaranteed than max resource", ResourceRow(_under_parent(HIGHER, LOWER), False)),
    (
        "Valid configuration",
        ResourceRow(_under_parent(LOWER, HIGHER), True, {"root.parent": (LOWER, HIGHER)}),
    ),
    (
        "One level skipped while setting max resource",
        ResourceRow(
            [
                queue(
                    "parent",
                    max_res={"memory": "100"},
                    children=[queue("parent1", children=[queue("child1", max_res={"memory": "150"})])],
                )
            ],
            False,
        ),
    ),
    (
        "Sum of child guaranteed higher than parent max",
        ResourceRow(
            [
                queue(
                    "parent",
                    max_res={"memory": "100"},
                    children=[
                        queue(
                            "parent1",
                            max_res={"memory": "80"},
                            children=[
                                queue("child1", guaranteed={"memory": "50"}),
                                queue("child2", guaranteed={"memory": "40"}),
                            ],
                        )
                    ],
                )
            ],
            False,
        ),
    ),
    (
        "One level skipped while setting guaranteed resource",
        ResourceRow(
            [
                queue(
                    "parent",
                    guaranteed={"memory": "100"},
                    children=[queue("parent1", children=[queue("child1", guaranteed={"memory": "150"})])],
                )
            ],
            False,
        ),
    ),
    (
        "Parent with undefined guaranteed resources",
        ResourceRow(
            [
                queue(
                    "parent",
                    guaranteed={"memory": "100"},
                    max_res={"memory": "100", "vcores": "100"},
                    children=[
                        queue("child1", {"memory": "50", "vcores": "50"}, {"memory": "80", "vcores": "80"}),
                        queue("child2", {"memory": "50", "vcores": "50"}, {"memory": "80", "vcores": "80"}),
                    ],
                )
            ],
            True,
            {
                "root.parent": ({"memory": "100"}, {"memory": "100", "vcores": "100"}),
                "root.parent.child1": ({"memory": "50", "vcores": "50"}, {"memory": "80", "vcores": "80"}),
                "root.parent.child2": ({"memory": "50", "vcores": "50"}, {"memory": "80", "vcores": "80"}),
            },
        ),
    ),
    (
        "Nil guaranteed resources for both parent and child",
        ResourceRow(
            _under_parent(None, HIGHER, queue("child1", None, LOWER)),
            True,
            {"root.parent": (None, HIGHER), "root.parent.child1": (None, LOWER)},
        ),
    ),
    (
        "Empty guaranteed resources for both parent and child",
        ResourceRow(
            _under_parent({}, HIGHER, queue("child1", {}, LOWER)),
            True,
            {"root.parent": (None, HIGHER), "root.parent.child1": (None, LOWER)},
        ),
    ),
]


@pytest.mark.parametrize(
    "row",
    [
        pytest.param(row, id=yunikorn_case("TestCheckResourceConfigurationsForQueue", name))
        for name, row in RESOURCE_ROWS
    ],
)
async def test_check_resource_configurations_for_queue(probe: CoreProbe, row: ResourceRow) -> None:
    await expect(probe, render(row.children), row.accepted)
    if not row.accepted:
        return
    queues = await probe.queues()
    for path, (guaranteed, max_res) in row.served.items():
        assert path in queues, f"{path} missing on REST: {sorted(queues)}"
        served = queues[path]
        assert same_resource(served.get("guaranteedResource"), as_served(guaranteed)), (path, served)
        assert same_resource(served.get("maxResource"), as_served(max_res)), (path, served)


# TestCheckQueueMaxApplicationsForQueue -----------------------------------------------------------
def max_apps_config(apps: tuple[int, int, int, int]) -> str:
    """createQueueWithMaxApplication: root -> parent -> parent1 -> child1, maxapplications in that order."""
    child1 = queue("child1", guaranteed={"memory": "50"}, max_apps=apps[3])
    parent1 = queue("parent1", children=[child1], max_apps=apps[2])
    parent = queue("parent", guaranteed={"memory": "100"}, children=[parent1], max_apps=apps[1])
    extra: dict[str, Any] = {"maxapplications": apps[0]} if apps[0] else {}
    return render([parent], **extra)


MAX_APPS_ROWS = [
    ("Parent maxRunningApps must be larger than child maxRunningApps", (1, 2, 3, 4), False),
    (
        "Valid maxApplication settings: Parent maxRunningApps larger than child maxRunningApps",
        (4, 3, 2, 1),
        True,
    ),
    ("Valid maxApplication settings: Parent maxRunningApps can be 0", (0, 3, 2, 1), True),
    ("InValid maxApplication settings: child maxRunningApps cannot be 0", (4, 3, 2, 0), False),
]


@pytest.mark.parametrize(
    ("apps", "accepted"),
    [
        pytest.param(apps, ok, id=yunikorn_case("TestCheckQueueMaxApplicationsForQueue", name))
        for name, apps, ok in MAX_APPS_ROWS
    ],
)
async def test_check_queue_max_applications_for_queue(
    probe: CoreProbe, apps: tuple[int, int, int, int], accepted: bool
) -> None:
    await expect(probe, max_apps_config(apps), accepted)
    if not accepted:
        return
    # root is left out: on an update upstream leaves root's maxRunningApps as it was (queue.go:408)
    queues = await probe.queues()
    paths = ("root.parent", "root.parent.parent1", "root.parent.parent1.child1")
    for path, configured in zip(paths, apps[1:], strict=True):
        assert (queues[path].get("maxRunningApps") or 0) == configured, (path, queues[path])


# The queue tree and rules of createQueueConfig / createPlacementRules ----------------------------
def upstream_tree(
    users_parent: bool = True, admins_parent: bool = True, with_users: bool = True
) -> list[Queue]:
    """createQueueConfig: root.users (parent), root.devs.yunikorn (parents), root.default (leaf),
    root.admins (parent)."""
    tree = [
        queue("users", parent=users_parent),
        queue("devs", parent=True, children=[queue("yunikorn", parent=True)]),
        queue("default", parent=False),
        queue("admins", parent=admins_parent),
    ]
    return tree if with_users else tree[1:]


def fixed_tag_user() -> Rule:
    """createPlacementRules()[0]: user below tag(namespace) below fixed root.users."""
    return {"name": "user", "parent": {"name": "tag", "value": "namespace", "parent": fixed("root.users")}}


def admins_dev(create: bool = True) -> Rule:
    """createPlacementRules()[1]: fixed dev (create) below fixed admins."""
    return fixed("dev", create=create, parent=fixed("admins"))


# TestGetLongestPlacementPath ---------------------------------------------------------------------
@dataclass(frozen=True)
class PathCase:
    tree: list[Queue]
    rules: list[Rule]
    accepted: bool
    lands_in: str = ""  # where an application with no tags lands, for accepted cases


PATH_CASES = [
    (
        # the static part of fixed->tag->user is root.users; without it (create false) nothing can place
        "fixed->tag->user: static path root.users must exist",
        PathCase(upstream_tree(with_users=False), [fixed_tag_user()], False),
    ),
    (
        # fixed admins -> fixed dev make root.admins.dev, which create: true may make below a parent
        "fixed->fixed: path root.admins.dev with create",
        PathCase(upstream_tree(), [admins_dev()], True, lands_in="root.admins.dev"),
    ),
    (
        # the joined path is root.admins.dev: it cannot be made when admins is a leaf
        "fixed->fixed: path root.admins.dev below a leaf",
        PathCase(upstream_tree(admins_parent=False), [admins_dev()], False),
    ),
    (
        "illegal: two fixed with fully qualified path",
        PathCase(upstream_tree(), [fixed("root.dev", create=True, parent=fixed("root.admins"))], False),
    ),
]


@pytest.mark.parametrize(
    "case", [pytest.param(c, id=yunikorn_case("TestGetLongestPlacementPath", n)) for n, c in PATH_CASES]
)
async def test_get_longest_placement_path(probe: CoreProbe, case: PathCase) -> None:
    await expect(probe, render(case.tree, case.rules), case.accepted)
    if case.lands_in:
        placed = await probe.place("app-1", user="alice")
        assert placed.queue == case.lands_in, placed


# TestCheckQueueHierarchyForPlacement -------------------------------------------------------------
@dataclass(frozen=True)
class HierarchyCase:
    users_parent: bool
    rule: Rule
    accepted: bool
    lands_in: str = ""


HIERARCHY_CASES = [
    (
        "case #1 - referring to existing queue which is a parent",
        HierarchyCase(True, fixed("root.users"), False),
    ),
    (
        "case #2 - referring to an existing queue which is a leaf",
        HierarchyCase(True, fixed("root.default", create=True), True, "root.default"),
    ),
    (
        "case #3 - incomplete path, users is parent, create = true",
        HierarchyCase(True, fixed("root.users.alice", create=True), True, "root.users.alice"),
    ),
    (
        "case #4 - incomplete path, users is parent, create = false",
        HierarchyCase(True, fixed("root.users.alice"), False),
    ),
    (
        "case #5 - incomplete path, users is leaf, create = true",
        HierarchyCase(False, fixed("root.users.alice", create=True), False),
    ),
    (
        "case #6 - incomplete path, users is leaf, create = false",
        HierarchyCase(False, fixed("root.users.alice"), False),
    ),
    (
        "case #7 - no matching queue on a long enough hierarchy, create = true",
        HierarchyCase(True, fixed("root.devs.test", create=True), True, "root.devs.test"),
    ),
    (
        "case #8 - no matching queue on a long enough hierarchy, create = false",
        HierarchyCase(True, fixed("root.devs.test"), False),
    ),
    (
        "case #9 - rule chain ends with a dynamic part, last queue is a leaf",
        HierarchyCase(False, {"name": "user", "parent": fixed("root.users")}, False),
    ),
    (
        "case #10 - rule chain ends with a dynamic part, last queue is a parent",
        HierarchyCase(True, {"name": "user", "parent": fixed("root.users")}, True),
    ),
]


@pytest.mark.parametrize(
    "case",
    [pytest.param(c, id=yunikorn_case("TestCheckQueueHierarchyForPlacement", n)) for n, c in HIERARCHY_CASES],
)
async def test_check_queue_hierarchy_for_placement(probe: CoreProbe, case: HierarchyCase) -> None:
    await expect(probe, render(upstream_tree(users_parent=case.users_parent), [case.rule]), case.accepted)
    if case.lands_in:
        placed = await probe.place("app-1", user="alice")
        assert placed.queue == case.lands_in, placed


# TestCheckPlacementRule --------------------------------------------------------------------------
# Every row's fixed rule places in root.default.leaf: a leaf below the parent root.default.
LEAF_TREE = [queue("default", parent=True, children=[queue("leaf", parent=False)])]


@dataclass(frozen=True)
class RuleCase:
    rule: Rule
    accepted: bool
    # user -> the queue an application of that user lands in ("" rejected), for accepted rows
    placements: dict[str, str] = field(default_factory=dict)


RULE_CASES = [
    (
        "valid rule name with a-z",
        RuleCase(fixed("root.default.leaf"), True, {"alice": "root.default.leaf"}),
    ),
    (
        "valid rule name start with underscore",
        RuleCase({"name": "_fixed", "value": "root.default.leaf"}, False),
    ),
    (
        "invalid rule name contain pound sign",
        RuleCase({"name": "#fixed", "value": "root.default.leaf"}, False),
    ),
    ("invalid rule name with number", RuleCase({"name": "1234", "value": "root.default.leaf"}, False)),
    (
        "valid parent's rule name with a-z",
        RuleCase(fixed("leaf", parent=fixed("root.default")), True, {"alice": "root.default.leaf"}),
    ),
    (
        "invalid parent's rule name with commercial at",
        RuleCase(fixed("leaf", parent={"name": "@fixed", "value": "root.default"}), False),
    ),
    (
        "invalid nested parent's rule name with commercial at",
        RuleCase(fixed("leaf", parent=fixed("default", parent={"name": "@fixed", "value": "root"})), False),
    ),
    (
        "valid rule name and filter",
        RuleCase(
            fixed("root.default.leaf", filter={"users": ["username"], "groups": []}),
            True,
            {"username": "root.default.leaf", "someoneelse": ""},
        ),
    ),
    (
        "invalid rule filter user list",
        RuleCase(fixed("root.default.leaf", filter={"users": [""], "groups": ["ok"]}), False),
    ),
    (
        "invalid rule filter group list",
        RuleCase(fixed("root.default.leaf", filter={"users": ["ok"], "groups": ["groupname "]}), False),
    ),
]


@pytest.mark.parametrize(
    "case", [pytest.param(c, id=yunikorn_case("TestCheckPlacementRule", n)) for n, c in RULE_CASES]
)
async def test_check_placement_rule(probe: CoreProbe, case: RuleCase) -> None:
    await expect(probe, render(LEAF_TREE, [case.rule]), case.accepted)
    for i, (user, lands_in) in enumerate(case.placements.items()):
        placed = await probe.place(f"app-{i}", user=user)
        if lands_in:
            assert placed.queue == lands_in, (user, placed)
        else:
            assert placed.rejected, (
                f"the filter admits only 'username', yet {user}'s app went to {placed.queue}"
            )


# TestCheckPlacementRules -------------------------------------------------------------------------
@dataclass(frozen=True)
class RulesCase:
    tree: list[Queue]
    rules: list[Rule]
    accepted: bool


RULES_CASES = [
    ("default case, no error", RulesCase(upstream_tree(), [fixed_tag_user(), admins_dev()], True)),
    ("fixed root.users, users is a parent", RulesCase(upstream_tree(), [fixed("root.users")], False)),
    (
        "root.admins.dev does not exist and create is false",
        RulesCase(upstream_tree(), [fixed_tag_user(), admins_dev(create=False)], False),
    ),
    (
        "fixed root.default.leaf, default is a leaf",
        RulesCase(upstream_tree(), [fixed("root.default.leaf")], False),
    ),
    (
        "two fixed rules in a chain, both fully qualified",
        RulesCase(upstream_tree(), [fixed("root.default.leaf", parent=fixed("root.default"))], False),
    ),
]


@pytest.mark.parametrize(
    "case", [pytest.param(c, id=yunikorn_case("TestCheckPlacementRules", n)) for n, c in RULES_CASES]
)
async def test_check_placement_rules(probe: CoreProbe, case: RulesCase) -> None:
    await expect(probe, render(case.tree, case.rules), case.accepted)
    if not case.accepted:
        return
    served = await probe.placement_rules()
    # the configured chains, then the recovery rule YuniKorn always appends (placement.go buildRules)
    assert [r.get("name") for r in served] == ["user", "fixed", "recovery"], served
    assert (served[0].get("parentRule") or {}).get("name") == "tag", served
    assert ((served[0].get("parentRule") or {}).get("parentRule") or {}).get("name") == "fixed", served
    assert (served[1].get("parentRule") or {}).get("name") == "fixed", served
    # no namespace tag: the first chain finds no queue, the second makes root.admins.dev
    placed = await probe.place("app-1", user="alice")
    assert placed.queue == "root.admins.dev", placed


# TestUserName, TestGroupName, TestServiceAccountUserName, TestServiceAccountGroupName -------------
# (name, accepted in a single-entry filter [the upstream row], accepted as a limit's entry [UserRegExp /
# GroupRegExp]). A go subtest name used twice is run as "<name>#01".
USER_NAMES: list[tuple[str, str, bool, bool]] = [
    ("TestUserName", "username-allowed_99", True, True),
    ("TestUserName", "username", True, True),
    ("TestUserName", "username*regexp", True, False),
    ("TestUserName", "user_name", True, True),
    ("TestUserName", "user@name@", True, True),
    ("TestUserName", "username$$", True, False),
    ("TestUserName", "username rejected", False, False),
    ("TestUserName", "", False, False),
    ("TestUserName", "rejected!name", False, False),
    ("TestUserName", "!rejected", False, False),
    ("TestUserName", " rejected ", False, False),
    ("TestServiceAccountUserName", "system:serviceaccounts:username:username-77", True, True),
    ("TestServiceAccountUserName", "system:serviceaccounts:username:regexp*", True, False),
    ("TestServiceAccountUserName", "system:serviceaccounts:username.12:username-77-11", True, True),
    ("TestServiceAccountUserName", "system:serviceaccounts:username.12:username-77-11#01", True, True),
    ("TestServiceAccountUserName", "system:serviceaccounts:username:username", True, True),
    ("TestServiceAccountUserName", "system:serviceaccounts:username!:username", False, False),
    ("TestServiceAccountUserName", "system:serviceaccounts:username xyz:username", False, False),
    ("TestServiceAccountUserName", "system:serviceaccounts: :username", False, False),
    ("TestServiceAccountUserName", "system:serviceaccounts: username:username", False, False),
    ("TestServiceAccountUserName", "system:\\:username", False, False),
    ("TestServiceAccountUserName", " system:serviceaccounts:username:username", False, False),
]
GROUP_NAMES: list[tuple[str, str, bool, bool]] = [
    ("TestGroupName", "groupname-allowed_99", True, True),
    ("TestGroupName", "groupname", True, True),
    ("TestGroupName", "groupname*regexp", True, False),
    ("TestGroupName", "group_name", True, True),
    ("TestGroupName", "group-name", True, True),
    ("TestGroupName", "groupname ", False, False),
    ("TestGroupName", "group@name", False, False),
    ("TestGroupName", "group name", False, False),
    ("TestGroupName", " groupname ", False, False),
    ("TestGroupName", "!groupname", False, False),
    ("TestServiceAccountGroupName", "system:authenticated", True, True),
    ("TestServiceAccountGroupName", "system:unauthenticated", True, True),
    ("TestServiceAccountGroupName", "system:serviceaccounts:groupname", True, True),
    ("TestServiceAccountGroupName", "system:serviceaccounts:groupname.12", True, True),
    ("TestServiceAccountGroupName", "system:serviceaccounts:groupname.12#01", True, True),
    ("TestServiceAccountGroupName", "system:serviceaccounts:groupname-1-test.test", True, True),
    ("TestServiceAccountGroupName", "system:\\:groupname", False, False),
    ("TestServiceAccountGroupName", "system:serviceaccounts: groupname", False, False),
    ("TestServiceAccountGroupName", "system:!:groupname", False, False),
    ("TestServiceAccountGroupName", "system:&:groupname", False, False),
    ("TestServiceAccountGroupName", " system:authenticated", False, False),
]


def the_name(subtest: str) -> str:
    """The name a subtest checks: its go subtest name without the `#01` of a repeated row."""
    return subtest.removesuffix("#01")


def name_filter_config(kind: str, name: str) -> str:
    """A fixed rule whose filter lists one entry of `kind` (users or groups); the other list is [ok]."""
    other = "groups" if kind == "users" else "users"
    rule = fixed("root.default", filter={kind: [name], other: ["ok"]})
    return render([queue("default", parent=False)], [rule])


def name_limit_config(kind: str, name: str) -> str:
    """A limit on root naming one user or group (kind: users or groups)."""
    limit = {"limit": "one name", kind: [name], "maxapplications": 1}
    return render([queue("default", parent=False)], limits=[limit])


def _params(table: list[tuple[str, str, bool, bool]], column: int) -> list[Any]:
    # go test names the subtest of an empty name "#00"
    return [
        pytest.param(the_name(row[1]), row[column], id=yunikorn_case(row[0], row[1] or "#00"))
        for row in table
    ]


@pytest.mark.parametrize(("name", "accepted"), _params(USER_NAMES, 2))
async def test_user_name_in_placement_filter(probe: CoreProbe, name: str, accepted: bool) -> None:
    await expect(probe, name_filter_config("users", name), accepted)


@pytest.mark.parametrize(("name", "accepted"), _params(GROUP_NAMES, 2))
async def test_group_name_in_placement_filter(probe: CoreProbe, name: str, accepted: bool) -> None:
    await expect(probe, name_filter_config("groups", name), accepted)


@pytest.mark.parametrize(("name", "accepted"), _params(USER_NAMES, 3))
async def test_user_name_in_limit(probe: CoreProbe, name: str, accepted: bool) -> None:
    await expect(probe, name_limit_config("users", name), accepted)


@pytest.mark.parametrize(("name", "accepted"), _params(GROUP_NAMES, 3))
async def test_group_name_in_limit(probe: CoreProbe, name: str, accepted: bool) -> None:
    await expect(probe, name_limit_config("groups", name), accepted)
