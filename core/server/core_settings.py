"""The core's settings from an RM's extraConfig (core.config.extra_config), applied to the running
core as YuniKorn applies its ConfigMap: all of them live, the last RM to send them setting them for the
whole core (YuniKorn's core keeps one map). A key left out is back at its default."""

from __future__ import annotations

from collections.abc import Callable, Mapping
from dataclasses import fields

import structlog

from core.config.extra_config import CoreSettings, read_extra_config
from core.events import EventLog
from core.server.health_loop import HealthLoop
from core.server.rest import StateAPI

log = structlog.get_logger("pykorn.daemon")

# Sets the log levels while running: the default (None: the one the core started with) and levels by
# logger-name prefix. Given by the command that set logging up (pykorn core).
LogLevels = Callable[[int | None, Mapping[str, int]], None]


class CoreSettingsApplier:
    def __init__(
        self,
        events: EventLog,
        health: HealthLoop,
        rest: StateAPI | None = None,
        log_levels: LogLevels | None = None,
    ) -> None:
        self._events = events
        self._health = health
        self._rest = rest
        self._log_levels = log_levels
        self._ring_default = events.capacity  # --event-log-size
        self.current = CoreSettings()

    def apply(self, rm_id: str, extra: Mapping[str, str]) -> list[str]:
        """Apply what `extra` sets (and the default of what it leaves out); the warnings, each naming
        its key, are logged and returned for the RM's answer."""
        read = read_extra_config(extra)
        new = read.settings
        self._events.tracking = new.tracking_enabled
        self._events.resize(new.ring_buffer_capacity or self._ring_default)
        if self._rest is not None:
            self._rest.max_batch = new.rest_response_size
            self._rest.max_streams = new.max_streams
            self._rest.max_streams_per_host = new.max_streams_per_host
        self._health.set_interval(new.health_check_interval)
        if self._log_levels is not None:
            self._log_levels(new.log_level, new.log_levels)
        elif new.log_level is not None or new.log_levels:
            read.warnings.append("log.*: this core's logging was set up without live levels; not used")
        changed = {
            f.name: getattr(new, f.name)
            for f in fields(new)
            if getattr(new, f.name) != getattr(self.current, f.name)
        }
        self.current = new
        if changed:
            log.info("core settings applied from extraConfig", rmID=rm_id, changed=changed)
        for warning in read.warnings:
            log.warning("extraConfig key not used as sent", rmID=rm_id, detail=warning)
        return read.warnings
