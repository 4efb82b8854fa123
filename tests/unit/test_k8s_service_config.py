"""The shim's settings from yunikorn-defaults and yunikorn-configs: merged as YuniKorn merges them,
each key applied, or named in a warning saying why not."""

from __future__ import annotations

import logging

import pytest

from rmclient.logging_setup import LiveLevels
from shim_k8s.readers import service_config as sc
from shim_k8s.readers.bad_objects import Refused
from shim_k8s.readers.configmaps import ConfigMaps
from si.v1.durations import go_duration


def _parse(**data: str) -> sc.Parsed:
    return sc.parse({k.replace("__", "."): v for k, v in data.items()})


def test_configs_override_defaults_key_by_key() -> None:
    data = sc.merged({
        "yunikorn-defaults": {"data": {"queues.yaml": "from defaults", "log.level": "debug"}},
        "yunikorn-configs": {"data": {"log.level": "error"}},
    })  # fmt: skip
    parsed = sc.parse(data)
    assert parsed.queues == "from defaults" and parsed.config.log_level == logging.ERROR


def test_applied_keys() -> None:
    parsed = sc.parse({
        "service.policyGroup": "batch", "batch.yaml": "the queues", "queues.yaml": "not these",
        "service.placeholderImage": "registry.local/pause:3.9", "service.placeholderRunAsUser": "1000",
        "service.placeholderRunAsGroup": "3000", "service.placeholderFsGroup": "2000",
        "service.disableGangScheduling": "true", "service.enableConfigHotRefresh": "false",
        "service.eventChannelCapacity": "500", "kubernetes.qps": "200", "kubernetes.burst": "400",
        "admissionController.filtering.generateUniqueAppId": "true",
        "admissionController.filtering.bypassNamespaces": "^kube-", "log.k8s.informer.level": "warn",
        "service.volumeBindTimeout": "1m30s",
    })  # fmt: skip
    c = parsed.config
    assert parsed.queues == "the queues" and c.policy_group == "batch"
    assert c.placeholder_image == "registry.local/pause:3.9"
    ids = (c.placeholder_run_as_user, c.placeholder_run_as_group, c.placeholder_fs_group)
    assert ids == (1000, 3000, 2000)
    assert c.disable_gang_scheduling and not c.enable_config_hot_refresh and c.generate_unique_app_ids
    assert (c.event_channel_capacity, c.kube_qps, c.kube_burst) == (500, 200.0, 400)
    assert c.log_levels == {"pykorn.k8s.informer": logging.WARNING}
    assert c.volume_bind_timeout == 90.0
    # queues.yaml is not the queue configuration when the policy group is another.
    assert parsed.warnings == [
        "queues.yaml: not the queue configuration (batch.yaml, from service.policyGroup)"
    ]


def test_keys_that_do_not_apply_are_named_with_the_reason() -> None:
    parsed = sc.parse({
        "service.schedulingInterval": "1s", "service.volumeBindTimeout": "600", "service.clusterId": "x",
        "service.dispatchTimeout": "300s", "service.sillyKey": "1", "log.level": "loud",
        "log.shim.cache.level": "debug", "service.eventChannelCapacity": "-5", "kubernetes.qps": "fast",
    })  # fmt: skip
    by_key = {w.split(":")[0]: w for w in parsed.warnings}
    assert set(by_key) == {
        "service.schedulingInterval", "service.volumeBindTimeout", "service.clusterId",
        "service.dispatchTimeout", "service.sillyKey", "log.level", "log.shim.cache.level",
        "service.eventChannelCapacity", "kubernetes.qps",
    }  # fmt: skip
    assert "not used" in by_key["service.schedulingInterval"]
    assert "'600' is not a duration" in by_key["service.volumeBindTimeout"]  # Go's: a unit is needed
    assert "no subsystem 'shim.cache'" in by_key["log.shim.cache.level"]
    assert parsed.config == sc.ServiceConfig(log_levels={"pykorn.shim.cache": logging.DEBUG})


def test_durations_are_read_as_go_reads_them() -> None:
    assert [go_duration(t) for t in ("10m", "1m30s", "500ms", "1.5h", "0")] == [600, 90, 0.5, 5400, 0]
    assert [go_duration(t) for t in ("", "10", "10 m", "1d", "m")] == [None] * 5 and go_duration("-5s") == -5
    assert "must be longer than 0" in _parse(service__volumeBindTimeout="0s").warnings[0]
    assert sc.ServiceConfig().volume_bind_timeout == 600.0  # YuniKorn's default, 10m


def test_what_needs_a_restart() -> None:
    before = _parse(service__placeholderImage="a", log__level="info").config
    after = _parse(service__placeholderImage="b", log__level="debug").config
    assert after.restart_needed(before) == ["placeholder_image"]  # the log level applies at once


