"""Queue properties: what flows from parent to child, how values parse, and how bad ones are reported."""

from __future__ import annotations

import pytest

from core.config import load_config
from core.config.properties import (
    APPLICATION_SORT_POLICY,
    APPLICATION_SORT_PRIORITY,
    PREEMPTION_DELAY,
    PREEMPTION_POLICY,
    PRIORITY_OFFSET,
    PRIORITY_POLICY,
    QUOTA_PREEMPTION_DELAY,
    QueueProperties,
    inherit,
    parse,
)


class Warnings:
    """Collects (key, message) pairs passed to parse()'s warn callback."""

    def __init__(self) -> None:
        self.items: list[tuple[str, str]] = []

    def __call__(self, key: str, message: str) -> None:
        self.items.append((key, message))

    @property
    def keys(self) -> list[str]:
        return [k for k, _ in self.items]


def _leaf(raw: dict[str, str]) -> tuple[QueueProperties, Warnings]:
    warnings = Warnings()
    return parse(raw, is_leaf=True, is_root=False, warn=warnings), warnings


# inherit() ----------------------------------------------------------------------------------------


def test_priority_policy_and_offset_do_not_flow_down() -> None:
    child = inherit({PRIORITY_POLICY: "fence", PRIORITY_OFFSET: "100"}, {})
    assert child == {PRIORITY_POLICY: "default", PRIORITY_OFFSET: "0"}


@pytest.mark.parametrize("policy", ["fence", "default", "bogus"])
def test_preemption_policy_other_than_disabled_resets_to_default(policy: str) -> None:
    assert inherit({PREEMPTION_POLICY: policy}, {}) == {PREEMPTION_POLICY: "default"}


def test_preemption_policy_disabled_flows_down() -> None:
    assert inherit({PREEMPTION_POLICY: "disabled"}, {}) == {PREEMPTION_POLICY: "disabled"}
    # ... and keeps flowing through every level.
    grandchild = inherit(inherit({PREEMPTION_POLICY: "disabled"}, {}), {})
    assert grandchild[PREEMPTION_POLICY] == "disabled"


def test_other_properties_are_inherited_as_written() -> None:
    parent = {
        APPLICATION_SORT_POLICY: "fair",
        APPLICATION_SORT_PRIORITY: "disabled",
        QUOTA_PREEMPTION_DELAY: "2m",
        PREEMPTION_DELAY: "45s",
        "custom.key": "anything",
    }
    assert inherit(parent, {}) == parent


def test_own_values_override_inherited_ones() -> None:
    parent = {APPLICATION_SORT_POLICY: "fair", PRIORITY_OFFSET: "100", PREEMPTION_POLICY: "disabled"}
    own = {APPLICATION_SORT_POLICY: "fifo", PRIORITY_OFFSET: "7", PREEMPTION_POLICY: "fence"}
    assert inherit(parent, own) == own


def test_inherit_without_a_parent_is_the_own_properties() -> None:
    assert inherit(None, {PRIORITY_POLICY: "fence"}) == {PRIORITY_POLICY: "fence"}


def test_inherit_does_not_change_its_inputs() -> None:
    parent = {PRIORITY_OFFSET: "5"}
    own = {APPLICATION_SORT_POLICY: "fair"}
    inherit(parent, own)
    assert parent == {PRIORITY_OFFSET: "5"}
    assert own == {APPLICATION_SORT_POLICY: "fair"}


# parse(): application sorting ---------------------------------------------------------------------


def test_defaults() -> None:
    props, warnings = _leaf({})
    assert props == QueueProperties()
    assert props.sort_policy == "fifo"
    assert props.sort_priority_enabled
    assert props.priority_policy == "default"
    assert props.priority_offset == 0
    assert props.preemption_policy == "default"
    assert props.preemption_delay == 30.0
    assert props.quota_preemption_delay == 0.0
    assert warnings.items == []


@pytest.mark.parametrize(("value", "expected"), [("fifo", "fifo"), ("fair", "fair"), ("", "fifo")])
def test_sort_policy_values(value: str, expected: str) -> None:
    props, warnings = _leaf({APPLICATION_SORT_POLICY: value})
    assert props.sort_policy == expected
    assert warnings.items == []


@pytest.mark.parametrize("value", ["FAIR", "Fair", " fair"])
def test_sort_policy_is_compared_as_written_as_yunikorn_does(value: str) -> None:
    props, warnings = _leaf({APPLICATION_SORT_POLICY: value})
    assert props.sort_policy == "fifo"
    assert warnings.keys == [APPLICATION_SORT_POLICY]
    assert "in lower case" in warnings.items[0][1]


