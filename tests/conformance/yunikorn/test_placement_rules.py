"""yunikorn-core's placement rule and placement manager tests, held against pykorn through registration,
application submission and REST /ws/v1/partition/{p}/placementrules.

Ported from apache/yunikorn-core pkg/scheduler/placement/{fixed_rule,provided_rule,tag_rule,user_rule,
recovery_rule,rule,placement}_test.go at the commit in `YUNIKORN_CORE_COMMIT` (tests/conformance/upstream.py);
the code under test is the same folder's *.go, configvalidator.go checkPlacementRules (which every rule
set passes before it is loaded) and partition.go AddApplication (which creates the queue placed in).
filter_test.go is ported in test_placement_filter.py.

How a row is observed (see placement_helpers.py): the row's queue tree and rule are registered, with root
open to all and a leaf root.default added; the application lands in the queue the rule names, in
root.default when the rule names none (or one the manager will not use: a parent queue), and is rejected
when the rule fails. Rows from placement_test.go keep their own trees, ACLs and (no) default queue.
A row whose configuration upstream's check (configvalidator.go checkPlacementRules) refuses is built the
way a user could reach its state, or, where no user can, asserts that refusal:
  * the check reads a queue's `parent:` flag, not its children (configvalidator.go:398-404), so a fixed
    parent rule naming a queue with children but no flag is refused: TestProvidedRulePlace's parent
    rule rows, TestUserRulePlace/user queue that exists directly in hierarchy, TestManagerPlaceApp and
    TestManagerPlaceApp_Error add `parent: true`, which changes nothing in the tree built (queue.go
    NewConfiguredQueue makes a queue with children a parent either way);
  * a parent rule naming a leaf passes the check only when that leaf is not configured: the "parent rule
    names a leaf" and "failed parent rule" rows of TestFixedRuleParent, TestProvidedRuleParent and
    TestUserRuleParent make root.testchild dynamically first (an application placed under a provided
    rule that creates), then update to the row's rules (`seed`);
  * TestFixedRulePlace/deny filter type...: root.testchild is added to the tree so the rule passes the
    check; the filter answers before the queue is looked at;
  * a rule that passes the check but cannot be built (newRule fails) is accepted at registration with no
    rule active, and refused as an update (partition.go updatePartitionDetails): those rows assert the
    update is refused (UPDATE_REFUSED): TestFixedRuleParent/invalid parent queue name, TestTagRule/no
    tag name, TestNewRule/bogus and recovery;
  * unreachable, asserted as refused (REFUSED): TestFixedRule/no queue name and qualified queue with a
    parent rule, TestFixedRulePlace/invalid queue name (both), TestFixedRuleParent/child not created
    under a parent and failed parent rule (create is false and the queue is not configured, or its
    configured parent is a leaf).
The Go-only "test" rule (testrule.go) is replaced by `user` where a row only lists it (the DAO rows'
parent rule, the manager rows' rule list; `provided` beside a user rule in TestManagerBuildRule/two
rules in order): its REST form is the same, a name and `create`. TestNewRule's
name normalisation ("TeSt") is checked with "UsEr"; TestReplaceDot through the user rule's queue name.
TestManagerPlaceApp's draining queue is one a configuration update dropped while it held an application.

Ported cases per upstream test function:
  TestFixedRule              3 of 3          TestFixedRulePlace         8 of 8
  TestFixedRuleParent        7 of 7          Test_fixedRule_ruleDAO     4 of 4
  TestProvidedRulePlace      9 of 9          TestProvidedRuleParent     7 of 7
  Test_providedRule_ruleDAO  3 of 3          TestTagRule                3 of 3
  TestTagRulePlace          11 of 11         TestTagRuleParent          6 of 6
  Test_tagRule_ruleDAO       4 of 4          TestUserRulePlace          9 of 9
  TestUserRuleParent         7 of 7          Test_userRule_ruleDAO      3 of 3
  TestRecoveryRulePlace      2 of 2          Test_recoveryRule_ruleDAO  1 of 1
  TestNewRule                3 of 4          TestReplaceDot             4 of 4
  TestManagerNew             2 of 2          TestManagerInit            7 of 7
  TestManagerUpdate          4 of 4          TestManagerBuildRule       3 of 3
  TestManagerPlaceApp        8 of 8          TestForcePlaceApp         40 of 40
  TestManagerPlaceApp_Error  1 of 1
  Total                    159 cases

Not ported (5 checks):
  * TestNewRule/test: builds the Go-only test rule, which no configuration may name.
  * TestPlaceApp (rule_test.go): the test rule's placeApplication on a nil or bare Go object.
  * TestBasicRule: the unnamed basicRule a rule embeds; no configuration makes one.
  * TestRecoveryRuleInitialise: initialises a recovery rule object directly; a configuration naming the
    recovery rule is refused (TestNewRule/recovery).
  * TestTestRulePlace (testrule_test.go): the Go-only test rule.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any

import pytest

from si.v1.tags import TAG_CREATE_FORCE
from tests.conformance.core_probe import CoreProbe
from tests.conformance.upstream import YUNIKORN_CORE_COMMIT, yunikorn_case
from tests.conformance.yunikorn.placement_helpers import (
    DEFAULT_QUEUE,
    PROVIDED_DAO,
    RECOVERY_DAO,
    RECOVERY_QUEUE,
    REFUSED,
    REJECTED,
    UPDATE_REFUSED,
    App,
    Json,
    Rule,
    config,
    land,
    seed_queues,
    sorted_filter,
)

UPSTREAM = f"apache/yunikorn-core@{YUNIKORN_CORE_COMMIT} pkg/scheduler/placement"


def _rule(name: str, value: str, create: bool, parent: Rule | None, filt: Mapping[str, Any] | None) -> Rule:
    out: dict[str, Any] = {"name": name}
    if value:
        out["value"] = value
    if create:
        out["create"] = True
    if parent is not None:
        out["parent"] = dict(parent)
    if filt is not None:
        out["filter"] = dict(filt)
    return out


def fixed(value: str, create: bool = False, parent: Rule | None = None, filt: Json | None = None) -> Rule:
    return _rule("fixed", value, create, parent, filt)


def provided(create: bool = False, parent: Rule | None = None, filt: Json | None = None) -> Rule:
    return _rule("provided", "", create, parent, filt)


def tag(value: str, create: bool = False, parent: Rule | None = None, filt: Json | None = None) -> Rule:
    return _rule("tag", value, create, parent, filt)


def user(create: bool = False, parent: Rule | None = None, filt: Json | None = None) -> Rule:
    return _rule("user", "", create, parent, filt)


DENY = {"type": "deny"}

# Upstream's trees (written under the partition, as upstream does; the root is put above them).
TEST_QUEUE = """
- name: testqueue
- name: testparent
  queues:
    - name: testchild
