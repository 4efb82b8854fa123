"""`pykorn config validate`: errors with path and line, or the effective queue tree."""

from __future__ import annotations

from collections.abc import Callable
from pathlib import Path
from typing import TextIO

from core.config.loader import ConfigError, load_config
from core.config.schema import LimitConfig, QueueConfig
from core.quantity_text import resource_text

Unwrap = Callable[[str], tuple[str, str | None]]


def validate_file(path: Path, out: TextIO, unwrap: Unwrap | None = None) -> int:
    """`validate_text` of the file's text, or 2 when it cannot be read (said on `out`)."""
    try:
        text = path.read_text()
    except OSError as exc:
        out.write(f"{path}: cannot read: {exc.strerror}\n")
        return 2
    except UnicodeDecodeError as exc:
        out.write(f"{path}: cannot read: not UTF-8 text (byte {exc.start})\n")
        return 2
    return validate_text(path, text, out, unwrap)


def validate_text(path: Path, text: str, out: TextIO, unwrap: Unwrap | None = None) -> int:
    """0 and the effective queue tree, or 1 and the problems, each line naming `path`. `unwrap`: the
    queues.yaml inside what the file holds, and a note saying where it was found (a ValueError when
    there is none: said, and the file is invalid)."""
    if unwrap is not None:
        try:
            text, note = unwrap(text)
        except ValueError as exc:
            out.write(f"{path}: {exc}\n")
            return 1
        if note:
            out.write(f"{path}: {note}\n")
    try:
        loaded = load_config(text)
    except ConfigError as exc:
        out.write(f"{path}: invalid configuration ({len(exc.problems)} problem(s))\n")
        for problem in exc.problems:
            out.write(f"  {problem}\n")
        return 1
    for warning in loaded.warnings:
        out.write(f"warning: {warning}\n")
    for part in loaded.config.partitions:
        out.write(f"partition {part.name} (nodesortpolicy {part.node_sort_policy.type})\n")
        _write_queue(part.root, "  ", out)
    return 0


def _write_queue(queue: QueueConfig, indent: str, out: TextIO) -> None:
    kind = "parent" if queue.is_parent else "leaf"
    details = [kind]
    if queue.guaranteed:
        details.append(f"guaranteed {resource_text(queue.guaranteed)}")
    if queue.max:
        details.append(f"max {resource_text(queue.max)}")
    if queue.max_applications:
        details.append(f"maxapplications {queue.max_applications}")
    if queue.properties:
        details.append("properties " + ", ".join(f"{k}={v}" for k, v in queue.properties))
    out.write(f"{indent}{queue.name}: {'; '.join(details)}\n")
    for limit in queue.limits:
        out.write(f"{indent}  limits: {_limit_text(limit)}\n")
    for child in queue.queues:
        _write_queue(child, indent + "  ", out)


def _limit_text(limit: LimitConfig) -> str:
    whom = []
    if limit.users:
        whom.append("users " + ", ".join(limit.users))
    if limit.groups:
        whom.append("groups " + ", ".join(limit.groups))
    what = []
    if limit.max_resources is not None:
        what.append(f"maxresources {resource_text(limit.max_resources)}")
    if limit.max_applications:
        what.append(f"maxapplications {limit.max_applications}")
    return f"{', '.join(whom)} -> {', '.join(what)}"
