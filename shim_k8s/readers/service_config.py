"""The shim's settings from the `yunikorn-defaults` and `yunikorn-configs` ConfigMaps, as YuniKorn's.

The two are merged key by key, `yunikorn-configs` over `yunikorn-defaults`. The queue configuration
is the key `<service.policyGroup>.yaml` (`queues.yaml` by default). What each other key does here:

- applied: `service.policyGroup`, `service.placeholderImage`, `service.placeholderRunAsUser`,
  `service.placeholderRunAsGroup`, `service.placeholderFsGroup`, `service.disableGangScheduling`,
  `service.disableWorkloadAPI` (pykorn's: true schedules pods of Kubernetes Workload API groups pod by
  pod, each told so by an event; see docs/gang-scheduling.md),
  `service.enableConfigHotRefresh`, `service.eventChannelCapacity` (the queue of events waiting to go
  to the API), `service.volumeBindTimeout` (a Go duration: how long a pod's volumes may take to bind
  before its allocation is given back, 10m by default), `service.instanceTypeNodeLabelKey` (the node
  label sent as the node's instance type), `service.partitionNodeLabelKey` (pykorn's: the node label
  whose value is the node's partition; see docs/kubernetes.md, "Partitions"), `kubernetes.qps` and
  `kubernetes.burst` (over
  the `--kube-qps`/`--kube-burst` flags),
  `admissionController.filtering.generateUniqueAppId`; `log.level` and `log.<subsystem>.level`
  (subsystems are pykorn's logger names without `pykorn.`: `k8s`, `k8s.informer`, `k8s.http`,
  `k8s.leader`, `rmclient`) change at once;
- the core's, sent to it in extraConfig (it applies them, or warns about them, itself): `event.*`,
  `health.*`, `log.level` (the shim's too) and `log.core.*.level`;
- not used, with a warning saying why: `service.clusterId`, `service.schedulingInterval`,
  `service.dispatchTimeout`, `service.operatorPlugins`;
- every other `admissionController.*` key is the admission controller's (`pykorn admission`);
- anything else is warned about as unknown.

As in YuniKorn, only the log levels and the queue configuration change while running; a change of
another key is reported and takes effect at the next start.
"""

from __future__ import annotations

import base64
import logging
import zlib
from collections.abc import Mapping
from dataclasses import dataclass, field, fields
from typing import Any

from rmclient.logging_setup import level_number
from shim_k8s.readers.bad_objects import Refused
from si.v1.durations import go_duration

CONFIGMAP_NAMES = ("yunikorn-defaults", "yunikorn-configs")  # merged in this order
LOG_PREFIX = "pykorn."
KNOWN_SUBSYSTEMS = ("k8s", "k8s.informer", "k8s.http", "k8s.leader", "rmclient")

NOT_USED = {
    "service.clusterId": "the resource manager ID is set with --rm-id",
    "service.schedulingInterval": "pykorn's core schedules as asks or room change, not on an interval",
    "service.dispatchTimeout": "the shim has no dispatcher queue: each decision is carried out as it arrives",
    "service.operatorPlugins": "operator plugins (Spark, ...) are not supported; applications come from pod "
    "labels",
}


# Keys the core reads (core.config.extra_config): sent to it in extraConfig at registration and with each
# configuration update, as YuniKorn's shim sends its ConfigMap. log.level is both the shim's and the
# core's.
CORE_PREFIXES = ("event.", "health.")
CORE_LOG_PREFIX = "log.core."


def core_settings(data: Mapping[str, str]) -> dict[str, str]:
    """What of the merged ConfigMaps goes to the core in extraConfig."""
    return {
        k: v for k, v in data.items()
        if k.startswith(CORE_PREFIXES) or k.startswith(CORE_LOG_PREFIX) or k == "log.level"
    }  # fmt: skip


@dataclass(frozen=True)
class ServiceConfig:
    policy_group: str = "queues"
    placeholder_image: str | None = None  # None: --placeholder-image
    placeholder_run_as_user: int | None = None
    placeholder_run_as_group: int | None = None
    placeholder_fs_group: int | None = None
    disable_gang_scheduling: bool = False
    disable_workload_api: bool = False  # pykorn's: pods' Workload API groups not used for gangs
    enable_config_hot_refresh: bool = True
    event_channel_capacity: int | None = None
    kube_qps: float | None = None  # None: --kube-qps
    kube_burst: int | None = None
    generate_unique_app_ids: bool = False
    volume_bind_timeout: float = 600.0  # seconds (YuniKorn's 10m)
    # The node label whose value is the node's instance type (si/instance-type): the core tracks an
    # application's usage by it.
    instance_type_label: str = "node.kubernetes.io/instance-type"
    # pykorn's: the node label whose value is the node's partition ("": every node in `default`).
    partition_node_label_key: str = ""
    log_level: int | None = None  # None: --log-level
    log_levels: dict[str, int] = field(default_factory=dict)  # by logger name

    def restart_needed(self, other: ServiceConfig) -> list[str]:
        """The settings that differ from `other` and do not change while running."""
        live = {"log_level", "log_levels"}
        return [
            f.name
            for f in fields(self)
            if f.name not in live and getattr(self, f.name) != getattr(other, f.name)
        ]


