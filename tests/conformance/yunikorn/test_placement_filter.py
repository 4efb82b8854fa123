"""yunikorn-core's placement rule filter tests, held against pykorn through registration, application
submission and the filter a rule shows on REST /ws/v1/partition/{p}/placementrules.

Ported from apache/yunikorn-core pkg/scheduler/placement/filter_test.go at the commit in
`YUNIKORN_CORE_COMMIT` (tests/conformance/upstream.py); the code under test is filter.go, and
configvalidator.go checkPlacementFilter, which every filter passes before a rule is built.

Upstream builds a Filter from a configs.Filter and reads its fields (allow, empty, the user and group
lists and expressions) or calls its matchers. Here the filter sits on one rule, `fixed root.admitted`,
beside a leaf root.default (placement_helpers.py): a user the filter lets through lands in
root.admitted, one it turns away lands in root.default. The Filter's fields are read where a user sees
them, the rule's `filter` on REST (dao.FilterDAO: type, userList, groupList, userExp, groupExp; absent for
an empty filter), compared with its lists sorted since YuniKorn serves them from a Go map. Upstream's
user "" (a filter with groups only) is a user no entry names here: the core refuses an application
without a user. A filter the configuration check refuses (one entry that is neither a name nor a regular
expression that compiles) is a refused registration.

Ported cases per upstream test function (a sequence of checks each, "Test.../<check>"):
  TestNewFilterLists         5 of 5          TestNewFilterExpressions   2 of 2
  TestNewFilterExceptions    4 of 4          TestFilterUser             3 of 3
  TestComplexExpression      1 of 1          TestFilterGroup            1 of 1
  TestAllowUser              4 of 4          TestAllowGroup             4 of 4
  TestAllowSecondaryGroup    4 of 4          TestAllowNoLists           3 of 3
  TestFilter_filterDAO       1 of 3
  Total                     32 cases

Not ported (2 rows): TestFilter_filterDAO rows "empty"#01 (a Filter neither empty nor allowing, with no
entries) and "everything" (a user list and a user expression at once): Go struct literals newFilter never
builds from a configuration, so no rule on REST can show them.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any

import pytest

from tests.conformance.core_probe import CoreProbe
from tests.conformance.upstream import YUNIKORN_CORE_COMMIT, yunikorn_case
from tests.conformance.yunikorn.placement_helpers import (
    DEFAULT_QUEUE,
    App,
    Json,
    config,
    land,
    sorted_filter,
)

UPSTREAM = f"apache/yunikorn-core@{YUNIKORN_CORE_COMMIT} pkg/scheduler/placement/filter_test.go"

ADMITTED = "root.admitted"
QUEUES = "- name: admitted\n"
UNCHECKED = "<unchecked>"  # the row does not read the filter's fields
Who = tuple[str, tuple[str, ...]]  # a user and the groups the RM sends (none: the core resolves them)


@dataclass(frozen=True)
class FilterCase:
    filt: Mapping[str, Any] | None  # the rule's filter (None: no filter key)
    admitted: tuple[Who, ...] = ()  # users the rule places
    passed_over: tuple[Who, ...] = ()  # users the rule lets go by
    dao: Json | str | None = UNCHECKED  # the filter on REST (None: not shown)
    refused: bool = False  # the configuration check refuses the filter


def F(
    filt: Mapping[str, Any] | None,
    admitted: tuple[Who, ...] = (),
    passed_over: tuple[Who, ...] = (),
    dao: Json | str | None = UNCHECKED,
) -> FilterCase:
    return FilterCase(filt, admitted, passed_over, dao)


def refused(filt: Mapping[str, Any]) -> FilterCase:
    return FilterCase(filt, refused=True)


OTHER = ("other",)
SPECIAL_USER = "user1_a_#_b_c-d-/-e:f_@_gmail.com"
SPECIAL_GROUP = "group1_a_b_c-d-e:f_gmail.com"

CASES: dict[tuple[str, str], FilterCase] = {
    ("TestNewFilterLists", "allow without users or groups"): F(
        {"type": "allow"}, admitted=(("user1", ("group1",)),), dao=None
    ),
    ("TestNewFilterLists", "deny without users or groups"): F(
        {"type": "deny"}, passed_over=(("user1", ("group1",)),), dao=None
    ),
    ("TestNewFilterLists", "allow with empty lists"): F(
        {"type": "allow", "users": [], "groups": []}, admitted=(("user1", ("group1",)),), dao=None
    ),
    # single entries without a regular expression's characters are names ("." included)
    ("TestNewFilterLists", "single user and group"): F(
        {"type": "", "users": [SPECIAL_USER], "groups": [SPECIAL_GROUP]},
        admitted=((SPECIAL_USER, OTHER), ("someone", (SPECIAL_GROUP,))),
        passed_over=(("someone", OTHER), (SPECIAL_USER.replace(".com", "xcom"), OTHER)),
        dao={"type": "allow", "userList": [SPECIAL_USER], "groupList": [SPECIAL_GROUP]},
    ),
    ("TestNewFilterLists", "multiple users and groups"): F(
        {"type": "", "users": ["user1", "user2"], "groups": ["group1", "group2"]},
        admitted=(("user2", OTHER), ("someone", ("group2",))),
        passed_over=(("user3", ("group3",)),),
        dao={"type": "allow", "userList": ["user1", "user2"], "groupList": ["group1", "group2"]},
    ),
    ("TestNewFilterExpressions", "expressions"): F(
        {"type": "allow", "users": ["user*"], "groups": ["group[1-9]"]},
        admitted=(("userx", OTHER), ("someone", ("group5",))),
        passed_over=(("someone", ("group0",)),),
        dao={"type": "allow", "userExp": "user*", "groupExp": "group[1-9]"},
    ),
    ("TestNewFilterExpressions", "invalid expressions"): refused(
        {"type": "allow", "users": ["user[a-z"], "groups": ["group[a-z"]}
    ),
    ("TestNewFilterExceptions", "duplicate user or group"): F(
        {"type": "", "users": ["user1", "user1"], "groups": ["group1", "group1"]},
        admitted=(("user1", OTHER), ("someone", ("group1",))),
        passed_over=(("user2", OTHER),),
        dao={"type": "allow", "userList": ["user1"], "groupList": ["group1"]},
    ),
    # an expression is one only as a single entry: in a list it is a name no user or group has
    ("TestNewFilterExceptions", "expression as part of list"): F(
        {"type": "", "users": ["user1", "user*"], "groups": ["group1", "group[1-9]"]},
        admitted=(("user1", OTHER), ("someone", ("group1",))),
        passed_over=(("user2", OTHER), ("someone", ("group2",))),
        dao={"type": "allow", "userList": ["user1"], "groupList": ["group1"]},
    ),
    ("TestNewFilterExceptions", "single invalid user or group"): refused(
        {"type": "", "users": ["user!1"], "groups": ["grou#p1"]}
    ),
    # invalid names are dropped from a list: a user or group so named is not matched
    ("TestNewFilterExceptions", "multiple invalid user or group"): F(
        {"type": "", "users": ["use!r1", "user2"], "groups": ["gro!up1", "gro#up2"]},
        admitted=(("user2", OTHER),),
        passed_over=(("use!r1", ()), ("someone", ("gro!up1",)), ("someone", ("gro#up2",))),
        dao={"type": "allow", "userList": ["user2"]},
    ),
    ("TestFilterUser", "single user"): F(
        {"users": ["user1"]}, admitted=(("user1", OTHER),), passed_over=(("USER1", OTHER), ("user2", OTHER))
    ),
    ("TestFilterUser", "user list"): F(
        {"users": ["user1", "USER2"]}, admitted=(("USER2", OTHER),), passed_over=(("user2", OTHER),)
    ),
    ("TestFilterUser", "user expression"): F(
        {"users": ["user?"]}, admitted=(("user1", OTHER), ("user2", OTHER))
    ),
    ("TestComplexExpression", "case insensitive user, two alternatives for groups"): F(
        {"users": ["(?i)user1"], "groups": ["^(group1.|other)$"]},
        admitted=(("USER1", ("none",)), ("someone", ("group12",)), ("someone", ("other",))),
        passed_over=(("user2", ("none",)), ("someone", ("group101",))),
    ),
    ("TestFilterGroup", "single group"): F(
        {"groups": ["group1"]}, admitted=(("someone", ("group1",)),), passed_over=(("someone", ("group2",)),)
    ),
    ("TestAllowUser", "deny user list"): F(
        {"type": "deny", "users": ["user1"]}, admitted=(("user2", ()),), passed_over=(("user1", ()),)
    ),
    ("TestAllowUser", "allow user list"): F(
        {"type": "allow", "users": ["user1"]}, admitted=(("user1", ()),), passed_over=(("user2", ()),)
    ),
    ("TestAllowUser", "deny user expression"): F(
        {"type": "deny", "users": ["user[0-1]"]}, admitted=(("user2", ()),), passed_over=(("user1", ()),)
    ),
    ("TestAllowUser", "allow user expression"): F(
        {"type": "allow", "users": ["user[0-1]"]}, admitted=(("user1", ()),), passed_over=(("user2", ()),)
    ),
    ("TestAllowGroup", "deny group list"): F(
        {"type": "deny", "groups": ["group1"]},
        admitted=(("someone", ("group2",)),),
        passed_over=(("someone", ("group1",)),),
    ),
    ("TestAllowGroup", "allow group list"): F(
        {"type": "allow", "groups": ["group1"]},
        admitted=(("someone", ("group1",)),),
        passed_over=(("someone", ("group2",)),),
    ),
    ("TestAllowGroup", "deny group expression"): F(
        {"type": "deny", "groups": ["group[0-9]"]},
        admitted=(("someone", ("nomatch",)),),
        passed_over=(("someone", ("group1",)),),
    ),
    ("TestAllowGroup", "allow group expression"): F(
        {"type": "allow", "groups": ["group[0-9]"]},
        admitted=(("someone", ("group1",)),),
        passed_over=(("someone", ("nomatch",)),),
    ),
    ("TestAllowSecondaryGroup", "deny group list"): F(
        {"type": "deny", "groups": ["group2"]}, passed_over=(("someone", ("nomatch", "group2")),)
    ),
    ("TestAllowSecondaryGroup", "allow group list"): F(
        {"type": "allow", "groups": ["group1", "group2"]}, admitted=(("someone", ("nomatch", "group2")),)
    ),
    ("TestAllowSecondaryGroup", "deny group expression"): F(
        {"type": "deny", "groups": ["group[0-9]"]}, passed_over=(("someone", ("nomatch", "group2")),)
    ),
    ("TestAllowSecondaryGroup", "allow group expression"): F(
        {"type": "allow", "groups": ["group[0-9]"]}, admitted=(("someone", ("nomatch", "group2")),)
    ),
    ("TestAllowNoLists", "no filter"): F(None, admitted=(("user1", ("group1",)),)),
    ("TestAllowNoLists", "allow type only"): F({"type": "allow"}, admitted=(("user1", ("group1",)),)),
    ("TestAllowNoLists", "deny type only"): F({"type": "deny"}, passed_over=(("user1", ("group1",)),)),
    ("TestFilter_filterDAO", "empty"): F({}, admitted=(("user1", ("group1",)),), dao=None),
}


def _rule(filt: Mapping[str, Any] | None) -> Json:
    rule: Json = {"name": "fixed", "value": ADMITTED}
    if filt is not None:
        rule["filter"] = dict(filt)
    return rule


@pytest.mark.parametrize("case", [pytest.param(c, id=yunikorn_case(*key)) for key, c in CASES.items()])
async def test_filter(probe: CoreProbe, case: FilterCase) -> None:
    text = config(QUEUES, [_rule(case.filt)])
    verdict = await probe.register(text)
    if case.refused:
        assert not verdict.accepted, f"upstream's checkPlacementFilter refuses this filter:\n{text}"
        return
    assert verdict.accepted, verdict.errors
    # What the filter lets through, and the filter on REST, compared at once so both differences show.
    want: dict[str, Any] = {}
    got: dict[str, Any] = {}
    whos = [(w, ADMITTED) for w in case.admitted] + [(w, DEFAULT_QUEUE) for w in case.passed_over]
    for i, ((user, groups), landing) in enumerate(whos):
        key = f"{user} {list(groups)}"
        want[key] = landing
        got[key] = await land(probe, f"app{i}", App(user=user, groups=groups))
    if not isinstance(case.dao, str):
        rules = await probe.placement_rules()
        want["filter on REST"] = (sorted_filter({"filter": case.dao}) or {}).get("filter")
        got["filter on REST"] = (sorted_filter(rules[0]) or {}).get("filter") if rules else "<no rule>"
    assert got == want
