"""The gang an application asks for, read from what its RM sent with it."""

from __future__ import annotations

from collections.abc import Callable

from core.objects.gang import Gang, GangStyle, placeholder_timeout
from core.resources import Resource
from core.scheduler.commands import AppAdd
from si.v1.tags import TAG_APP_CREATION_TIME


def gang_of(add: AppAdd, now: float, warn: Callable[[str], None]) -> Gang | None:
    """The gang an application asks for (placeholderAsk, gangSchedulingStyle, the timeout), or None."""
    said = add.gang_style is not None or add.unknown_gang_style
    if add.placeholder_ask is None and not said and add.placeholder_timeout_ms <= 0:
        return None
    if add.unknown_gang_style:
        warn(f"unknown gangSchedulingStyle {add.unknown_gang_style!r}: Soft used (Soft or Hard)")
    style = add.gang_style or GangStyle.SOFT
    created = _tag_seconds(add.tags.get(TAG_APP_CREATION_TIME, ""))
    timeout = placeholder_timeout(add.placeholder_timeout_ms, created, now)
    return Gang(add.placeholder_ask or Resource(), style, timeout)


def _tag_seconds(raw: str) -> float:
    try:
        value = int(raw)
    except ValueError:
        return 0.0
    return float(value) if value > 0 else 0.0
