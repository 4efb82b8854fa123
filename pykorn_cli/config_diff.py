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

from core.config.diff import config_changes
from core.config.loader import ConfigError, load_config
from core.config.schema import SchedulerConfig
from core.quantity_text import resource_text
from core.server.addresses import split_host_port
from pykorn_cli.configmap_dump import DumpError, queues_text
from pykorn_cli.errors import FAILED, UNREACHABLE, CliError
from pykorn_cli.files import read_text
from rmclient.reachability import unreachable_reason
from si.v1 import si_pb2

if TYPE_CHECKING:
    from rmclient.tls import ClientTLS


def diff_files(
    old_path: Path, new_path: Path, core: str | None, rm_id: str, out: TextIO, tls: ClientTLS | None = None
) -> int:
    old = _parse(old_path, _text(old_path, out))
    new_text = _text(new_path, out)
    new = _parse(new_path, new_text)
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

    not_there = f"is `pykorn core` running there? (--core is its gRPC address, {DEFAULT_CORE} by default)"
    _refuse_if_nothing_listens(core, not_there)
    try:
        response = asyncio.run(ask())
    except TimeoutError:
        raise CliError(f"no pykorn core answered at {core} in time: {not_there}", UNREACHABLE) from None
    except grpc.aio.AioRpcError as exc:
        if exc.code() in (grpc.StatusCode.UNIMPLEMENTED, grpc.StatusCode.UNAVAILABLE):
            # Something listens there but does not speak si.v1 (a REST port, another gRPC server).
            raise CliError(
                f"{core} does not answer as a pykorn core ({exc.code().name}): {not_there}",
                UNREACHABLE,
            ) from None
        # Refused (a certificate for another rmID, say).
        raise CliError(
            f"the core at {core} refused the preview: {exc.code().name}: {exc.details()}", FAILED
        ) from None
    return write_preview(response, out)


DEFAULT_CORE = "127.0.0.1:3333"


def _refuse_if_nothing_listens(core: str, not_there: str) -> None:
    """At once, where gRPC would keep trying to connect until its timeout: an address that is not
    HOST:PORT, or one where nothing listens."""
    try:
        split_host_port(core)
    except ValueError as exc:
        raise CliError(f"--core {exc}") from None
    reason = unreachable_reason(core)
    if reason is not None:
        raise CliError(f"cannot connect to {core}: {reason}: {not_there}", UNREACHABLE)


def _text(path: Path, out: TextIO) -> str:
    """The queues.yaml `path` holds (inside a ConfigMap dump too: said on `out`)."""
    try:
        text, note = queues_text(read_text(path))
    except DumpError as exc:
        raise CliError(f"{path}: {exc}", FAILED) from None
    if note:
        out.write(f"{path}: {note}\n")
    return text


def _parse(path: Path, text: str) -> SchedulerConfig:
    try:
        return load_config(text).config
    except ConfigError as exc:
        raise CliError(f"{path} is not a valid configuration: {exc}", FAILED) from None


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
        out.write(f"  [{q.partitionName}] {q.queue}: over its new max by {resource_text(target)}; {when}\n")
        if q.willRun:
            out.write(f"    takes {resource_text(achievable)} with {len(q.victims)} allocation(s)\n")
        if q.reason:
            out.write(f"    note: {q.reason}\n")
        for v in q.victims:
            resource = {k: r.value for k, r in v.resource.resources.items()}
            where = f"{v.applicationID}/{v.allocationKey} on {v.nodeID} in {v.queue}"
            out.write(f"    - {where}: {resource_text(resource)}\n")
    return 0
