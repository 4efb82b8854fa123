"""Limits an application's tags set on its dynamic queue, as YuniKorn's core applies them.

The Kubernetes shim reads a namespace's annotations (quota, guaranteed, maxApps) and sends them as
tags on each application of that namespace. When such an application is placed in a queue that
placement rules created (not one from the configuration), the queue takes those values: the newest
application's tags win, as upstream. A tag that cannot be read changes nothing and is reported.
"""

from __future__ import annotations

import json
from collections.abc import Mapping
from dataclasses import dataclass, field

from core.resources import Resource
from si.v1.tags import TAG_GUARANTEED, TAG_MAX_APPS, TAG_QUOTA


@dataclass
class TaggedLimits:
    max: Resource | None = None
    guaranteed: Resource | None = None
    max_applications: int = 0  # 0: the tag is absent
    problems: list[str] = field(default_factory=list)

    @property
    def any(self) -> bool:
        return self.max is not None or self.guaranteed is not None or self.max_applications > 0


def from_tags(tags: Mapping[str, str]) -> TaggedLimits:
    out = TaggedLimits()
    out.max = _resource(tags, TAG_QUOTA, out.problems)
    out.guaranteed = _resource(tags, TAG_GUARANTEED, out.problems)
    raw = tags.get(TAG_MAX_APPS, "")
    if raw:
        if raw.isdigit():
            out.max_applications = int(raw)
        else:
            out.problems.append(f"tag {TAG_MAX_APPS}: {raw!r} is not a whole number")
    return out


def _resource(tags: Mapping[str, str], tag: str, problems: list[str]) -> Resource | None:
    raw = tags.get(tag, "")
    if not raw:
        return None
    try:
        doc = json.loads(raw)
        entries = doc.get("resources") or {} if isinstance(doc, dict) else None
        if not isinstance(entries, dict):
            raise ValueError('expected {"resources": {name: {"value": n}}}')
        values = {str(name): _value(q) for name, q in entries.items()}
    except (ValueError, TypeError, AttributeError) as exc:
        problems.append(f"tag {tag}: {exc}")
        return None
    # As YuniKorn (StrictlyGreaterThanZero): none below zero and one above; a zero beside is kept.
    if any(v < 0 for v in values.values()) or not any(v > 0 for v in values.values()):
        problems.append(f"tag {tag}: no quantity may be below zero, and one must be above zero")
        return None
    return Resource(values)


def _value(quantity: object) -> int:
    value = quantity.get("value", 0) if isinstance(quantity, dict) else None
    if isinstance(value, bool) or not isinstance(value, int):
        raise ValueError(f'{quantity!r} is not {{"value": <integer>}}')
    return value
