"""Reading a configuration text a client sent (an RM's registration or update, REST's validate-conf):
within the size limit, off the event loop, and refused with reasons whatever is wrong with it."""

from __future__ import annotations

import asyncio
from collections.abc import Callable

import structlog

from core.config import ConfigError, LoadedConfig, SchedulerConfig, load_config
from core.config.input_limits import config_size_problem
from core.config.yaml_reader import Problem
from core.off_loop import in_daemon_thread

log = structlog.get_logger("pykorn.rmproxy")

BIG_CONFIG_BYTES = 64 * 1024  # a refused configuration this large is worth giving memory back for


async def read_config(text: str, max_bytes: int) -> LoadedConfig:
    """load_or_refuse within `max_bytes`, in a worker thread: a large configuration takes seconds to
    read, and the streams of every RM (and the other REST readers) are served meanwhile."""
    too_large = config_size_problem(text, max_bytes)
    if too_large:
        raise ConfigError([Problem("", 0, too_large)])
    if len(text) >= BIG_CONFIG_BYTES:  # the reading takes seconds: said, as it is a state of the core
        log.info("reading a configuration", bytes=len(text))
    return await in_daemon_thread(lambda: load_or_refuse(text), "pykorn-config")


def load_or_refuse(text: str) -> LoadedConfig:
    """load_config, and a configuration it fails on unexpectedly refused like any invalid one: the client
    gets its reason, the core keeps its configuration. The failure is a bug of the core's checks, so it
    is logged with its traceback for someone to fix."""
    try:
        return load_config(text)
    except ConfigError:
        raise
    except Exception as exc:
        log.exception("configuration check failed unexpectedly", error=repr(exc))
        reason = f"the core could not check this configuration ({type(exc).__name__}: {exc}); it was refused"
        raise ConfigError([Problem("", 0, reason)]) from None


class RMConfigTexts:
    """The configuration texts RMs send (registrations, updates, dry runs), read as the proxy reads
    them: an empty registration or update takes the core's default text; one RM's registrations and
    updates apply in the order they came (`lock`), whichever is read first; a large text refused is
    reported (`on_refused`: reading it made garbage the daemon gives back to the system)."""

    def __init__(self, default_text: str, max_bytes: int) -> None:
        self.default_text = default_text
        self.max_bytes = max_bytes
        self.on_refused: Callable[[str], None] | None = None
        self._locks: dict[str, asyncio.Lock] = {}

    def lock(self, rm_id: str) -> asyncio.Lock:
        lock = self._locks.get(rm_id)
        if lock is None:
            lock = self._locks[rm_id] = asyncio.Lock()
        return lock

    def forget(self, rm_id: str) -> None:
        """The RM is gone: its lock too, unless an update holds it."""
        lock = self._locks.get(rm_id)
        if lock is not None and not lock.locked():
            del self._locks[rm_id]

    async def load(self, text: str, default: bool = True) -> LoadedConfig:
        """The text read (the default one for an empty text unless `default` is False); ConfigError
        with every problem when it cannot be, its frames let go."""
        text = text or (self.default_text if default else "")
        try:
            return await read_config(text, self.max_bytes)
        except ConfigError as exc:
            exc.__traceback__ = None  # its frames hold what was read: let it all go now
            if len(text) >= BIG_CONFIG_BYTES and self.on_refused is not None:
                self.on_refused("a large configuration refused")
            raise

    async def registration(self, text: str) -> SchedulerConfig:
        """A registration's configuration; ValueError with the problems when it cannot be read, its
        warnings logged."""
        try:
            loaded = await self.load(text)
        except ConfigError as exc:
            raise ValueError(str(exc)) from None
        for warning in loaded.warnings:
            log.warning("configuration warning", detail=str(warning))
        return loaded.config
