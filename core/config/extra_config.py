"""The core's settings an RM passes in `extraConfig`, as YuniKorn's core reads them from its shim's
ConfigMap (yunikorn-core pkg/common/configs): the event system (`event.*`), the periodic health check
(`health.checkInterval`) and log levels (`log.level`, `log.core[.<subsystem>].level`).

YuniKorn's shim sends its whole ConfigMap there, on registration and on every configuration update,
and the core keeps the last one it was sent: a key left out is back at its default. The keys of the
RM's own side (`service.*`, `kubernetes.*`, `admissionController.*`, the shim's log subsystems, the
queue configuration) are the RM's to honour and are passed over here without a word; any other key is
warned about. A value that cannot be read keeps the default, with a warning naming the key.
"""

from __future__ import annotations

import logging
import re
from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import Any

from si.v1.durations import go_duration

# YuniKorn's defaults (pkg/common/configs/configs.go), but the ring's: pykorn's `--event-log-size`.
DEFAULT_REST_RESPONSE_SIZE = 10_000
DEFAULT_MAX_STREAMS = 100
DEFAULT_MAX_STREAMS_PER_HOST = 15
DEFAULT_REQUEST_CAPACITY = 1_000
DEFAULT_HEALTH_CHECK_INTERVAL = 30.0
MIN_HEALTH_CHECK_INTERVAL = 1.0  # pykorn's floor: a check runs on the core's event loop
MAX_RING_BUFFER_CAPACITY = 1_000_000  # pykorn's cap on the events held (about 1 KB each)

# YuniKorn's core log subsystems, and the pykorn loggers that log what each of them logs. A subsystem
# pykorn has no logger of its own for logs under a broader one (named in its warning).
CORE_LOGGERS: dict[str, tuple[str, ...]] = {
    "core": ("pykorn",),
    "core.entrypoint": ("pykorn.daemon", "pykorn.memory"),
    "core.events": ("pykorn.events",),
    "core.rest": ("pykorn.rest",),
    "core.rmproxy": ("pykorn.rmproxy",),
    "core.rpc": ("pykorn.grpc",),
    "core.scheduler": ("pykorn.engine", "pykorn.cluster", "pykorn.partition"),
    "core.scheduler.context": ("pykorn.cluster",),
    "core.scheduler.partition": ("pykorn.partition",),
}
# The rest of YuniKorn's core subsystems: logged under the one named.
CORE_LOGGED_UNDER = {
    "core.config": "core.rmproxy",
    "core.metrics": "core.rest",
    "core.opentracing": "core",
    "core.resources": "core.scheduler",
    "core.security": "core.rpc",
    "core.utils": "core",
    "core.scheduler.allocation": "core.scheduler.partition",
    "core.scheduler.application": "core.scheduler.partition",
    "core.scheduler.application.usage": "core.scheduler.partition",
    "core.scheduler.fsm": "core.scheduler.partition",
    "core.scheduler.health": "core.rest",
    "core.scheduler.node": "core.scheduler.partition",
    "core.scheduler.preemption": "core.scheduler.partition",
    "core.scheduler.queue": "core.scheduler.partition",
    "core.scheduler.reservation": "core.scheduler.partition",
    "core.scheduler.ugm": "core.scheduler.partition",
}
# Keys of the RM's side of a YuniKorn ConfigMap: passed over by the core.
RM_PREFIXES = ("service.", "kubernetes.", "admissionController.")
RM_LOG_SUBSYSTEMS = ("admission", "deprecation", "kubernetes", "shim", "test")

# YuniKorn's levels (zap's), by name or number, as Python's.
_LEVELS = {
    "debug": logging.DEBUG, "-1": logging.DEBUG, "info": logging.INFO, "0": logging.INFO,
    "warn": logging.WARNING, "warning": logging.WARNING, "1": logging.WARNING,
    "error": logging.ERROR, "2": logging.ERROR, "dpanic": logging.CRITICAL, "3": logging.CRITICAL,
    "panic": logging.CRITICAL, "4": logging.CRITICAL, "fatal": logging.CRITICAL, "5": logging.CRITICAL,
}  # fmt: skip


@dataclass(frozen=True)
class CoreSettings:
    tracking_enabled: bool = True  # event.trackingEnabled
    ring_buffer_capacity: int | None = None  # event.ringBufferCapacity; None: --event-log-size
    request_capacity: int = DEFAULT_REQUEST_CAPACITY  # event.requestCapacity (no queue in pykorn)
    rest_response_size: int = DEFAULT_REST_RESPONSE_SIZE  # event.RESTResponseSize
    max_streams: int = DEFAULT_MAX_STREAMS  # event.maxStreams
    max_streams_per_host: int = DEFAULT_MAX_STREAMS_PER_HOST  # event.maxStreamsPerHost
    health_check_interval: float = DEFAULT_HEALTH_CHECK_INTERVAL  # health.checkInterval; 0: off
    log_level: int | None = None  # log.level; None: --log-level
    log_levels: dict[str, int] = field(default_factory=dict)  # by pykorn logger name


@dataclass
class ReadSettings:
    settings: CoreSettings
    warnings: list[str] = field(default_factory=list)  # each names its key