@dataclass
class Parsed:
    config: ServiceConfig
    queues: str  # the queue configuration text ("" when the ConfigMaps hold none)
    warnings: list[str] = field(default_factory=list)


def merged(
    configmaps: Mapping[str, Mapping[str, Any] | None], warnings: list[str] | None = None
) -> dict[str, str]:
    """yunikorn-defaults, then yunikorn-configs over it, key by key (each flattened as `flatten`);
    the warnings about their binaryData go to `warnings`."""
    out: dict[str, str] = {}
    for name in CONFIGMAP_NAMES:
        data, notes = flatten(configmaps.get(name))
        out.update(data)
        if warnings is not None:
            warnings.extend(f"{name}: {note}" for note in notes)
    return out


def flatten(configmap: Mapping[str, Any] | None) -> tuple[dict[str, str], list[str]]:
    """One ConfigMap's keys as YuniKorn reads them: `data`, then `binaryData` over it, where a key
    ending in `.gz` is gunzipped and kept without the suffix (`queues.yaml.gz` is `queues.yaml`: how a
    configuration larger than a ConfigMap's 1 MiB is stored). Other binaryData keys, and values that
    are not gzip, are not used: the warnings (second) name them. Refused when `data` or `binaryData`
    is not an object of strings: the ConfigMap cannot be read at all. Each object is read once, however
    many times it is asked for (objects from the API are replaced, never changed)."""
    if configmap is None:
        return {}, []
    cached = _FLATTENED.get(id(configmap))
    if cached is not None and cached[0] is configmap:
        return dict(cached[1]), list(cached[2])
    data, warnings = _flatten(configmap)
    if len(_FLATTENED) >= 8:
        del _FLATTENED[next(iter(_FLATTENED))]
    _FLATTENED[id(configmap)] = (configmap, data, warnings)
    return dict(data), list(warnings)


_FLATTENED: dict[int, tuple[Mapping[str, Any], dict[str, str], list[str]]] = {}
MAX_UNZIPPED = 64 * 2**20  # bytes all of a ConfigMap's gzipped values may expand to; beyond, not used


def _flatten(configmap: Mapping[str, Any]) -> tuple[dict[str, str], list[str]]:
    data = _strings(configmap.get("data"), "data")
    binary = _strings(configmap.get("binaryData"), "binaryData")
    warnings: list[str] = []
    budget = MAX_UNZIPPED
    for key, encoded in binary.items():
        name, dot, suffix = key.rpartition(".")
        if not dot or suffix.lower() != "gz":
            warnings.append(f"binaryData.{key}: not used: only gzipped keys (ending in .gz) are read")
            continue
        try:
            raw = _gunzip(base64.b64decode(encoded, validate=True), budget)
            data[name] = raw.decode("utf-8")
            budget -= len(raw)
        except (ValueError, zlib.error, EOFError) as exc:
            warnings.append(f"binaryData.{key}: not used: not base64 of gzipped UTF-8 text ({exc})")
    return data, warnings


def _gunzip(raw: bytes, most: int) -> bytes:
    """Every gzip member of `raw`, one after the other (as Go's reader reads them), up to `most` bytes."""
    if not raw:
        raise EOFError("no gzip data")
    out = bytearray()
    while raw:
        inflate = zlib.decompressobj(wbits=16 + zlib.MAX_WBITS)  # gzip framing
        out += inflate.decompress(raw, most - len(out) + 1)
        if len(out) > most or inflate.unconsumed_tail:
            raise ValueError(f"more than {MAX_UNZIPPED // 2**20} MiB unzipped in this ConfigMap")
        if not inflate.eof:
            raise EOFError("the gzip data ends early")
        raw = inflate.unused_data
    return bytes(out)


def _strings(value: object, field: str) -> dict[str, str]:
    if value is None:
        return {}
    if not isinstance(value, Mapping) or not all(
        isinstance(k, str) and isinstance(v, str) for k, v in value.items()
    ):
        raise Refused(f"{field}: expected an object of strings")
    return dict(value)


