"""An RM's registration and its configuration updates, on the cluster context.

Registering builds the RM's partitions from its configuration before anything of the old ones is
dropped, so a configuration that cannot be built leaves the RM as it was. An update is all or nothing
too: a conflict in any partition refuses it everywhere; a partition left out of it drains. A preview
says what an update would preempt, changing nothing.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

import structlog

from core.config.schema import SchedulerConfig
from core.objects.partition_key import PartitionKey
from core.placement.manager import PlacementManager
from core.scheduler.commands import RegisterRM, UpdateConfig
from core.scheduler.preemption import dry_run
from core.scheduler.preemption.dry_run import QuotaPreview
from core.scheduler.rejection import Rejection

if TYPE_CHECKING:
    from core.scheduler.cluster import ClusterContext

log = structlog.get_logger("pykorn.cluster")


def unregister(ctx: ClusterContext, rm_id: str) -> None:
    ctx.drop_rm_state(rm_id)
    ctx.configs.pop(rm_id, None)
    ctx.rm_build.pop(rm_id, None)
    ctx.warnings.forget(rm_id)
    log.info("rm removed", rmID=rm_id)
    if ctx.on_state_dropped is not None:
        ctx.on_state_dropped("no resource manager left" if not ctx.configs else "resource manager removed")


def register(ctx: ClusterContext, cmd: RegisterRM) -> None:
    # Registering again starts the RM from scratch (it re-sends its state), but only once the new
    # partitions are built: a configuration they cannot be built from leaves the RM as it was.
    now, parts = ctx.clock(), cmd.config.partitions
    built = {(k := PartitionKey(cmd.rm_id, p.name)): ctx.new_partition(k, p, now) for p in parts}
    dropped = ctx.drop_rm_state(cmd.rm_id)
    _applied(ctx, cmd.rm_id, "registered", cmd.config, cmd.who)
    ctx.configs[cmd.rm_id] = cmd.config
    ctx.rm_build[cmd.rm_id] = {**dict(cmd.build_info), "rmId": cmd.rm_id}
    ctx.partitions.update(built)
    log.info("rm registered", rmID=cmd.rm_id, partitions=[p.name for p in cmd.config.partitions])
    if dropped and ctx.on_state_dropped is not None:
        ctx.on_state_dropped("resource manager registered again")
    if cmd.reply:
        cmd.reply(None)


def update_config(ctx: ClusterContext, cmd: UpdateConfig) -> None:
    if cmd.rm_id not in ctx.configs:
        if cmd.reply:
            cmd.reply(Rejection(f"resource manager {cmd.rm_id} is not registered"))
        return
    conflicts = [
        f"partition {part_cfg.name}: {problem}"
        for part_cfg in cmd.config.partitions
        if (existing := ctx.partitions.get(PartitionKey(cmd.rm_id, part_cfg.name))) is not None
        for problem in existing.tree.conflicts(part_cfg.root)
    ]
    if conflicts:
        # All or nothing: a configuration that cannot apply everywhere applies nowhere.
        if cmd.reply:
            cmd.reply(Rejection("; ".join(conflicts)))
        return
    # What can fail is built first (new partitions, each existing one's rules), then it is applied.
    now, wanted = ctx.clock(), {PartitionKey(cmd.rm_id, p.name): p for p in cmd.config.partitions}
    built = {k: ctx.new_partition(k, p, now) for k, p in wanted.items() if k not in ctx.partitions}
    rules = {k: PlacementManager(p.placement_rules) for k, p in wanted.items() if k in ctx.partitions}
    for key, manager in rules.items():
        ctx.partitions[key].apply_config(wanted[key], now, manager)
    ctx.partitions.update(built)
    for key, part in ctx.partitions.items():
        if part.rm_id == cmd.rm_id and key not in wanted:
            # Like a removed queue: what runs there keeps running; nothing new is accepted.
            if not part.draining:
                part.state_time = ctx.clock()
            part.draining = True
    _applied(ctx, cmd.rm_id, "updated", cmd.config, cmd.who)
    ctx.configs[cmd.rm_id] = cmd.config  # what /ws/v1/config shows: the configuration in force
    log.info("configuration updated", rmID=cmd.rm_id)
    if cmd.reply:
        cmd.reply(None)


def _applied(ctx: ClusterContext, rm_id: str, change: str, config: SchedulerConfig, who: str) -> None:
    """Tell the hook about a configuration put in force (before `ctx.configs` holds it)."""
    if ctx.on_config_applied is not None:
        before = ctx.configs.get(rm_id)
        ctx.on_config_applied(rm_id, change, before.source if before is not None else "", config.source, who)


def preview(ctx: ClusterContext, rm_id: str, config: SchedulerConfig) -> list[QuotaPreview]:
    out: list[QuotaPreview] = []
    for part_cfg in config.partitions:
        part = ctx.partitions.get(PartitionKey(rm_id, part_cfg.name))
        if part is not None:
            out.extend(dry_run.preview(part, part_cfg))
    return out