def read_extra_config(extra: Mapping[str, str]) -> ReadSettings:
    """The core's settings from an RM's extraConfig; what could not be used, in the warnings."""
    values: dict[str, Any] = {}
    by_subsystem: dict[str, int] = {}
    warnings: list[str] = []
    for key in sorted(extra):
        value = extra[key].strip()
        if key.startswith("event."):
            _event(key, value, values, warnings)
        elif key.startswith("health."):
            if key == "health.checkInterval":
                _interval(key, value, values, warnings)
            else:
                warnings.append(f"{key}: not a health setting YuniKorn has (health.checkInterval); not used")
        elif key.startswith("log."):
            _log(key, value, values, by_subsystem, warnings)
        elif not (key.startswith(RM_PREFIXES) or key.endswith((".yaml", ".yaml.gz"))):
            warnings.append(f"{key}: not a key the core knows (event.*, health.*, log.*); not used")
    levels: dict[str, int] = {}
    # The broader subsystems first, so a more specific one wins for a logger both name (YuniKorn's rule).
    for subsystem in sorted(by_subsystem, key=lambda name: name.count(".")):
        for logger in CORE_LOGGERS[subsystem]:
            levels[logger] = by_subsystem[subsystem]
    return ReadSettings(CoreSettings(log_levels=levels, **values), warnings)


_EVENT_NUMBERS = {
    "event.ringBufferCapacity": "ring_buffer_capacity",
    "event.requestCapacity": "request_capacity",
    "event.RESTResponseSize": "rest_response_size",
    "event.maxStreams": "max_streams",
    "event.maxStreamsPerHost": "max_streams_per_host",
}
# Those YuniKorn reads 0 of as "use the default" (a ring or a response of nothing is no setting).
_ZERO_IS_DEFAULT = {"event.ringBufferCapacity", "event.requestCapacity", "event.RESTResponseSize"}


def _event(key: str, value: str, values: dict[str, Any], warnings: list[str]) -> None:
    if key == "event.trackingEnabled":
        if value.lower() in ("true", "false", "1", "0", "t", "f"):  # Go's strconv.ParseBool, as YuniKorn
            values["tracking_enabled"] = value.lower() in ("true", "1", "t")
        else:
            warnings.append(f"{key}: {value!r} is not true or false; the default (true) is kept")
        return
    name = _EVENT_NUMBERS.get(key)
    if name is None:
        known = ", ".join(["event.trackingEnabled", *_EVENT_NUMBERS])
        warnings.append(f"{key}: not an event setting YuniKorn has ({known}); not used")
        return
    if not re.fullmatch(r"[0-9]+", value):
        warnings.append(f"{key}: {value!r} is not a whole number of at least 0; the default is kept")
        return
    number = int(value)
    if key == "event.ringBufferCapacity" and number > MAX_RING_BUFFER_CAPACITY:
        warnings.append(
            f"{key}: {number} is over {MAX_RING_BUFFER_CAPACITY:,}; {MAX_RING_BUFFER_CAPACITY:,} is used"
        )
        number = MAX_RING_BUFFER_CAPACITY
    if number == 0 and key in _ZERO_IS_DEFAULT:
        warnings.append(f"{key}: 0 is not a usable size; the default is kept")
        return
    values[name] = number
    if key == "event.requestCapacity":
        warnings.append(
            f"{key}: accepted, and changes nothing: pykorn has no queue of event requests to size (each "
            "event goes straight to the ring and its readers)"
        )


def _interval(key: str, value: str, values: dict[str, Any], warnings: list[str]) -> None:
    seconds = go_duration(value)
    if seconds is None:
        warnings.append(f"{key}: {value!r} is not a duration (such as 30s, 1m); the default (30s) is kept")
    elif 0 < seconds < MIN_HEALTH_CHECK_INTERVAL:
        # Each check walks every node and allocation on the core's one event loop.
        warnings.append(f"{key}: {value!r} is below pykorn's floor; {MIN_HEALTH_CHECK_INTERVAL:g}s is used")
        values["health_check_interval"] = MIN_HEALTH_CHECK_INTERVAL
    else:
        values["health_check_interval"] = max(0.0, seconds)  # 0 or less: no periodic check, as YuniKorn


def _log(
    key: str, value: str, values: dict[str, Any], levels_by_subsystem: dict[str, int], warnings: list[str]
) -> None:
    if key != "log.level" and not key.endswith(".level"):
        warnings.append(f"{key}: not a log setting (log.level, log.<subsystem>.level); not used")
        return
    subsystem = "" if key == "log.level" else key.removeprefix("log.").removesuffix(".level")
    if subsystem.split(".")[0] in RM_LOG_SUBSYSTEMS:
        return  # the RM's own loggers
    level = _LEVELS.get(value.lower())
    if level is None:
        warnings.append(
            f"{key}: {value!r} is not a log level (debug, info, warn, error, or -1 to 5); not used"
        )
        return
    if not subsystem:
        values["log_level"] = level
    elif subsystem in CORE_LOGGERS:
        levels_by_subsystem[subsystem] = level
    elif subsystem in CORE_LOGGED_UNDER:
        broader = CORE_LOGGED_UNDER[subsystem]
        warnings.append(
            f"{key}: pykorn's core has no logger of its own for {subsystem}; it logs that under "
            f"{broader} (log.{broader}.level); not used"
        )
    else:
        warnings.append(f"{key}: YuniKorn has no log subsystem {subsystem!r}; not used")