def test_stateaware_is_fifo_with_a_warning() -> None:
    props, warnings = _leaf({APPLICATION_SORT_POLICY: "stateaware"})
    assert props.sort_policy == "fifo"
    assert warnings.keys == [APPLICATION_SORT_POLICY]
    assert "deprecated" in warnings.items[0][1]


def test_unknown_sort_policy_is_fifo_with_a_warning() -> None:
    props, warnings = _leaf({APPLICATION_SORT_POLICY: "random"})
    assert props.sort_policy == "fifo"
    assert warnings.keys == [APPLICATION_SORT_POLICY]
    assert "'random'" in warnings.items[0][1]


def test_sort_policy_applies_only_to_leaves() -> None:
    warnings = Warnings()
    props = parse({APPLICATION_SORT_POLICY: "fair"}, is_leaf=False, is_root=False, warn=warnings)
    assert props.sort_policy == "fifo"
    assert warnings.items == []


@pytest.mark.parametrize(
    ("value", "enabled"), [("enabled", True), ("disabled", False), ("Disabled", False), ("ENABLED", True)]
)
def test_sort_priority_values(value: str, enabled: bool) -> None:
    props, warnings = _leaf({APPLICATION_SORT_PRIORITY: value})
    assert props.sort_priority_enabled is enabled
    assert warnings.items == []


@pytest.mark.parametrize("value", ["yes", " disabled "])
def test_bad_sort_priority_is_enabled_with_a_warning(value: str) -> None:
    props, warnings = _leaf({APPLICATION_SORT_PRIORITY: value})
    assert props.sort_priority_enabled
    assert warnings.keys == [APPLICATION_SORT_PRIORITY]


# parse(): priority --------------------------------------------------------------------------------


@pytest.mark.parametrize("value", ["fence", "Fence", "FENCE"])
def test_priority_fence_is_case_insensitive(value: str) -> None:
    props, warnings = _leaf({PRIORITY_POLICY: value})
    assert props.priority_policy == "fence"
    assert props.is_priority_fence
    assert warnings.items == []


def test_priority_policy_on_a_parent_is_applied() -> None:
    props = parse({PRIORITY_POLICY: "fence"}, is_leaf=False, is_root=False)
    assert props.is_priority_fence


@pytest.mark.parametrize("value", ["strict", " fence "])
def test_bad_priority_policy_is_default_with_a_warning(value: str) -> None:
    props, warnings = _leaf({PRIORITY_POLICY: value})
    assert props.priority_policy == "default"
    assert not props.is_priority_fence
    assert warnings.keys == [PRIORITY_POLICY]


@pytest.mark.parametrize(
    ("value", "offset"),
    [("10", 10), ("-10", -10), ("+5", 5), ("010", 10), ("-0", 0), ("999999999", 999_999_999)],
)
def test_priority_offset_base_10(value: str, offset: int) -> None:
    props, warnings = _leaf({PRIORITY_OFFSET: value})
    assert props.priority_offset == offset
    assert warnings.items == []


@pytest.mark.parametrize("value", ["abc", "1.5", "0x10", "1e3", "10 20", " 42 ", ""])
def test_unparsable_priority_offset_is_zero_with_a_warning(value: str) -> None:
    props, warnings = _leaf({PRIORITY_OFFSET: value})
    assert props.priority_offset == 0
    assert warnings.keys == [PRIORITY_OFFSET]


@pytest.mark.parametrize("value", ["2147483648", "-2147483649", "99999999999"])
def test_priority_offset_outside_int32_is_zero_with_a_warning(value: str) -> None:
    props, warnings = _leaf({PRIORITY_OFFSET: value})
    assert props.priority_offset == 0
    assert warnings.keys == [PRIORITY_OFFSET]
    assert "32-bit" in warnings.items[0][1]


@pytest.mark.parametrize(
    ("value", "offset"),
    [("1000000000", 1_000_000_000), ("-1000000000", -1_000_000_000), ("2147483647", 2**31 - 1)],
)
def test_large_priority_offset_warns_but_is_kept(value: str, offset: int) -> None:
    props, warnings = _leaf({PRIORITY_OFFSET: value})
    assert props.priority_offset == offset
    assert warnings.keys == [PRIORITY_OFFSET]
    assert "system-critical" in warnings.items[0][1]