"""  # rule_test.go/testrule_test.go confTestQueue
TEST_QUEUE_AND_TESTCHILD = TEST_QUEUE + "- name: testchild\n"  # a fixed rule's queue must be configured
PARENT_CHILD = """
- name: testchild
- name: testparent
  parent: true
"""  # confParentChild
PARENT_ONLY = """
- name: testparent
  parent: true
"""  # confParentChild without its leaf testchild, which an application makes dynamically (`seed`)
PROVIDED_TREE = """
- name: testparent
  queues:
    - name: testchild
"""  # TestProvidedRulePlace
PROVIDED_TREE_FLAGGED = """
- name: testparent
  parent: true
  queues:
    - name: testchild
"""
USER_TREE = """
- name: test_dot_user
- name: testchild
- name: testparent
  queues:
    - name: testchild
"""  # TestUserRulePlace
USER_TREE_FLAGGED = USER_TREE.replace("- name: testparent\n", "- name: testparent\n  parent: true\n")


@dataclass(frozen=True)
class Case:
    queues: str
    rules: tuple[Rule, ...] | None  # None: no placementrules key
    expect: str  # the queue the application lands in, or REJECTED, REFUSED, UPDATE_REFUSED
    app: App = field(default_factory=App)
    seed: tuple[str, ...] = ()  # leaves made dynamically before the rules are set
    default_queue: bool = True


def C(
    queues: str,
    rules: Sequence[Rule] | None,
    expect: str,
    queue: str = "",
    user: str = "testuser",
    groups: tuple[str, ...] = (),
    tags: Mapping[str, str] | None = None,
    seed: tuple[str, ...] = (),
    default_queue: bool = True,
) -> Case:
    app = App(queue=queue, user=user, groups=groups, tags=dict(tags or {}))
    return Case(queues, None if rules is None else tuple(rules), expect, app, seed, default_queue)


async def check(probe: CoreProbe, case: Case) -> None:
    text = config(case.queues, case.rules, default_queue=case.default_queue)
    if case.expect == REFUSED:
        verdict = await probe.register(text)
        assert not verdict.accepted, f"upstream's checkPlacementRules refuses these rules:\n{text}"
        return
    if case.expect == UPDATE_REFUSED:
        assert await probe.register(config(case.queues, default_queue=case.default_queue))
        verdict = await probe.update(text)
        assert not verdict.accepted, f"upstream refuses an update to rules it cannot build:\n{text}"
        return
    if case.seed:
        await seed_queues(probe, case.queues, case.seed)
        verdict = await probe.update(text)
    else:
        verdict = await probe.register(text)
    assert verdict.accepted, verdict.errors
    assert await land(probe, "app1", case.app) == case.expect


# ------------------------------------------------------------------------------------------------
# The rules, one table per upstream test function.

IGNORED = "ignored"  # the queue upstream's application names where the rule does not read it

CASES: dict[tuple[str, str], Case] = {
    # fixed_rule_test.go
    ("TestFixedRule", "no queue name refused"): C(TEST_QUEUE, [fixed("")], REFUSED),
    ("TestFixedRule", "queue name accepted"): C(TEST_QUEUE, [fixed("testqueue")], "root.testqueue"),
    ("TestFixedRule", "qualified queue with a parent rule refused"): C(
        TEST_QUEUE, [fixed("root.testchild", parent=fixed("testparent"))], REFUSED
    ),
    ("TestFixedRulePlace", "fixed queue that exists directly under the root"): C(
        TEST_QUEUE, [fixed("testqueue")], "root.testqueue", IGNORED
    ),
    ("TestFixedRulePlace", "fixed queue that exists directly in hierarchy"): C(
        TEST_QUEUE, [fixed("testparent.testchild")], "root.testparent.testchild", IGNORED
    ),
    ("TestFixedRulePlace", "fixed queue that does not exists"): C(
        TEST_QUEUE, [fixed("newqueue", create=True)], "root.newqueue", IGNORED
    ),
    # testparent has children but no parent flag, so the check lets the rule name it; the manager then
    # passes over a parent queue
    (
        "TestFixedRulePlace",
        "place in a parent queue should not fail: failure happens on create in this case",
    ): C(TEST_QUEUE, [fixed("root.testparent")], DEFAULT_QUEUE, IGNORED),
    ("TestFixedRulePlace", "place in a child using a parent"): C(
        TEST_QUEUE, [fixed("testchild", parent=fixed("testparent"))], "root.testparent.testchild", IGNORED
    ),
    # the name is not a queue that exists and create is false
    ("TestFixedRulePlace", "invalid queue name"): C(TEST_QUEUE, [fixed("testqueue!>invalid<")], REFUSED),
    ("TestFixedRulePlace", "invalid queue name with full queue hierarchy"): C(
        TEST_QUEUE, [fixed("root.testparent!>invalid<test.testqueue")], REFUSED
    ),
    # root.testchild configured so the rule passes the check; the filter answers before the queue counts
    ("TestFixedRulePlace", "deny filter type should got empty queue"): C(
        TEST_QUEUE_AND_TESTCHILD, [fixed("testchild", filt=DENY)], DEFAULT_QUEUE, IGNORED
    ),
    # root.testparent.nonexist is neither configured nor creatable: the check refuses it
    ("TestFixedRuleParent", "child not created under a parent"): C(
        PARENT_CHILD, [fixed("nonexist", parent=fixed("testparent"))], REFUSED
    ),
    ("TestFixedRuleParent", "parent rule does not create its queue"): C(
        PARENT_CHILD, [fixed("testchild", True, fixed("testparentnew"))], DEFAULT_QUEUE, IGNORED
    ),
    ("TestFixedRuleParent", "parent rule creates its queue"): C(
        PARENT_CHILD,
        [fixed("testchild", True, fixed("testparentnew", True))],
        "root.testparentnew.testchild",
        IGNORED,
    ),
    ("TestFixedRuleParent", "invalid parent queue name"): C(
        PARENT_CHILD, [fixed("testchild", True, fixed("test!invalid<tes>t", True))], UPDATE_REFUSED
    ),
    ("TestFixedRuleParent", "parent rule names a leaf"): C(
        PARENT_ONLY,
        [fixed("nonexist", True, fixed("testchild"))],
        REJECTED,
        IGNORED,
        seed=("root.testchild",),
    ),
    # root.testchild.testchild.testchild without create: refused whether testchild is configured or not
    ("TestFixedRuleParent", "failed parent rule"): C(
        PARENT_CHILD, [fixed("testchild", parent=fixed("testchild", parent=fixed("testchild")))], REFUSED
    ),
    ("TestFixedRuleParent", "parent name without the root prefix"): C(
        PARENT_CHILD, [fixed("testchild", True, fixed("root"))], "root.root.testchild", IGNORED
    ),
    # provided_rule_test.go
    ("TestProvidedRulePlace", "queue that does not exist directly under the root"): C(
        PROVIDED_TREE, [provided()], DEFAULT_QUEUE, "unknown", "test"
    ),
    ("TestProvidedRulePlace", "no queue provided"): C(PROVIDED_TREE, [provided()], DEFAULT_QUEUE, "", "test"),
    ("TestProvidedRulePlace", "qualified queue that does not exist"): C(
        PROVIDED_TREE, [provided()], DEFAULT_QUEUE, "root.unknown", "test"
    ),
    ("TestProvidedRulePlace", "qualified queue that does not exist with create"): C(
        PROVIDED_TREE, [provided(True)], "root.unknown", "root.unknown", "test"
    ),
    ("TestProvidedRulePlace", "invalid queue"): C(
        PROVIDED_TREE, [provided(True)], REJECTED, "root.unkno!wn", "test"
    ),
    ("TestProvidedRulePlace", "unqualified queue with parent rule that exists directly in hierarchy"): C(
        PROVIDED_TREE_FLAGGED,
        [provided(parent=fixed("testparent"))],
        "root.testparent.testchild",
        "testchild",
        "test",
    ),
    ("TestProvidedRulePlace", "qualified queue with parent rule (parent rule ignored)"): C(
        PROVIDED_TREE_FLAGGED,
        [provided(parent=fixed("testparent"))],
        DEFAULT_QUEUE,
        "root.testparent",
        "test",
    ),
    ("TestProvidedRulePlace", "invalid queue with parent rule (parent rule ignored)"): C(
        PROVIDED_TREE_FLAGGED, [provided(parent=fixed("testparent"))], REJECTED, "root.testp!arent", "test"
    ),
    ("TestProvidedRulePlace", "deny filter type"): C(
        PROVIDED_TREE, [provided(filt=DENY)], DEFAULT_QUEUE, "testchild", "test"
    ),
    ("TestProvidedRuleParent", "child not created under a parent"): C(
        PARENT_CHILD, [provided(parent=fixed("testparent"))], DEFAULT_QUEUE, "unknown", "test"
    ),
    ("TestProvidedRuleParent", "parent rule does not create its queue"): C(
        PARENT_CHILD, [provided(True, fixed("testother"))], DEFAULT_QUEUE, "testchild", "test"
    ),
    ("TestProvidedRuleParent", "parent rule creates its queue"): C(
        PARENT_CHILD,
        [provided(True, fixed("testparentnew", True))],
        "root.testparentnew.testchild",
        "testchild",
        "test",
    ),
    ("TestProvidedRuleParent", "invalid queue under a parent rule that creates"): C(
        PARENT_CHILD, [provided(True, fixed("testparentnew", True))], REJECTED, "testc!hild", "test"
    ),
    ("TestProvidedRuleParent", "parent rule names a leaf"): C(
        PARENT_ONLY,
        [provided(True, fixed("testchild"))],
        REJECTED,
        "unknown",
        "test",
        seed=("root.testchild",),
    ),
    ("TestProvidedRuleParent", "failed parent rule"): C(
        PARENT_ONLY,
        [provided(True, fixed("testchild", parent=fixed("testchild")))],
        REJECTED,
        "unknown",
        "test",
        seed=("root.testchild",),
    ),
    ("TestProvidedRuleParent", "parent name without the root prefix"): C(
        PARENT_CHILD,
        [provided(True, provided(True, fixed("root")))],
        "root.root.unknown.unknown",
        "unknown",
        "test",
    ),
    # tag_rule_test.go
    ("TestTagRule", "no tag name"): C(TEST_QUEUE, [tag("")], UPDATE_REFUSED),
    ("TestTagRule", "tag name"): C(
        TEST_QUEUE, [tag("label1")], "root.testqueue", tags={"label1": "testqueue"}
    ),
    ("TestTagRule", "tag rule as parent rule"): C(
        TEST_QUEUE,
        [tag("label1", parent=tag("label2"))],
        "root.testparent.testchild",
        tags={"label1": "testchild", "label2": "testparent"},
    ),
    ("TestTagRulePlace", "tag does not have a value"): C(TEST_QUEUE, [tag("label1")], DEFAULT_QUEUE, IGNORED),
    ("TestTagRulePlace", "tag queue that exists directly in hierarchy"): C(
        TEST_QUEUE, [tag("label1")], "root.testqueue", IGNORED, tags={"label1": "testqueue"}
    ),
    ("TestTagRulePlace", "tag invalid queue"): C(
        TEST_QUEUE, [tag("label1")], REJECTED, IGNORED, tags={"label1": "test!queue"}
    ),
    ("TestTagRulePlace", "tag queue that does not exists"): C(
        TEST_QUEUE, [tag("label1")], DEFAULT_QUEUE, IGNORED, tags={"label1": "unknown"}
    ),
    ("TestTagRulePlace", "tag queue fully qualified"): C(
        TEST_QUEUE,
        [tag("label1")],
        "root.testparent.testchild",
        IGNORED,
        tags={"label1": "root.testparent.testchild"},
    ),
    ("TestTagRulePlace", "tag invalid queue fully qualified"): C(
        TEST_QUEUE, [tag("label1")], REJECTED, IGNORED, tags={"label1": "root.testparent.test!child"}
    ),
    ("TestTagRulePlace", "tag queue references recovery"): C(
        TEST_QUEUE, [tag("label1")], DEFAULT_QUEUE, IGNORED, tags={"label1": RECOVERY_QUEUE}
    ),
    ("TestTagRulePlace", "parent tag not set"): C(
        TEST_QUEUE,
        [tag("label1", parent=tag("label2"))],
        DEFAULT_QUEUE,
        IGNORED,
        tags={"label1": "testchild"},
    ),
    ("TestTagRulePlace", "child under the parent tag"): C(
        TEST_QUEUE,
        [tag("label1", parent=tag("label2"))],
        "root.testparent.testchild",
        IGNORED,
        tags={"label1": "testchild", "label2": "testparent"},
    ),
    ("TestTagRulePlace", "invalid parent tag"): C(
        TEST_QUEUE,
        [tag("label1", parent=tag("label2"))],
        REJECTED,
        IGNORED,
        tags={"label1": "testchild", "label2": "testp!arent"},
    ),
    ("TestTagRulePlace", "deny filter type"): C(
        TEST_QUEUE,
        [tag("label1", filt=DENY)],
        DEFAULT_QUEUE,
        IGNORED,
        tags={"label1": "testchild", "label2": "testp!arent"},
    ),
    ("TestTagRuleParent", "child not created under a parent"): C(
        PARENT_CHILD,
        [tag("label1", parent=tag("label2"))],
        DEFAULT_QUEUE,
        "unknown",
        tags={"label1": "testchild", "label2": "testparent"},
    ),
    ("TestTagRuleParent", "parent rule does not create its queue"): C(
        PARENT_CHILD,
        [tag("label1", True, tag("label2"))],
        DEFAULT_QUEUE,
        "unknown",
        tags={"label1": "testchild", "label2": "testparentnew"},
    ),
    ("TestTagRuleParent", "parent rule creates its queue"): C(
        PARENT_CHILD,
        [tag("label1", True, tag("label2", True))],
        "root.testparentnew.testchild",
        "unknown",
        tags={"label1": "testchild", "label2": "testparentnew"},
    ),
    ("TestTagRuleParent", "parent rule names a leaf"): C(
        PARENT_CHILD,
        [tag("label2", True, tag("label1"))],
        REJECTED,
        "unknown",
        tags={"label1": "testchild", "label2": "testparentnew"},
    ),
    ("TestTagRuleParent", "failed parent rule"): C(
        PARENT_CHILD,
        [tag("label2", parent=tag("label1", parent=tag("label1")))],
        REJECTED,
        "unknown",
        tags={"label1": "testchild", "label2": "testparentnew"},
    ),
    ("TestTagRuleParent", "parent name without the root prefix"): C(
        PARENT_CHILD,
        [tag("label2", True, tag("label2", True, fixed("root")))],
        "root.root.testparentnew.testparentnew",
        "unknown",
        tags={"label1": "testchild", "label2": "testparentnew"},
    ),
    # user_rule_test.go
    ("TestUserRulePlace", "user queue that exists directly under the root"): C(
        USER_TREE, [user()], "root.testchild", IGNORED, "testchild"
    ),
    ("TestUserRulePlace", "trying to place in a parent queue should fail on queue create not in the rule"): C(
        USER_TREE, [user()], DEFAULT_QUEUE, IGNORED, "testparent"
    ),
    ("TestUserRulePlace", "user rule with dotted user should not have failed"): C(
        USER_TREE, [user()], "root.test_dot_user", IGNORED, "test.user"
    ),
    ("TestUserRulePlace", "user queue that exists directly in hierarchy"): C(
        USER_TREE_FLAGGED,
        [user(parent=fixed("testparent"))],
        "root.testparent.testchild",
        IGNORED,
        "testchild",
    ),
    ("TestUserRulePlace", "user queue that does not exists"): C(
        USER_TREE, [user(True)], "root.unknown", IGNORED, "unknown"
    ),
    ("TestUserRulePlace", "user queue with oidc supported characters"): C(
        USER_TREE, [user(True)], "root.test_dot_user@gmail_dot_com", IGNORED, "test.user@gmail.com"
    ),
    ("TestUserRulePlace", "user queue with oidc supported characters#01"): C(
        USER_TREE,
        [user(True)],
        "root.http://domain_dot_com/server1/testuser@cloudera_dot_com",
        IGNORED,
        "http://domain.com/server1/testuser@cloudera.com",
    ),
    ("TestUserRulePlace", "invalid queue name"): C(
        USER_TREE, [user(True)], REJECTED, IGNORED, "invalid!us>er"
    ),
    ("TestUserRulePlace", "deny filter type should got empty queue"): C(
        USER_TREE, [user(filt=DENY)], DEFAULT_QUEUE, IGNORED, "unknown"
    ),
    ("TestUserRuleParent", "child not created under a parent"): C(
        PARENT_CHILD, [user(parent=fixed("testparent"))], DEFAULT_QUEUE, "unknown", "testchild"
    ),
    ("TestUserRuleParent", "parent rule does not create its queue"): C(
        PARENT_CHILD, [user(True, fixed("testother"))], DEFAULT_QUEUE, "unknown", "testchild"
    ),
    ("TestUserRuleParent", "parent rule creates its queue"): C(
        PARENT_CHILD,
        [user(True, fixed("testparentnew", True))],
        "root.testparentnew.testchild",
        "unknown",
        "testchild",
    ),
    ("TestUserRuleParent", "invalid user under a parent rule that creates"): C(
        PARENT_CHILD, [user(True, fixed("testparentnew", True))], REJECTED, "unknown", "test!child"
    ),
    ("TestUserRuleParent", "parent rule names a leaf"): C(
        PARENT_ONLY,
        [user(True, fixed("testchild"))],
        REJECTED,
        "unknown",
        "testchild",
        seed=("root.testchild",),
    ),
    ("TestUserRuleParent", "failed parent rule"): C(
        PARENT_ONLY,
        [user(True, fixed("testchild", parent=fixed("testchild")))],
        REJECTED,
        "unknown",
        "testchild",
        seed=("root.testchild",),
    ),
    ("TestUserRuleParent", "parent name without the root prefix"): C(
        PARENT_CHILD, [user(True, fixed("root"))], "root.root.testchild", "unknown", "testchild"
    ),
    # recovery_rule_test.go: no rules configured, so the implicit provided rule comes before recovery
    ("TestRecoveryRulePlace", "not forced: not recovered"): C(
        TEST_QUEUE, None, REJECTED, IGNORED, default_queue=False
    ),
    ("TestRecoveryRulePlace", "forced: recovery queue"): C(
        TEST_QUEUE, None, RECOVERY_QUEUE, IGNORED, tags={TAG_CREATE_FORCE: "true"}, default_queue=False
    ),
    # rule_test.go
    ("TestNewRule", "bogus rule name refused"): C(TEST_QUEUE, [{"name": "bogus"}], UPDATE_REFUSED),
    ("TestNewRule", "recovery rule name refused"): C(TEST_QUEUE, [{"name": "recovery"}], UPDATE_REFUSED),
    ("TestReplaceDot", "name.name"): C("", [user(True)], "root.name_dot_name", user="name.name"),
    ("TestReplaceDot", "name...name"): C(
        "", [user(True)], "root.name_dot__dot__dot_name", user="name...name"
    ),
    ("TestReplaceDot", "name.name.name"): C(
        "", [user(True)], "root.name_dot_name_dot_name", user="name.name.name"
    ),
    ("TestReplaceDot", ".name."): C("", [user(True)], "root._dot_name_dot_", user=".name."),
}


@pytest.mark.parametrize("case", [pytest.param(c, id=yunikorn_case(*key)) for key, c in CASES.items()])
async def test_rule(probe: CoreProbe, case: Case) -> None:
    await check(probe, case)


# ------------------------------------------------------------------------------------------------
# REST /placementrules: each rule as RuleDAO, the recovery rule last.


def _dao(name: str, filt: Json | None = None, parent: Json | None = None, **parameters: str) -> Json:
    out: Json = {"name": name, "parameters": parameters}
    if filt is not None:
        out["filter"] = filt
    if parent is not None:
        out["parentRule"] = parent
    return out


USER_DAO = _dao("user", create="false")
CREATING_USER_DAO = _dao("user", create="true")

DAO_CASES: dict[tuple[str, str], tuple[Rule, Json]] = {
    ("Test_fixedRule_ruleDAO", "base"): (
        fixed("default"),
        _dao("fixed", queue="default", qualified="false", create="false"),
    ),
    ("Test_fixedRule_ruleDAO", "qualified"): (
        fixed("root.default"),
        _dao("fixed", queue="root.default", qualified="true", create="false"),
    ),
    ("Test_fixedRule_ruleDAO", "parent"): (
        fixed("default", True, user(True)),
        _dao("fixed", parent=CREATING_USER_DAO, queue="default", qualified="false", create="true"),
    ),
    ("Test_fixedRule_ruleDAO", "filter"): (
        fixed("default", True, filt={"type": "allow", "groups": ["group1", "group2"]}),
        _dao(
            "fixed",
            {"type": "allow", "groupList": ["group1", "group2"]},
            queue="default",
            qualified="false",
            create="true",
        ),
    ),
    ("Test_providedRule_ruleDAO", "base"): (provided(), PROVIDED_DAO),
    ("Test_providedRule_ruleDAO", "parent"): (
        provided(True, user(True)),
        _dao("provided", parent=CREATING_USER_DAO, create="true"),
    ),
    ("Test_providedRule_ruleDAO", "filter"): (
        provided(filt={"type": "deny", "users": ["john*"]}),
        _dao("provided", {"type": "deny", "userExp": "john*"}, create="false"),
    ),
    ("Test_tagRule_ruleDAO", "base"): (tag("namespace"), _dao("tag", tagName="namespace", create="false")),
    ("Test_tagRule_ruleDAO", "mixedcase"): (
        tag("MixedCaseTag"),
        _dao("tag", tagName="mixedcasetag", create="false"),
    ),
    ("Test_tagRule_ruleDAO", "parent"): (
        tag("one", True, user(True)),
        _dao("tag", parent=CREATING_USER_DAO, tagName="one", create="true"),
    ),
    ("Test_tagRule_ruleDAO", "filter"): (
        tag("two", True, filt={"type": "deny", "groups": ["group[0-9]"]}),
        _dao("tag", {"type": "deny", "groupExp": "group[0-9]"}, tagName="two", create="true"),
    ),
    ("Test_userRule_ruleDAO", "base"): (user(), USER_DAO),
    ("Test_userRule_ruleDAO", "parent"): (
        user(True, user(True)),
        _dao("user", parent=CREATING_USER_DAO, create="true"),
    ),
    ("Test_userRule_ruleDAO", "filter"): (
        user(True, filt={"type": "deny", "users": ["user"]}),
        _dao("user", {"type": "deny", "userList": ["user"]}, create="true"),
    ),
}


@pytest.mark.parametrize(
    ("rule", "want"), [pytest.param(*row, id=yunikorn_case(*key)) for key, row in DAO_CASES.items()]
)
async def test_rule_dao(probe: CoreProbe, rule: Rule, want: Json) -> None:
    assert await probe.register(config("", [rule]))
    # the rule list's end (the recovery rule) is Test_recoveryRule_ruleDAO's
    got = await probe.placement_rules()
    assert [sorted_filter(r) for r in got[:1]] == [sorted_filter(want)]


@pytest.mark.parametrize("rules", [pytest.param([user()], id=yunikorn_case("Test_recoveryRule_ruleDAO"))])
async def test_recovery_rule_dao(probe: CoreProbe, rules: list[Rule]) -> None:
    assert await probe.register(config("", rules))
    assert (await probe.placement_rules())[-1:] == [RECOVERY_DAO]


# ------------------------------------------------------------------------------------------------
# placement_test.go: the manager's rule list on REST, register then update step by step.
# A step is (rules, REST after it); None as rules sends no placementrules key, None as REST says the
# step is refused and the rules in force stay as they were.

Step = tuple[Sequence[Rule] | None, list[Json] | None]
IMPLICIT = [PROVIDED_DAO, RECOVERY_DAO]
UNKNOWN = {"name": "unknown", "create": True}
WITH_PARENT = user(True, user())
WITH_PARENT_DAO = _dao("user", parent=USER_DAO, create="true")

SEQUENCES: dict[tuple[str, str], list[Step]] = {
    ("TestManagerNew", "no rules: implicit provided and recovery rules"): [(None, IMPLICIT)],
    ("TestManagerInit", "no rules: implicit provided and recovery rules"): [(None, IMPLICIT)],
    ("TestManagerInit", "empty rule list: implicit provided and recovery rules"): [([], IMPLICIT)],
    ("TestManagerInit", "unknown rule refused: rules unchanged"): [(None, IMPLICIT), ([UNKNOWN], None)],
    ("TestManagerInit", "one rule"): [(None, IMPLICIT), ([user()], [USER_DAO, RECOVERY_DAO])],
    ("TestManagerInit", "rules removed by an empty list"): [
        ([user()], [USER_DAO, RECOVERY_DAO]),
        ([], IMPLICIT),
    ],
    ("TestManagerInit", "rules removed by no list"): [([user()], [USER_DAO, RECOVERY_DAO]), (None, IMPLICIT)],
    ("TestManagerInit", "one rule with a parent"): [
        (None, IMPLICIT),
        ([WITH_PARENT], [WITH_PARENT_DAO, RECOVERY_DAO]),
    ],
    ("TestManagerUpdate", "update to one rule"): [(None, IMPLICIT), ([user()], [USER_DAO, RECOVERY_DAO])],
    ("TestManagerUpdate", "update to an empty list"): [([user()], [USER_DAO, RECOVERY_DAO]), ([], IMPLICIT)],
    ("TestManagerUpdate", "update to no list"): [([user()], [USER_DAO, RECOVERY_DAO]), (None, IMPLICIT)],
    ("TestManagerUpdate", "update to an unknown rule refused"): [
        ([user()], [USER_DAO, RECOVERY_DAO]),
        ([UNKNOWN], None),
    ],
    ("TestManagerBuildRule", "one rule"): [([user()], [USER_DAO, RECOVERY_DAO])],
    ("TestManagerBuildRule", "rule with a parent"): [([WITH_PARENT], [WITH_PARENT_DAO, RECOVERY_DAO])],
    ("TestManagerBuildRule", "two rules in order"): [
        ([user(), provided()], [USER_DAO, PROVIDED_DAO, RECOVERY_DAO])
    ],
}


@pytest.mark.parametrize("steps", [pytest.param(s, id=yunikorn_case(*key)) for key, s in SEQUENCES.items()])
async def test_manager_rules(probe: CoreProbe, steps: list[Step]) -> None:
    in_force: list[Json] | None = None
    for i, (rules, want) in enumerate(steps):
        text = config("", rules)
        verdict = await (probe.register(text) if i == 0 else probe.update(text))
        if want is None:
            assert not verdict.accepted, f"upstream refuses rules it cannot build:\n{text}"
        else:
            assert verdict.accepted, verdict.errors
            in_force = want
        assert await probe.placement_rules() == in_force, f"after step {i}"


@pytest.mark.parametrize(
    "rules", [pytest.param([UNKNOWN], id=yunikorn_case("TestManagerNew", "unknown rule"))]
)
async def test_manager_new_unknown_rule(probe: CoreProbe, rules: list[Rule]) -> None:
    # Upstream registers the partition with an inactive manager (no rules: every application refused);
    # refusing the configuration instead is stricter, and allowed.
    verdict = await probe.register(config("", rules))
    if verdict.accepted:
        assert await probe.placement_rules() == []
        assert await land(probe, "app1", App(queue=DEFAULT_QUEUE)) == REJECTED


@pytest.mark.parametrize(
    "name", [pytest.param("UsEr", id=yunikorn_case("TestNewRule", "rule name normalised"))]
)
async def test_rule_name_normalised(probe: CoreProbe, name: str) -> None:
    assert await probe.register(config("", [{"name": name, "create": True}]))
    assert await probe.placement_rules() == [CREATING_USER_DAO, RECOVERY_DAO]
    assert await land(probe, "app1", App(user="alice")) == "root.alice"


# ------------------------------------------------------------------------------------------------
# placement_test.go: the manager placing applications.

MANAGER_TREE = """
- name: testparent
  submitacl: "*"
  parent: true
  queues:
    - name: testchild
