"""The core's settings from an RM's extraConfig, read as YuniKorn's core reads its ConfigMap: each key
applied, or warned about by name; the RM's own keys passed over."""

from __future__ import annotations

import logging

from core.config.extra_config import CoreSettings, read_extra_config
from core.events import ChangeDetail, ChangeType, Event, EventLog, EventType
from si.v1.durations import go_duration


def test_nothing_sent_is_every_default() -> None:
    read = read_extra_config({})
    assert read.settings == CoreSettings() and read.warnings == []
    assert (read.settings.max_streams, read.settings.max_streams_per_host) == (100, 15)
    assert (read.settings.rest_response_size, read.settings.health_check_interval) == (10_000, 30.0)


def test_every_event_and_health_key_is_read() -> None:
    read = read_extra_config(
        {
            "event.trackingEnabled": "false",
            "event.ringBufferCapacity": "500",
            "event.RESTResponseSize": "50",
            "event.maxStreams": "3",
            "event.maxStreamsPerHost": "1",
            "health.checkInterval": "1m30s",
        }
    )
    s = read.settings
    assert s.tracking_enabled is False and s.ring_buffer_capacity == 500 and s.rest_response_size == 50
    assert (s.max_streams, s.max_streams_per_host, s.health_check_interval) == (3, 1, 90.0)
    assert read.warnings == []


def test_bad_values_keep_the_default_and_say_which_key() -> None:
    read = read_extra_config(
        {
            "event.trackingEnabled": "maybe",
            "event.ringBufferCapacity": "0",
            "event.maxStreams": "-3",
            "health.checkInterval": "30",
            "event.nope": "1",
            "health.nope": "1",
        }
    )
    assert read.settings == CoreSettings()
    text = "\n".join(read.warnings)
    for key in (
        "event.trackingEnabled",
        "event.ringBufferCapacity",
        "event.maxStreams",
        "health.checkInterval",
    ):
        assert f"{key}: " in text, key
    assert "event.nope: not an event setting" in text and "health.nope: not a health setting" in text


def test_a_negative_or_zero_interval_turns_the_periodic_check_off() -> None:
    assert read_extra_config({"health.checkInterval": "0"}).settings.health_check_interval == 0.0
    assert read_extra_config({"health.checkInterval": "-5s"}).settings.health_check_interval == 0.0
    assert go_duration("1h2m3.5s") == 3723.5 and go_duration("5") is None and go_duration("") is None


def test_request_capacity_is_accepted_with_a_warning_that_it_changes_nothing() -> None:
    read = read_extra_config({"event.requestCapacity": "5000"})
    assert read.settings.request_capacity == 5000
    [warning] = read.warnings
    assert warning.startswith("event.requestCapacity: accepted, and changes nothing")


def test_log_levels_map_yunikorns_core_subsystems_to_pykorns_loggers() -> None:
    read = read_extra_config(
        {
            "log.level": "-1",
            "log.core.level": "WARN",
            "log.core.scheduler.level": "error",
            "log.core.rmproxy.level": "debug",
            "log.core.scheduler.ugm.level": "debug",  # logged under core.scheduler.partition
            "log.core.nope.level": "info",
            "log.core.rest.level": "loud",
            "log.shim.level": "debug",  # the RM's
            "log.admission.webhook.level": "debug",  # the RM's
        }
    )
    s = read.settings
    assert s.log_level == logging.DEBUG
    assert s.log_levels == {
        "pykorn": logging.WARNING,
        "pykorn.engine": logging.ERROR,
        "pykorn.cluster": logging.ERROR,
        "pykorn.partition": logging.ERROR,
        "pykorn.rmproxy": logging.DEBUG,
    }
    text = "\n".join(read.warnings)
    assert "log.core.scheduler.ugm.level: pykorn's core has no logger of its own" in text
    assert "(log.core.scheduler.partition.level)" in text
    assert "log.core.nope.level: YuniKorn has no log subsystem 'core.nope'" in text
    assert "log.core.rest.level: 'loud' is not a log level" in text
    assert "shim" not in text and "admission" not in text


def test_the_rms_own_keys_pass_without_a_word_and_others_are_warned() -> None:
    read = read_extra_config(
        {
            "service.placeholderImage": "pause",
            "kubernetes.qps": "5",
            "admissionController.filtering.generateUniqueAppId": "true",
            "queues.yaml": "partitions: []",
            "mystery": "1",
        }
    )
    assert read.warnings == ["mystery: not a key the core knows (event.*, health.*, log.*); not used"]


def test_the_event_log_stops_recording_while_tracking_is_off_and_keeps_the_newest_when_shrunk() -> None:
    log = EventLog(capacity=5)
    for i in range(5):
        log.add(_event(i))
    log.tracking = False
    assert log.add(_event(99)) == -1 and len(log) == 5 and log.highest_id == 4
    log.tracking = True
    log.resize(2)
    assert [e.object_id for e in log] == ["3", "4"] and log.lowest_id == 3 and log.capacity == 2
    assert log.add(_event(5)) == 5 and [e.object_id for e in log] == ["4", "5"]


def _event(i: int) -> Event:
    return Event("rm", EventType.APP, str(i), ChangeType.ADD, ChangeDetail.APP_NEW, "m", float(i))


def test_a_more_specific_subsystem_wins_whatever_the_order_of_the_keys() -> None:
    # core.scheduler.context and core.scheduler both name pykorn.cluster; the deeper one decides.
    read = read_extra_config(
        {"log.core.scheduler.level": "error", "log.core.scheduler.context.level": "debug"}
    )
    levels = read.settings.log_levels
    assert levels["pykorn.cluster"] == logging.DEBUG and levels["pykorn.engine"] == logging.ERROR


def test_a_health_interval_below_a_second_and_an_oversized_ring_are_bounded_with_a_warning() -> None:
    read = read_extra_config({"health.checkInterval": "1ms", "event.ringBufferCapacity": "5000000"})
    assert read.settings.health_check_interval == 1.0 and read.settings.ring_buffer_capacity == 1_000_000
    assert [w.split(":")[0] for w in read.warnings] == ["event.ringBufferCapacity", "health.checkInterval"]
