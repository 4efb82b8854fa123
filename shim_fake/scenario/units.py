"""Quantities the way people read them: memory in Gi/Mi, vcore in cores."""

from __future__ import annotations

GiB = 1024**3
MiB = 1024**2


def fmt_quantity(resource: str, value: float | None) -> str:
    if value is None:
        return "-"
    if resource == "memory":
        if value == 0 or abs(value) >= GiB / 10:
            return f"{value / GiB:.1f}Gi"
        return f"{value / MiB:.0f}Mi"
    if resource == "vcore":
        return f"{round(value / 1000, 2):g}"
    return f"{value:g}"