- name: fixed
  submitacl: "other-user "
  parent: true
"""  # TestManagerPlaceApp's; testparent flagged a parent for the fixed parent rule (see above)
MANAGER_TREE_DRAINED = """
- name: testparent
  submitacl: "*"
  parent: true
- name: fixed
  submitacl: "other-user "
  parent: true
"""  # the same with testchild removed from the configuration
MANAGER_RULES = [user(parent=fixed("testparent")), provided(True), tag("namespace", True)]
LEAF = App(queue="root.fixed.leaf", user="other-user")  # makes root.fixed.leaf

MANAGER_CASES: dict[str, tuple[tuple[App, ...], App, str]] = {
    "user rule existing queue, acl allowed": ((), App(user="testchild"), "root.testparent.testchild"),
    "user rule new queue: fails on create flag": ((), App(user="other-user"), REJECTED),
    "provided rule: queue acl allowed, anyone create": ((), LEAF, "root.fixed.leaf"),
    "provided rule: queue acl deny, queue does not exist": (
        (),
        App(queue="root.fixed.other", user="unknown-user"),
        REJECTED,
    ),
    "tag rule: existing leaf, acl deny": (
        (LEAF,),
        App(user="unknown-user", tags={"namespace": "root.fixed.leaf"}),
        REJECTED,
    ),
    "tag rule: existing leaf, acl allow": (
        (LEAF,),
        App(user="other-user", tags={"namespace": "root.fixed.leaf"}),
        "root.fixed.leaf",
    ),
    "provided rule: submit to parent": ((), App(queue="root.fixed", user="other-user"), REJECTED),
}


@pytest.mark.parametrize(
    ("before", "app", "expect"),
    [
        pytest.param(*row, id=yunikorn_case("TestManagerPlaceApp", name))
        for name, row in MANAGER_CASES.items()
    ],
)
async def test_manager_place_app(probe: CoreProbe, before: tuple[App, ...], app: App, expect: str) -> None:
    assert await probe.register(config(MANAGER_TREE, MANAGER_RULES, root_acl=None, default_queue=False))
    for i, earlier in enumerate(before):
        assert await land(probe, f"before-{i}", earlier) == earlier.queue
    assert await land(probe, "app1", app) == expect


DRAINING_APP = App(queue="root.testparent.testchild", user="other-user")
DRAINING_ID = yunikorn_case("TestManagerPlaceApp", "provided rule: submit to draining queue")


@pytest.mark.parametrize("app", [pytest.param(DRAINING_APP, id=DRAINING_ID)])
async def test_manager_place_app_draining(probe: CoreProbe, app: App) -> None:
    # The queue drains when a configuration drops it while it still runs an application.
    assert await probe.register(config(MANAGER_TREE, MANAGER_RULES, root_acl=None, default_queue=False))
    assert await land(probe, "running", App(user="testchild")) == "root.testparent.testchild"
    assert await probe.update(config(MANAGER_TREE_DRAINED, MANAGER_RULES, root_acl=None, default_queue=False))
    assert await land(probe, "app1", app) == REJECTED


@pytest.mark.parametrize(
    "rules",
    [
        pytest.param(
            [user(parent=user(parent=fixed("testparent")))], id=yunikorn_case("TestManagerPlaceApp_Error")
        )
    ],
)
async def test_manager_place_app_error(probe: CoreProbe, rules: list[Rule]) -> None:
    # The middle user rule names root.testparent.testchild, a leaf, as the outer rule's parent.
    assert await probe.register(config(MANAGER_TREE, rules, root_acl=None, default_queue=False))
    assert await land(probe, "app1", App(user="testchild")) == REJECTED


FORCE_QUEUES = """
- name: provided
  submitacl: "*"
