"""`pykorn config diff OLD.yaml NEW.yaml [--core HOST:PORT --rm-id RM]`.

Lists what changes between two configurations for each queue (guaranteed, max, quota preemption delay,
queues added or removed) and, given a running core, what applying NEW there now would preempt to
enforce lowered maxes: per queue and per allocation, without changing anything.
"""

from __future__ import annotations

from pathlib import Path
from typing import TextIO

from core.config import properties
from core.config.loader import ConfigError, load_config
from core.config.schema import QueueConfig, SchedulerConfig


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


def _fmt(res: object) -> str:
    if not res:
        return "-"
    return "{" + ", ".join(f"{k}: {v}" for k, v in sorted(res.items())) + "}"  # type: ignore[attr-defined]


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
            lines.append(f"{where}: max {_fmt(old_cfg.max)} -> {_fmt(new_cfg.max)}")
        if old_cfg.guaranteed != new_cfg.guaranteed:
            lines.append(f"{where}: guaranteed {_fmt(old_cfg.guaranteed)} -> {_fmt(new_cfg.guaranteed)}")
        if old_delay != new_delay:
            lines.append(f"{where}: quota.preemption.delay {old_delay:g}s -> {new_delay:g}s")
    return lines


def diff_files(old_path: Path, new_path: Path, core: str | None, rm_id: str, out: TextIO) -> int:
    try:
        old = load_config(old_path.read_text()).config
        new_text = new_path.read_text()
        new = load_config(new_text).config
    except ConfigError as exc:
        out.write(f"invalid configuration: {exc}\n")
        return 1
    except OSError as exc:
        out.write(f"cannot read: {exc}\n")
        return 2
    changes = config_changes(old, new)
    out.write(f"{len(changes)} change(s) from {old_path} to {new_path}:\n")
    for line in changes:
        out.write(f"  {line}\n")
    if core is None:
        return 0
    import asyncio

    from shim_fake.client import SchedulerClient

    async def ask() -> object:
        async with SchedulerClient(core, rm_id) as client:
            return await client.dry_run_configuration(new_text)

    response = asyncio.run(ask())
    return write_preview(response, out)


def write_preview(response: object, out: TextIO) -> int:
    if not response.valid:  # type: ignore[attr-defined]
        out.write("the core refused the configuration:\n")
        for error in response.errors:  # type: ignore[attr-defined]
            out.write(f"  {error}\n")
        return 1
    queues = list(response.queues)  # type: ignore[attr-defined]
    if not queues:
        out.write("\napplying it now would preempt nothing: no queue uses more than its new max\n")
        return 0
    out.write("\napplying it now would preempt:\n")
    for q in queues:
        target = {k: v.value for k, v in q.target.resources.items()}
        achievable = {k: v.value for k, v in q.achievable.resources.items()}
        when = f"after {q.delaySeconds:g}s" if q.willRun else "never (it would not run)"
        out.write(f"  [{q.partitionName}] {q.queue}: over its new max by {_fmt(target)}; {when}\n")
        if q.willRun:
            out.write(f"    takes {_fmt(achievable)} with {len(q.victims)} allocation(s)\n")
        if q.reason:
            out.write(f"    note: {q.reason}\n")
        for v in q.victims:
            resource = {k: r.value for k, r in v.resource.resources.items()}
            out.write(
                f"    - {v.applicationID}/{v.allocationKey} on {v.nodeID} in {v.queue}: {_fmt(resource)}\n"
            )
    return 0