def test_live_levels_follow_the_longest_prefix() -> None:
    levels = LiveLevels(logging.INFO)
    levels.set(logging.WARNING, {"pykorn.k8s": logging.DEBUG, "pykorn.k8s.informer": logging.ERROR})
    assert levels.threshold("pykorn.k8s") == logging.DEBUG
    assert levels.threshold("pykorn.k8s.http") == logging.DEBUG
    assert levels.threshold("pykorn.k8s.informer") == logging.ERROR
    assert (
        levels.threshold("pykorn.k8sx") == logging.WARNING
        and levels.threshold("pykorn.rmclient") == logging.WARNING
    )


def _gz(text: str) -> str:
    import base64
    import gzip

    return base64.b64encode(gzip.compress(text.encode())).decode()


def test_binary_data_is_gunzipped_every_member_with_a_budget_and_faults_named() -> None:
    import base64
    import gzip

    two_members = base64.b64encode(gzip.compress(b"a: ") + gzip.compress(b"1")).decode()
    data, warnings = sc.flatten({
        "data": {"queues.yaml": "from data"},
        "binaryData": {"queues.yaml.gz": _gz("from gzip"), "two.yaml.GZ": two_members,
                       "plain.txt": _gz("x"), "bad.gz": "not base64!", "corrupt.gz": _gz("x")[:-8],
                       "empty.gz": ""},
    })  # fmt: skip
    assert data["queues.yaml"] == "from gzip"  # binaryData over data, as YuniKorn
    assert data["two.yaml"] == "a: 1"  # every member, as Go's gzip reader
    assert [w.split(":")[0] for w in warnings] == [
        "binaryData.plain.txt", "binaryData.bad.gz", "binaryData.corrupt.gz", "binaryData.empty.gz"
    ]  # fmt: skip
    assert "plain.txt" not in data and "bad" not in data and "corrupt" not in data


def test_what_gzip_may_expand_to_is_bounded_across_the_configmaps_keys(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    monkeypatch.setattr(sc, "MAX_UNZIPPED", 1000)
    data, warnings = sc.flatten({"binaryData": {"a.gz": _gz("x" * 600), "b.gz": _gz("y" * 600)}})
    assert data == {"a": "x" * 600}  # the second would take the ConfigMap past the budget
    assert warnings[0].startswith("binaryData.b.gz: not used") and "MiB unzipped" in warnings[0]


def test_a_configmap_that_is_not_strings_is_refused() -> None:
    for bad in ({"data": {"queues.yaml": 5}}, {"data": ["x"]}, {"binaryData": {"a.gz": None}}):
        with pytest.raises(Refused):
            sc.flatten(bad)


def test_the_cores_keys_go_to_it_and_are_not_warned_about_here() -> None:
    data = {
        "event.trackingEnabled": "false", "health.checkInterval": "1m", "log.level": "debug",
        "log.core.scheduler.level": "info", "log.k8s.level": "warn", "service.placeholderImage": "pause",
        "service.nodeInstanceTypeNodeLabelKey": "my/type",
    }  # fmt: skip
    parsed = sc.parse(data)
    assert parsed.warnings == []
    assert parsed.config.instance_type_label == "my/type"
    assert sc.core_settings(data) == {
        "event.trackingEnabled": "false", "health.checkInterval": "1m", "log.level": "debug",
        "log.core.scheduler.level": "info",
    }  # fmt: skip


def test_a_change_of_only_the_cores_keys_sends_them_with_the_queues_the_core_has() -> None:
    maps = ConfigMaps()
    first = {"metadata": {"name": "yunikorn-configs"}, "data": {"queues.yaml": "Q1", "event.maxStreams": "5"}}
    maps.load(first, None)
    maps.accepted = "Q1"
    send, _ = maps.change(
        "yunikorn-configs", {**first, "data": {"queues.yaml": "Q1", "event.maxStreams": "7"}}
    )
    assert send == "Q1" and maps.core == {"event.maxStreams": "7"}
    send, _ = maps.change(
        "yunikorn-configs", {**first, "data": {"queues.yaml": "Q1", "event.maxStreams": "7"}}
    )
    assert send is None  # nothing changed


def test_with_hot_refresh_off_a_change_of_the_cores_keys_waits_and_says_so() -> None:
    maps = ConfigMaps()
    data = {"queues.yaml": "Q1", "service.enableConfigHotRefresh": "false", "health.checkInterval": "1m"}
    maps.load({"metadata": {"name": "yunikorn-configs"}, "data": data}, None)
    changed = {"metadata": {"name": "yunikorn-configs"}, "data": {**data, "health.checkInterval": "2m"}}
    send, warnings = maps.change("yunikorn-configs", changed)
    assert send is None
    assert any("service.enableConfigHotRefresh is false: applied at the next start" in w for w in warnings)
