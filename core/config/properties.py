"""Queue properties: inheritance and parsing as YuniKorn does them.

A queue's effective properties are its parent's effective properties, filtered, overlaid with its own.
The filter resets what must not flow down: `priority.policy` (a child is never fenced by its parent's
setting), `priority.offset` (offsets add up along the path, so a child starts at 0), and
`preemption.policy` (only `disabled` propagates). A value that does not parse falls back to the
default with a warning; it never makes a configuration invalid.
"""

from __future__ import annotations

import re
from collections.abc import Callable, Mapping
from dataclasses import dataclass

from si.v1.durations import go_duration

APPLICATION_SORT_POLICY = "application.sort.policy"
APPLICATION_SORT_PRIORITY = "application.sort.priority"
PRIORITY_POLICY = "priority.policy"
PRIORITY_OFFSET = "priority.offset"
PREEMPTION_POLICY = "preemption.policy"
PREEMPTION_DELAY = "preemption.delay"
QUOTA_PREEMPTION_DELAY = "quota.preemption.delay"
# YuniKorn's unschedulable-ask backoff: an application whose asks no node takes, this many in one
# attempt, is not tried again for the delay (0: never backs off).
UNSCHED_BACKOFF = "application.unschedasks.backoff"
UNSCHED_BACKOFF_DELAY = "application.unschedasks.backoff.delay"

# YuniKorn's properties pykorn does not act on: accepted, with a warning that says so.
NOT_IMPLEMENTED: dict[str, str] = {}
KNOWN = frozenset(
    {
        "application.sort.policy",
        "application.sort.priority",
        "priority.policy",
        "priority.offset",
        "preemption.policy",
        "preemption.delay",
        "quota.preemption.delay",
        UNSCHED_BACKOFF,
        UNSCHED_BACKOFF_DELAY,
    }
)

SORT_FIFO = "fifo"
SORT_FAIR = "fair"
PRIORITY_DEFAULT = "default"
PRIORITY_FENCE = "fence"
PREEMPTION_DEFAULT = "default"
PREEMPTION_FENCE = "fence"
PREEMPTION_DISABLED = "disabled"

DEFAULT_PREEMPTION_DELAY = 30.0
DEFAULT_QUOTA_PREEMPTION_DELAY = 0.0
DEFAULT_UNSCHED_BACKOFF_DELAY = 30.0  # YuniKorn's
UINT64_MAX = 2**64 - 1
INT32_MIN, INT32_MAX = -(2**31), 2**31 - 1
# An offset beyond this can lift a queue above Kubernetes' system-critical priorities (2,000,000,000).
OFFSET_WARNING_LIMIT = 999_999_999

Warn = Callable[[str, str], None]  # (property key, message)


@dataclass(frozen=True)
class QueueProperties:
    sort_policy: str = SORT_FIFO
    sort_priority_enabled: bool = True
    priority_policy: str = PRIORITY_DEFAULT
    priority_offset: int = 0
    preemption_policy: str = PREEMPTION_DEFAULT
    preemption_delay: float = DEFAULT_PREEMPTION_DELAY
    quota_preemption_delay: float = DEFAULT_QUOTA_PREEMPTION_DELAY
    unsched_backoff: int = 0  # unschedulable asks in one attempt before the application backs off
    unsched_backoff_delay: float = DEFAULT_UNSCHED_BACKOFF_DELAY

    @property
    def is_priority_fence(self) -> bool:
        return self.priority_policy == PRIORITY_FENCE


def inherit(parent_effective: Mapping[str, str] | None, own: Mapping[str, str]) -> dict[str, str]:
    """The effective raw properties of a queue from its parent's effective ones and its own."""
    merged: dict[str, str] = {}
    for key, value in (parent_effective or {}).items():
        merged[key] = _filter_inherited(key, value)
    merged.update(own)
    return merged


def _filter_inherited(key: str, value: str) -> str:
    if key == PRIORITY_POLICY:
        return PRIORITY_DEFAULT
    if key == PRIORITY_OFFSET:
        return "0"
    if key == PREEMPTION_POLICY and value.lower() != PREEMPTION_DISABLED:
        return PREEMPTION_DEFAULT
    return value