def test_priority_offset_at_the_warning_limit_is_silent() -> None:
    props, warnings = _leaf({PRIORITY_OFFSET: "-999999999"})
    assert props.priority_offset == -999_999_999
    assert warnings.items == []


# parse(): preemption ------------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("value", "policy"),
    [("default", "default"), ("fence", "fence"), ("disabled", "disabled"), ("Disabled", "disabled")],
)
def test_preemption_policy_values(value: str, policy: str) -> None:
    props, warnings = _leaf({PREEMPTION_POLICY: value})
    assert props.preemption_policy == policy
    assert warnings.items == []


def test_bad_preemption_policy_is_default_with_a_warning() -> None:
    props, warnings = _leaf({PREEMPTION_POLICY: "never"})
    assert props.preemption_policy == "default"
    assert warnings.keys == [PREEMPTION_POLICY]


@pytest.mark.parametrize(
    ("value", "seconds"),
    [("30s", 30.0), ("1m30s", 90.0), ("500ms", 0.5), ("2h", 7200.0), ("1.5s", 1.5), ("+1m", 60.0)],
)
def test_preemption_delay_durations(value: str, seconds: float) -> None:
    props, warnings = _leaf({PREEMPTION_DELAY: value})
    assert props.preemption_delay == pytest.approx(seconds)
    assert warnings.items == []


@pytest.mark.parametrize("value", ["0", "0s", "-5s"])
def test_preemption_delay_zero_or_negative_is_the_default_with_a_warning(value: str) -> None:
    props, warnings = _leaf({PREEMPTION_DELAY: value})
    assert props.preemption_delay == 30.0
    assert warnings.keys == [PREEMPTION_DELAY]
    assert "positive" in warnings.items[0][1]


@pytest.mark.parametrize(
    "value", ["soon", "30x", "1m30", "s", "nan", "inf", "Infinity", "1e3", "1_000", "+-5s", " 30s", "-10"]
)
def test_preemption_delay_not_a_duration_is_the_default_with_a_warning(value: str) -> None:
    props, warnings = _leaf({PREEMPTION_DELAY: value})
    assert props.preemption_delay == 30.0
    assert warnings.keys == [PREEMPTION_DELAY]


@pytest.mark.parametrize("value", ["45", "1.5"])
def test_a_number_without_unit_is_no_duration_as_in_yunikorn(value: str) -> None:
    props, warnings = _leaf({PREEMPTION_DELAY: value})
    assert props.preemption_delay == 30.0
    assert "a number needs a unit" in warnings.items[0][1]


def test_quota_preemption_delay_default_is_zero() -> None:
    props, _ = _leaf({})
    assert props.quota_preemption_delay == 0.0


@pytest.mark.parametrize("value", ["0", "0s"])
def test_quota_preemption_delay_zero_is_allowed_silently(value: str) -> None:
    props, warnings = _leaf({QUOTA_PREEMPTION_DELAY: value})
    assert props.quota_preemption_delay == 0.0
    assert warnings.items == []


@pytest.mark.parametrize(("value", "seconds"), [("2m", 120.0), ("90s", 90.0), ("1h1s", 3601.0)])
def test_quota_preemption_delay_values(value: str, seconds: float) -> None:
    props, warnings = _leaf({QUOTA_PREEMPTION_DELAY: value})
    assert props.quota_preemption_delay == seconds
    assert warnings.items == []


@pytest.mark.parametrize("value", ["-1m", "later", "nan", "inf", "90"])
def test_bad_quota_preemption_delay_is_zero_with_a_warning(value: str) -> None:
    props, warnings = _leaf({QUOTA_PREEMPTION_DELAY: value})
    assert props.quota_preemption_delay == 0.0
    assert warnings.keys == [QUOTA_PREEMPTION_DELAY]


# parse(): root ------------------------------------------------------------------------------------