def parse(data: Mapping[str, str]) -> Parsed:
    values: dict[str, Any] = {}
    warnings: list[str] = []
    group = (data.get("service.policyGroup") or "").strip() or "queues"
    values["policy_group"] = group
    levels: dict[str, int] = {}
    for key, raw in data.items():
        value = raw.strip()
        if key == f"{group}.yaml" or key == "service.policyGroup" or key.startswith("admissionController."):
            if key == "admissionController.filtering.generateUniqueAppId":
                _bool(key, value, "generate_unique_app_ids", values, warnings)
            continue
        if key.startswith(CORE_PREFIXES) or key.startswith(CORE_LOG_PREFIX):
            continue  # the core's (sent to it in extraConfig; it reports on them)
        if key in NOT_USED:
            warnings.append(f"{key}: not used: {NOT_USED[key]}")
        elif key in _TEXT:
            values[_TEXT[key]] = value
        elif key in _INTS:
            _int(key, value, _INTS[key], values, warnings)
        elif key in _BOOLS:
            _bool(key, value, _BOOLS[key], values, warnings)
        elif key == "service.volumeBindTimeout":
            _duration(key, value, "volume_bind_timeout", values, warnings)
        elif key == "kubernetes.qps":
            _number(key, value, "kube_qps", float, values, warnings)
        elif key == "kubernetes.burst":
            _number(key, value, "kube_burst", int, values, warnings)
        elif key == "log.level":
            _level(key, value, warnings, lambda n: values.__setitem__("log_level", n))
        elif key.startswith("log.") and key.endswith(".level"):
            subsystem = key.removeprefix("log.").removesuffix(".level")
            if subsystem not in KNOWN_SUBSYSTEMS:
                warnings.append(
                    f"{key}: pykorn has no subsystem {subsystem!r} (it has {', '.join(KNOWN_SUBSYSTEMS)})"
                )
            _level(key, value, warnings, lambda n, s=subsystem: levels.__setitem__(LOG_PREFIX + s, n))
        elif key.endswith(".yaml"):
            warnings.append(f"{key}: not the queue configuration ({group}.yaml, from service.policyGroup)")
        else:
            warnings.append(f"{key}: not a key pykorn knows; ignored")
    values["log_levels"] = levels
    return Parsed(ServiceConfig(**values), data.get(f"{group}.yaml", ""), warnings)


_TEXT = {
    "service.placeholderImage": "placeholder_image",
    "service.instanceTypeNodeLabelKey": "instance_type_label",  # as YuniKorn's documentation spells it
    "service.nodeInstanceTypeNodeLabelKey": "instance_type_label",  # as YuniKorn's shim reads it
    "service.partitionNodeLabelKey": "partition_node_label_key",  # pykorn's
}
_INTS = {
    "service.placeholderRunAsUser": "placeholder_run_as_user",
    "service.placeholderRunAsGroup": "placeholder_run_as_group",
    "service.placeholderFsGroup": "placeholder_fs_group",
    "service.eventChannelCapacity": "event_channel_capacity",
}
_BOOLS = {
    "service.disableGangScheduling": "disable_gang_scheduling",
    "service.disableWorkloadAPI": "disable_workload_api",
    "service.enableConfigHotRefresh": "enable_config_hot_refresh",
}


def _bool(key: str, value: str, name: str, values: dict[str, Any], warnings: list[str]) -> None:
    if value.lower() in ("true", "false"):
        values[name] = value.lower() == "true"
    else:
        warnings.append(f"{key}: {value!r} is not true or false; the default is kept")


def _int(key: str, value: str, name: str, values: dict[str, Any], warnings: list[str]) -> None:
    _number(key, value, name, int, values, warnings)


def _number(key: str, value: str, name: str, kind: type, values: dict[str, Any], warnings: list[str]) -> None:
    try:
        number = kind(value)
    except ValueError:
        warnings.append(f"{key}: {value!r} is not a number; the default is kept")
        return
    if number < 0 or (kind is not int and number == 0) or (name.startswith("event") and number == 0):
        warnings.append(f"{key}: {value!r} is out of range; the default is kept")
        return
    values[name] = number


def _duration(key: str, value: str, name: str, values: dict[str, Any], warnings: list[str]) -> None:
    seconds = go_duration(value)
    if seconds is None:
        warnings.append(f"{key}: {value!r} is not a duration (such as 10m, 90s, 1m30s); the default is kept")
    elif seconds <= 0:
        warnings.append(f"{key}: {value!r} must be longer than 0; the default is kept")
    else:
        values[name] = seconds


def _level(key: str, value: str, warnings: list[str], store: Any) -> None:
    number = level_number(value)
    if number is None:
        choices = "debug, info, warn, error"
        warnings.append(f"{key}: {value!r} is not a log level ({choices}); the previous level is kept")
        return
    store(number)


def default_level(config: ServiceConfig, flag_level: str) -> int:
    return config.log_level if config.log_level is not None else level_number(flag_level) or logging.INFO