def parse(raw: Mapping[str, str], is_leaf: bool, is_root: bool, warn: Warn | None = None) -> QueueProperties:
    """Turn effective raw properties into typed values; bad values warn and take the default.

    On root, the priority settings have no effect (root has no siblings, and its children do not
    inherit them) and neither does a preemption fence: each is reported as such. The others on root
    are inherited by the queues below, so a bad value there is reported as anywhere else.
    """

    def report(key: str, message: str) -> None:
        if warn is not None:
            warn(key, message)

    if is_root:
        _report_inert_on_root(raw, report)

    sort_policy = SORT_FIFO
    if APPLICATION_SORT_POLICY in raw and is_leaf:
        sort_policy = _sort_policy(raw[APPLICATION_SORT_POLICY], report)
    sort_priority = True
    if APPLICATION_SORT_PRIORITY in raw:
        sort_priority = _sort_priority(raw[APPLICATION_SORT_PRIORITY], report)
    priority_policy = PRIORITY_DEFAULT
    priority_offset = 0
    preemption_policy = PREEMPTION_DEFAULT
    if not is_root:
        if PRIORITY_POLICY in raw:
            priority_policy = _choice(
                raw[PRIORITY_POLICY], PRIORITY_POLICY, (PRIORITY_DEFAULT, PRIORITY_FENCE), report
            )
        if PRIORITY_OFFSET in raw:
            priority_offset = _offset(raw[PRIORITY_OFFSET], report)
        if PREEMPTION_POLICY in raw:
            preemption_policy = _choice(
                raw[PREEMPTION_POLICY],
                PREEMPTION_POLICY,
                (PREEMPTION_DEFAULT, PREEMPTION_FENCE, PREEMPTION_DISABLED),
                report,
            )
    preemption_delay = DEFAULT_PREEMPTION_DELAY
    if PREEMPTION_DELAY in raw and is_leaf:
        preemption_delay = _delay(raw[PREEMPTION_DELAY], PREEMPTION_DELAY, DEFAULT_PREEMPTION_DELAY, report)
    quota_delay = DEFAULT_QUOTA_PREEMPTION_DELAY
    if QUOTA_PREEMPTION_DELAY in raw:
        quota_delay = _delay(
            raw[QUOTA_PREEMPTION_DELAY],
            QUOTA_PREEMPTION_DELAY,
            DEFAULT_QUOTA_PREEMPTION_DELAY,
            report,
            allow_zero=True,
        )
    backoff = 0
    if UNSCHED_BACKOFF in raw and is_leaf:
        backoff = _count(raw[UNSCHED_BACKOFF], UNSCHED_BACKOFF, report)
    backoff_delay = DEFAULT_UNSCHED_BACKOFF_DELAY
    if UNSCHED_BACKOFF_DELAY in raw and is_leaf:
        backoff_delay = _delay(
            raw[UNSCHED_BACKOFF_DELAY], UNSCHED_BACKOFF_DELAY, DEFAULT_UNSCHED_BACKOFF_DELAY, report
        )
    return QueueProperties(
        sort_policy=sort_policy,
        sort_priority_enabled=sort_priority,
        priority_policy=priority_policy,
        priority_offset=priority_offset,
        preemption_policy=preemption_policy,
        preemption_delay=preemption_delay,
        quota_preemption_delay=quota_delay,
        unsched_backoff=backoff,
        unsched_backoff_delay=backoff_delay,
    )


def _report_inert_on_root(raw: Mapping[str, str], report: Warn) -> None:
    for key in (PRIORITY_POLICY, PRIORITY_OFFSET):
        if key in raw:
            report(key, "has no effect on root (root has no siblings to be ordered against, and the queues "
                   "below do not inherit it); set it on the queues it should apply to")  # fmt: skip
    if PREEMPTION_POLICY in raw:
        allowed = (PREEMPTION_DEFAULT, PREEMPTION_FENCE, PREEMPTION_DISABLED)
        policy = _choice(raw[PREEMPTION_POLICY], PREEMPTION_POLICY, allowed, report)
        if policy == PREEMPTION_FENCE:
            report(PREEMPTION_POLICY, "fence has no effect on root (nothing is outside it); only disabled "
                   "applies there, inherited by every queue")  # fmt: skip