def test_priority_and_preemption_on_root_have_no_effect_and_each_says_so() -> None:
    warnings = Warnings()
    valid = parse(
        {PRIORITY_POLICY: "fence", PRIORITY_OFFSET: "100", PREEMPTION_POLICY: "fence"},
        is_leaf=False,
        is_root=True,
        warn=warnings,
    )
    invalid = parse(
        {PRIORITY_POLICY: "strict", PRIORITY_OFFSET: "lots", PREEMPTION_POLICY: "never"},
        is_leaf=False,
        is_root=True,
        warn=warnings,
    )
    for props in (valid, invalid):
        assert props.priority_policy == "default"
        assert props.priority_offset == 0
        assert props.preemption_policy == "default"
    inert = "has no effect on root (root has no siblings to be ordered against, and the queues below do not "
    inert += "inherit it); set it on the queues it should apply to"
    fence = "fence has no effect on root (nothing is outside it); only disabled applies there, inherited by "
    fence += "every queue"
    assert warnings.items == [
        (PRIORITY_POLICY, inert), (PRIORITY_OFFSET, inert), (PREEMPTION_POLICY, fence),
        # A bad value is named as bad; the priority ones have no effect whatever they hold.
        (PRIORITY_POLICY, inert), (PRIORITY_OFFSET, inert),
        (PREEMPTION_POLICY, "unknown value 'never'; using default (expected one of default, fence, "
                            "disabled)"),
    ]  # fmt: skip


def test_root_properties_its_queues_inherit_warn_on_bad_values() -> None:
    warnings = Warnings()
    parse(
        {APPLICATION_SORT_POLICY: "bogus", PREEMPTION_DELAY: "soon"},
        is_leaf=True,
        is_root=True,
        warn=warnings,
    )
    assert [key for key, _ in warnings.items] == [APPLICATION_SORT_POLICY, PREEMPTION_DELAY]


# Warnings from load_config ------------------------------------------------------------------------

CONFIG = """
partitions:
  - name: default
    queues:
      - name: root
        submitacl: "*"
        properties:
          priority.offset: "lots"
          preemption.policy: "never"
        queues:
          - name: team
            properties:
              quota.preemption.delay: "later"
            queues:
              - name: web
                properties:
                  application.sort.policy: "random"
                  priority.offset: "12"
              - name: batch
                properties:
                  preemption.delay: "0"
"""


def test_load_warnings_name_the_path_and_line_of_the_bad_property() -> None:
    warnings = load_config(CONFIG).warnings
    found = {(w.path, w.line) for w in warnings}
    team = "partitions[0].queues[0].queues[0]"
    assert found == {
        ("partitions[0].queues[0].properties.priority.offset", 8),  # no effect on root
        ("partitions[0].queues[0].properties.preemption.policy", 9),  # not a policy
        (f"{team}.properties.quota.preemption.delay", 13),
        (f"{team}.queues[0].properties.application.sort.policy", 17),
        (f"{team}.queues[1].properties.preemption.delay", 21),
    }
    by_path = {w.path: w.message for w in warnings}
    assert by_path[f"{team}.queues[0].properties.application.sort.policy"].startswith(
        "application.sort.policy: unknown value 'random'"
    )
    assert "(line 21)" in str(next(w for w in warnings if w.line == 21))


def test_an_inherited_bad_value_is_reported_once_where_it_is_written() -> None:
    # team's quota.preemption.delay reaches both leaves; only team's entry is reported.
    warnings = [w for w in load_config(CONFIG).warnings if "quota.preemption.delay" in w.path]
    assert len(warnings) == 1
    assert warnings[0].path == "partitions[0].queues[0].queues[0].properties.quota.preemption.delay"


def test_priority_and_preemption_values_on_root_are_reported_as_what_they_are() -> None:
    on_root = [
        w.message for w in load_config(CONFIG).warnings if w.path.startswith("partitions[0].queues[0].prop")
    ]
    assert on_root == [
        "priority.offset: has no effect on root (root has no siblings to be ordered against, and the queues "
        "below do not inherit it); set it on the queues it should apply to",
        "preemption.policy: unknown value 'never'; using default (expected one of default, fence, disabled)",
    ]


def test_a_valid_configuration_has_no_property_warnings() -> None:
    fixes = {
        '          priority.offset: "lots"\n': "",
        '"never"': "disabled",
        '"later"': '"1m"',
        '"random"': "fair",
        '"0"': '"30s"',
    }
    text = CONFIG
    for bad, good in fixes.items():
        assert text.count(bad) == 1
        text = text.replace(bad, good)
    assert load_config(text).warnings == ()


def test_a_bad_leaf_only_value_written_on_a_parent_is_reported_there() -> None:
    text = """
partitions:
  - name: default
    queues:
      - name: root
        submitacl: "*"
        queues:
          - name: team
            properties:
              application.sort.policy: "random"
            queues:
              - name: web
              - name: batch
"""
    warnings = load_config(text).warnings
    assert [(w.path, w.line) for w in warnings] == [
        ("partitions[0].queues[0].queues[0].properties.application.sort.policy", 10)
    ]
