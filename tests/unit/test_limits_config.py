"""queues.yaml `limits`: what is refused (with path and line) and what is accepted, as YuniKorn's
configuration check has it; the usergroupresolver key; partition limits as root's."""

from __future__ import annotations

import pytest

from core.config import ConfigError, load_config
from core.ugm.limits import limit_table
from tests.limits_config import limits_config


def _config(leaf_limits: str, parent_limits: str = "", leaf_extra: str = "", parent_extra: str = "") -> str:
    return limits_config(leaf_limits, parent_limits, leaf_extra, parent_extra)


ROOT = "{name: root}"


def _problems(text: str) -> list[str]:
    with pytest.raises(ConfigError) as info:
        load_config(text)
    return [str(p) for p in info.value.problems]


@pytest.mark.parametrize(
    ("limits", "words"),
    [
        ("- maxapplications: 1", "names no users and no groups"),
        ("- users: ['1bad']\n  maxapplications: 1", "invalid user name '1bad'"),
        ("- groups: ['bad group']\n  maxapplications: 1", "invalid group name 'bad group'"),
        ("- users: [sue, sue]\n  maxapplications: 1", "user 'sue' has a limit already on this queue"),
        (
            "- users: [sue]\n  maxapplications: 1\n- users: [sue]\n  maxapplications: 2",
            "user 'sue' has a limit already on this queue",
        ),
        ("- users: ['*', sue]\n  maxapplications: 1", "comes after the wildcard '*' user limit"),
        ("- groups: ['*']\n  maxapplications: 1", "a wildcard group limit needs at least one named group"),
        ("- users: [sue]\n  maxapplications: 0", "limits nothing"),
        ("- users: [sue]", "limits nothing"),
        ("- users: [sue]\n  maxresources: {memory: 0}", "maxresources must be above zero"),
        ("- users: [sue]\n  maxresources: {memory: 0, vcore: 0}", "maxresources must be above zero"),
    ],
)
def test_a_limit_on_one_queue_is_refused_with_its_path_and_line(limits: str, words: str) -> None:
    problems = _problems(_config(limits))
    assert any(words in p and "partitions[0].queues[0].queues[0].queues[0].limits" in p for p in problems), (
        problems
    )
    assert all("(line " in p for p in problems)


def test_a_limit_stays_within_its_queues_max_and_maxapplications() -> None:
    problems = _problems(
        _config(
            "- users: [sue]\n  maxresources: {memory: 200}\n  maxapplications: 9",
            leaf_extra="resources: {max: {memory: 100}}\nmaxapplications: 5",
        )
    )
    assert any(
        "maxresources {memory: 200} is above the queue's own max {memory: 100}" in p for p in problems
    ), problems
    assert any("maxapplications 9 is above the queue's own maxapplications 5" in p for p in problems)


def test_a_childs_limit_is_not_above_its_parents_for_the_same_user_or_group() -> None:
    problems = _problems(
        _config(
            "- users: [sue]\n  maxresources: {memory: 50}\n  maxapplications: 3\n"
            "- groups: [dev]\n  maxapplications: 9",
            parent_limits="- users: [sue]\n  maxresources: {memory: 40}\n  maxapplications: 2\n"
            "- groups: [dev]\n  maxapplications: 4",
        )
    )
    assert any("user 'sue': maxresources {memory: 50}" in p and "above the limit of user 'sue'" in p
               for p in problems), problems  # fmt: skip
    assert any("user 'sue': maxapplications 3" in p for p in problems)
    assert any("group 'dev': maxapplications 9" in p for p in problems)


def test_a_childs_limit_is_held_against_the_parents_wildcard_when_not_named_there() -> None:
    problems = _problems(
        _config(
            "- users: [sue]\n  maxresources: {memory: 50}",
            parent_limits="- users: ['*']\n  maxresources: {memory: 40}",
        )
    )
    assert any("above the limit of the wildcard '*' user limit" in p for p in problems), problems


def test_a_child_limit_without_maxapplications_under_a_parent_that_has_one_is_refused() -> None:
    """As YuniKorn: 0 means unlimited, which is above the parent's number."""
    problems = _problems(
        _config(
            "- users: [sue]\n  maxresources: {memory: 10}",
            parent_limits="- users: [sue]\n  maxapplications: 2",
        )
    )
    assert any("maxapplications unlimited (0)" in p for p in problems), problems


def test_good_limits_load_and_are_read_as_written() -> None:
    loaded = load_config(
        _config(
            "- limit: team a\n  users: [sue, '*']\n  groups: [dev, '*']\n"
            "  maxresources: {memory: 10G, vcore: 2}\n  maxapplications: 2",
            parent_limits="- users: [sue]\n  maxresources: {memory: 20G}\n  maxapplications: 4",
        )
    )
    table = limit_table(loaded.config.partitions[0].root)
    leaf = table["root.parent.a"]
    assert leaf.users["sue"].max_resources == {"memory": 10 * 10**9, "vcore": 2000}
    assert leaf.user_wildcard is not None and leaf.user_wildcard.max_applications == 2
    assert list(leaf.groups) == ["dev"] and leaf.group_wildcard is not None
    assert table["root.parent"].users["sue"].max_applications == 4


def test_partition_limits_are_the_root_queues() -> None:
    text = (
        "partitions:\n  - name: default\n    limits:\n      - users: [sue]\n        maxapplications: 3\n"
        "    queues:\n      - name: root\n        submitacl: '*'\n"
    )
    root = load_config(text).config.partitions[0].root
    assert limit_table(root)["root"].users["sue"].max_applications == 3
    both = text + "        limits:\n          - users: [sue]\n            maxapplications: 4\n"
    assert any("the partition's limits and the root queue's limits differ" in p for p in _problems(both))


@pytest.mark.parametrize(("kind", "resolver"), [("", ""), ("default", ""), ("os", "os"), ("OS", "os")])
def test_usergroupresolver_types_that_are_supported(kind: str, resolver: str) -> None:
    text = (
        f"partitions:\n  - name: default\n    usergroupresolver: {{type: '{kind}'}}\n    queues: [{ROOT}]\n"
    )
    assert load_config(text).config.partitions[0].user_group_resolver == resolver


@pytest.mark.parametrize(
    ("kind", "words"),
    [
        ("ldap", "not supported: pykorn has no LDAP client"),
        ("test", "not supported"),
        ("nis", "unknown type"),
    ],
)
def test_usergroupresolver_types_that_are_refused_say_why(kind: str, words: str) -> None:
    text = f"partitions:\n  - name: default\n    usergroupresolver: {{type: {kind}}}\n    queues: [{ROOT}]\n"
    problems = _problems(text)
    assert any(words in p and "partitions[0].usergroupresolver.type" in p for p in problems), problems