# The values below are read exactly as YuniKorn's queue reads them (pkg/scheduler/objects/queue.go):
# no surrounding space is taken off; the sort policy is compared as written, the priority and
# preemption policies and the sort priority in any case; a count is Go's ParseUint (no sign), an
# offset its ParseInt (a sign allowed), a delay its time.ParseDuration (a unit required).


def _count(value: str, key: str, report: Warn) -> int:
    """A whole number of 0 or more (YuniKorn's uint64); 0 with a warning otherwise."""
    if not re.fullmatch(r"[0-9]+", value) or len(value) > 21 or int(value) > UINT64_MAX:
        report(key, f"{value!r} is not a whole number from 0 to {UINT64_MAX}; using 0 (no backoff)")
        return 0
    return int(value)


def _sort_policy(value: str, report: Warn) -> str:
    if value in ("", SORT_FIFO):
        return SORT_FIFO
    if value == SORT_FAIR:
        return SORT_FAIR
    if value == "stateaware":
        report(APPLICATION_SORT_POLICY, "stateaware is deprecated and now means fifo; set fifo instead")
        return SORT_FIFO
    report(
        APPLICATION_SORT_POLICY,
        f"unknown value {value!r}; using fifo (expected fifo or fair, in lower case: YuniKorn compares "
        "them as written)",
    )
    return SORT_FIFO


def _sort_priority(value: str, report: Warn) -> bool:
    lowered = value.lower()
    if lowered == "enabled":
        return True
    if lowered == "disabled":
        return False
    report(
        APPLICATION_SORT_PRIORITY, f"unknown value {value!r}; using enabled (expected enabled or disabled)"
    )
    return True


def _choice(value: str, key: str, allowed: tuple[str, ...], report: Warn) -> str:
    lowered = value.lower()
    if lowered == "":
        return allowed[0]
    if lowered in allowed:
        return lowered
    report(key, f"unknown value {value!r}; using {allowed[0]} (expected one of {', '.join(allowed)})")
    return allowed[0]


def _offset(value: str, report: Warn) -> int:
    text = value
    if not re.fullmatch(r"[+-]?[0-9]+", text):
        report(PRIORITY_OFFSET, f"{value!r} is not a base-10 integer; using 0")
        return 0
    number = int(text) if len(text) <= 20 else INT32_MAX + 1  # int() refuses over 4,300 digits
    if not INT32_MIN <= number <= INT32_MAX:
        report(PRIORITY_OFFSET, f"{value!r} is outside the 32-bit integer range; using 0")
        return 0
    if abs(number) > OFFSET_WARNING_LIMIT:
        report(
            PRIORITY_OFFSET,
            f"offset {number} is beyond ±{OFFSET_WARNING_LIMIT:,}: it can outrank system-critical priorities",
        )
    return number


_PLAIN_SECONDS = re.compile(r"[+-]?(?:[0-9]+(?:\.[0-9]*)?|\.[0-9]+)")


def parse_duration(text: str) -> float | None:
    """Seconds from a plain number of seconds (the command's flags) or a Go duration ("30s", "1m30s")."""
    text = text.strip()
    if not text:
        return None
    # A plain decimal number of seconds; float() alone would also take "nan", "inf", "1e3" and "1_0".
    if _PLAIN_SECONDS.fullmatch(text):
        return float(text)
    return go_duration(text)


def _delay(value: str, key: str, default: float, report: Warn, allow_zero: bool = False) -> float:
    # quota.preemption.delay 0 is meaningful (no quota preemption); preemption.delay 0 is not.
    seconds = go_duration(value)
    if seconds is None:
        hint = (
            " (a number needs a unit, as YuniKorn reads it: 30s, not 30)"
            if _PLAIN_SECONDS.fullmatch(value)
            else ""
        )
        report(key, f"{value!r} is not a duration (examples: 30s, 1m30s, 500ms){hint}; using {default:g}s")
        return default
    if seconds == 0 and allow_zero:
        return 0.0
    if seconds <= 0:
        report(key, f"{value!r} must be a positive duration; using {default:g}s")
        return default
    return seconds
