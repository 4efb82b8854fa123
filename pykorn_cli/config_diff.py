"""`pykorn config diff OLD.yaml NEW.yaml [--core HOST:PORT --rm-id RM]`.

Lists what changes between two configurations for each queue and, given a running core, what applying
NEW there now would preempt to enforce lowered maxes (rpc DryRunConfiguration): per queue and per
allocation, without changing anything.
"""

from __future__ import annotations

import asyncio
from pathlib import Path
from typing import TYPE_CHECKING, TextIO

import grpc

from core.config.diff import config_changes, fmt_resource
from core.config.loader import ConfigError, load_config
from si.v1 import si_pb2

if TYPE_CHECKING:
    from rmclient.tls import ClientTLS


def diff_files(
    old_path: Path, new_path: Path, core: str | None, rm_id: str, out: TextIO, tls: ClientTLS | None = None
) -> int:
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
    from rmclient.client import SchedulerClient

    async def ask() -> si_pb2.DryRunConfigurationResponse:
        async with SchedulerClient(core, rm_id, tls=tls) as client:
            return await client.dry_run_configuration(new_text)

    try:
        response = asyncio.run(ask())
    except grpc.aio.AioRpcError as exc:  # refused (a certificate for another rmID, say)
        out.write(f"the core at {core} refused the preview: {exc.code().name}: {exc.details()}\n")
        return 1
    return write_preview(response, out)


def write_preview(response: si_pb2.DryRunConfigurationResponse, out: TextIO) -> int:
    if not response.valid:
        out.write("the core refused the configuration:\n")
        for error in response.errors:
            out.write(f"  {error}\n")
        return 1
    queues = list(response.queues)
    if not queues:
        out.write("\napplying it now would preempt nothing: no queue uses more than its new max\n")
        return 0
    out.write("\napplying it now would preempt:\n")
    for q in queues:
        target = {k: v.value for k, v in q.target.resources.items()}
        achievable = {k: v.value for k, v in q.achievable.resources.items()}
        when = f"after {q.delaySeconds:g}s" if q.willRun else "never (it would not run)"
        out.write(f"  [{q.partitionName}] {q.queue}: over its new max by {fmt_resource(target)}; {when}\n")
        if q.willRun:
            out.write(f"    takes {fmt_resource(achievable)} with {len(q.victims)} allocation(s)\n")
        if q.reason:
            out.write(f"    note: {q.reason}\n")
        for v in q.victims:
            resource = {k: r.value for k, r in v.resource.resources.items()}
            where = f"{v.applicationID}/{v.allocationKey} on {v.nodeID} in {v.queue}"
            out.write(f"    - {where}: {fmt_resource(resource)}\n")
    return 0
