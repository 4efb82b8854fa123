"""Reading a configuration text a client sent (an RM's registration or update, REST's validate-conf):
within the size limit, off the event loop, and refused with reasons whatever is wrong with it."""

from __future__ import annotations

import structlog

from core.config import ConfigError, LoadedConfig, load_config
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
