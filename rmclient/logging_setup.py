"""structlog configuration: one JSON object per line, or a readable console line on a terminal.

With `live=True` (the Kubernetes shim) levels can change while running: a default, and levels for
logger-name prefixes (`set_live_levels`), as YuniKorn's `log.level` and `log.<subsystem>.level`. Every
call then reaches a filter that reads the current table; without it the level is fixed at start and
calls below it cost nothing (the core's default).
"""

from __future__ import annotations

import logging
import sys
from collections.abc import Mapping
from typing import Any, TextIO

import structlog

_LEVELS = {"debug": logging.DEBUG, "info": logging.INFO, "warning": logging.WARNING, "warn": logging.WARNING,
           "error": logging.ERROR, "critical": logging.CRITICAL, "exception": logging.ERROR}  # fmt: skip


class LiveLevels:
    """The level for each logger name: the longest configured prefix's, else the default."""

    def __init__(self, default: int = logging.INFO) -> None:
        self.default = default
        self.by_prefix: dict[str, int] = {}
        self._cache: dict[str, int] = {}
        self.floor = default  # the lowest level any logger name takes now

    def set(self, default: int, by_prefix: Mapping[str, int]) -> None:
        self.default, self.by_prefix, self._cache = default, dict(by_prefix), {}
        self.floor = min([default, *self.by_prefix.values()])

    def threshold(self, name: str) -> int:
        found = self._cache.get(name)
        if found is None:
            matches = [p for p in self.by_prefix if name == p or name.startswith(p + ".")]
            found = self.by_prefix[max(matches, key=len)] if matches else self.default
            self._cache[name] = found
        return found


LIVE = LiveLevels()


def level_number(name: str) -> int | None:
    return _LEVELS.get(name.strip().lower())


def set_live_levels(default: int, by_prefix: Mapping[str, int]) -> None:
    LIVE.set(default, by_prefix)


class _NamedPrintLogger(structlog.PrintLogger):
    def __init__(self, file: TextIO, name: str) -> None:
        super().__init__(file)
        self.name = name


def _named_factory(*args: Any) -> _NamedPrintLogger:
    return _NamedPrintLogger(sys.stderr, str(args[0]) if args else "")


def _live_filter(logger: Any, method: str, event: structlog.types.EventDict) -> structlog.types.EventDict:
    if _LEVELS.get(method, logging.INFO) < LIVE.threshold(getattr(logger, "name", "")):
        raise structlog.DropEvent
    return event


_ALL_LEVELS: Any = structlog.make_filtering_bound_logger(logging.DEBUG)


class _LiveBoundLogger(_ALL_LEVELS):  # type: ignore[misc]  # a class structlog makes at run time
    """Every level reaches `_live_filter`, except the calls no logger name takes now: a debug or info
    call below every configured level returns at once, as a fixed level's would (the core and the
    shim make such calls on every pod; the processor chain costs microseconds each)."""

    def debug(self, event: str, *args: Any, **kw: Any) -> Any:
        if LIVE.floor > logging.DEBUG:
            return None
        return super().debug(event, *args, **kw)

    def info(self, event: str, *args: Any, **kw: Any) -> Any:
        if LIVE.floor > logging.INFO:
            return None
        return super().info(event, *args, **kw)

    def log(self, level: int, event: str, *args: Any, **kw: Any) -> Any:
        if level < LIVE.floor:
            return None
        return super().log(level, event, *args, **kw)


class _LibraryRecords(logging.Handler):
    """What libraries log through `logging` (aiohttp, grpc, kubernetes' helpers) as one structlog
    event per line, like ours: the message, the library's logger name, and an exception as its type
    and first line, never a multi-line traceback in the middle of JSON lines. A client that sends
    garbage to an HTTP port is the client's problem: a warning, not an error."""

    def emit(self, record: logging.LogRecord) -> None:
        fields: dict[str, Any] = {"logger": record.name}
        level = record.levelno
        if record.exc_info and record.exc_info[1] is not None:
            exc = record.exc_info[1]
            first = str(exc).strip().splitlines()
            fields["error"] = f"{type(exc).__name__}: {first[0]}" if first else type(exc).__name__
            if type(exc).__name__ in ("BadHttpMessage", "BadHttpMethod", "BadStatusLine"):
                level = min(level, logging.WARNING)
        try:
            structlog.get_logger(record.name).log(level, record.getMessage(), **fields)
        except Exception:  # a record that cannot be formatted must not break the caller
            self.handleError(record)


def _route_library_logs() -> None:
    """Once per process; other handlers (a test runner's capture) stay. The root level stays at
    logging's WARNING: the libraries' debug and info chatter is theirs, not an operator's."""
    root = logging.getLogger()
    if not any(isinstance(handler, _LibraryRecords) for handler in root.handlers):
        root.addHandler(_LibraryRecords())


def configure_logging(level: str = "info", json: bool | None = None, live: bool = False) -> None:
    """Log to stderr. `json=None` picks JSON unless stderr is a terminal."""
    use_json = not sys.stderr.isatty() if json is None else json
    renderer: structlog.types.Processor = (
        structlog.processors.JSONRenderer() if use_json else structlog.dev.ConsoleRenderer(colors=False)
    )
    start = logging.getLevelName(level.upper())
    processors: list[structlog.types.Processor] = [
        structlog.contextvars.merge_contextvars,
        structlog.processors.add_log_level,
        structlog.processors.TimeStamper(fmt="iso", utc=True),
        structlog.processors.StackInfoRenderer(),
        structlog.processors.format_exc_info,
        renderer,
    ]
    if live:
        LIVE.set(start, {})
        processors.insert(0, _live_filter)
    _route_library_logs()
    structlog.configure(
        processors=processors,
        wrapper_class=_LiveBoundLogger if live else structlog.make_filtering_bound_logger(start),
        logger_factory=_named_factory if live else structlog.PrintLoggerFactory(file=sys.stderr),
        cache_logger_on_first_use=True,
    )
