"""What changes between two configurations, per queue: guaranteed, max, quota preemption delay,
queues added or removed (for `pykorn config diff`, whose core query lives in pykorn_cli/config_diff.py)."""

from __future__ import annotations

from core.config import properties
from core.config.schema import QueueConfig, SchedulerConfig
from core.quantity_text import resource_text


def _queues(config: SchedulerConfig) -> dict[tuple[str, str], tuple[QueueConfig, float]]:
    out: dict[tuple[str, str], tuple[QueueConfig, float]] = {}
    for part in config.partitions:

        def walk(
            cfg: QueueConfig, name: str, parent: dict[str, str] | None, part_name: str = part.name
        ) -> None:
            effective = properties.inherit(parent, cfg.property_map())
            delay = properties.parse(effective, is_leaf=not cfg.is_parent, is_root=parent is None)
            out[(part_name, name)] = (cfg, delay.quota_preemption_delay)
            for child in cfg.queues:
                walk(child, f"{name}.{child.name}", effective)

        walk(part.root, "root", None)
    return out


def config_changes(old: SchedulerConfig, new: SchedulerConfig) -> list[str]:
    before, after = _queues(old), _queues(new)
    lines = []
    for key in sorted(before.keys() | after.keys()):
        part, name = key
        where = f"[{part}] {name}"
        if key not in after:
            lines.append(f"{where}: removed (drains: running applications stay, new ones are refused)")
            continue
        if key not in before:
            lines.append(f"{where}: added")
            continue
        (old_cfg, old_delay), (new_cfg, new_delay) = before[key], after[key]
        if old_cfg.max != new_cfg.max:
            lines.append(f"{where}: max {resource_text(old_cfg.max)} -> {resource_text(new_cfg.max)}")
        if old_cfg.guaranteed != new_cfg.guaranteed:
            old_g, new_g = resource_text(old_cfg.guaranteed), resource_text(new_cfg.guaranteed)
            lines.append(f"{where}: guaranteed {old_g} -> {new_g}")
        if old_delay != new_delay:
            lines.append(f"{where}: quota.preemption.delay {old_delay:g}s -> {new_delay:g}s")
    return lines