- name: acldeny
  submitacl: " "
- name: parent
  parent: true
  submitacl: "*"
"""  # TestForcePlaceApp's first tree, under a root whose submitacl is "any-user"
FORCE_QUEUES_DEFAULT = '- name: default\n  submitacl: "*"' + FORCE_QUEUES
FORCE_QUEUES_CUSTOM = '- name: custom\n  submitacl: "*"' + FORCE_QUEUES
FORCE_RULES = [provided(), tag("namespace", True)]
FORCE_RULES_CUSTOM = [*FORCE_RULES, fixed("root.custom", True)]
ANY, DENIED = "any-user", "deny-user"
FORCE = {TAG_CREATE_FORCE: "true"}
NS = {"namespace": "namespace"}
FORCE_NS = {**FORCE, **NS}
PROVIDED_Q, DEFAULT_Q, CUSTOM_Q = "root.provided", "root.default", "root.custom"

# (queue, placed, tags, user) per row, as upstream's tables
FORCE_ROWS: list[tuple[str, str, str, Mapping[str, str], str]] = [
    ("empty", "", REJECTED, {}, ANY),
    ("provided unqualified", "provided", PROVIDED_Q, {}, ANY),
    ("provided qualified", PROVIDED_Q, PROVIDED_Q, {}, ANY),
    ("provided not exist", "unknown", REJECTED, {}, ANY),
    ("provided parent", "root.parent", REJECTED, {}, ANY),
    ("acl deny", "root.acldeny", REJECTED, {}, DENIED),
    ("create", "unknown", "root.namespace", NS, ANY),
    ("deny create", "unknown", REJECTED, NS, DENIED),
    ("forced exist", PROVIDED_Q, PROVIDED_Q, FORCE, ANY),
    ("forced and create", "unknown", "root.namespace", FORCE_NS, ANY),
    ("forced and deny create", "unknown", RECOVERY_QUEUE, FORCE_NS, DENIED),
    ("forced parent", "root.parent", RECOVERY_QUEUE, FORCE, ANY),
    ("forced acl deny", "root.acldeny", RECOVERY_QUEUE, FORCE, DENIED),
    ("forced not exist", "unknown", RECOVERY_QUEUE, FORCE, ANY),
    ("forced not exist acl deny", "unknown", RECOVERY_QUEUE, FORCE, DENIED),
]
FORCE_ROWS_DEFAULT: list[tuple[str, str, str, Mapping[str, str], str]] = [
    ("empty | defaulQ defined", "", DEFAULT_Q, {}, ANY),
    ("provided unqualified | defaulQ defined", "provided", PROVIDED_Q, {}, ANY),
    ("provided qualified | defaulQ defined", DEFAULT_Q, DEFAULT_Q, {}, ANY),
    ("provided not exist | defaulQ defined", "unknown", DEFAULT_Q, {}, ANY),
    ("provided parent | defaulQ defined", "root.parent", DEFAULT_Q, {}, ANY),
    ("acl deny | defaulQ defined", "root.acldeny", DEFAULT_Q, {}, DENIED),
    ("create | defaulQ defined", "unknown", "root.namespace", NS, ANY),
    ("deny create | defaulQ defined", "unknown", DEFAULT_Q, NS, DENIED),
    ("forced exist | defaulQ defined", DEFAULT_Q, DEFAULT_Q, FORCE, ANY),
    ("forced and create | defaulQ defined", "unknown", "root.namespace", FORCE_NS, ANY),
    ("forced and deny create | defaulQ defined", "unknown", RECOVERY_QUEUE, FORCE_NS, DENIED),
    ("forced parent | defaulQ defined", "root.parent", RECOVERY_QUEUE, FORCE, ANY),
    ("forced acl deny | defaulQ defined", "root.acldeny", RECOVERY_QUEUE, FORCE, DENIED),
    ("forced not exist | defaulQ defined", "unknown", RECOVERY_QUEUE, FORCE, ANY),
    ("forced not exist acl deny | defaulQ defined", "unknown", RECOVERY_QUEUE, FORCE, DENIED),
]
FORCE_ROWS_CUSTOM: list[tuple[str, str, str, Mapping[str, str], str]] = [
    ("empty | custom defaulQ", "", CUSTOM_Q, {}, ANY),
    ("provided unqualified | custom defaulQ", "provided", PROVIDED_Q, {}, ANY),
    ("provided qualified | custom defaulQ", PROVIDED_Q, PROVIDED_Q, {}, ANY),
    ("provided not exist | custom defaulQ", "unknown", CUSTOM_Q, {}, ANY),
    ("provided parent | custom defaulQ", "root.parent", CUSTOM_Q, {}, ANY),
    ("acl deny | custom defaulQ", "root.acldeny", CUSTOM_Q, {}, DENIED),
    ("create | custom defaulQ", "unknown", "root.namespace", NS, ANY),
    ("deny create | custom defaulQ", "unknown", CUSTOM_Q, NS, DENIED),
    ("forced exist | custom defaulQ", PROVIDED_Q, PROVIDED_Q, FORCE, ANY),
    ("forced and create | custom defaulQ", "unknown", "root.namespace", FORCE_NS, ANY),
]


def _force_params() -> list[Any]:
    tables = (
        (FORCE_QUEUES, FORCE_RULES, FORCE_ROWS),
        (FORCE_QUEUES_DEFAULT, FORCE_RULES, FORCE_ROWS_DEFAULT),
        (FORCE_QUEUES_CUSTOM, FORCE_RULES_CUSTOM, FORCE_ROWS_CUSTOM),
    )
    return [
        pytest.param(
            C(queues, rules, placed, queue, who, tags=tags, default_queue=False),
            id=yunikorn_case("TestForcePlaceApp", name),
        )
        for queues, rules, rows in tables
        for name, queue, placed, tags, who in rows
    ]


@pytest.mark.parametrize("case", _force_params())
async def test_force_place_app(probe: CoreProbe, case: Case) -> None:
    text = config(case.queues, case.rules, root_acl=ANY, default_queue=False)
    assert await probe.register(text)
    assert await land(probe, "app1", case.app) == case.expect
