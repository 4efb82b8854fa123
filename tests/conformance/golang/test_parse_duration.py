"""Go's time.ParseDuration, as YuniKorn's settings are read with it: the cases of Go's own tables
(golang/go src/time/time_test.go, parseDurationTests and parseDurationErrorTests, at GO_COMMIT),
through the one reading the core and the Kubernetes shim share (si.v1.durations), and through each of
their settings a user writes."""

from __future__ import annotations

import pytest

from core.config.properties import DEFAULT_QUOTA_PREEMPTION_DELAY, parse
from shim_k8s.readers import service_config
from si.v1.durations import go_duration, go_duration_nanos

GO_COMMIT = "f7396aaea0297a2e95b502a4075b0aed6efda89f"  # golang/go, src/time/time_test.go as read

NS, US, MS, S = 1, 1_000, 1_000_000, 1_000_000_000
M, H = 60 * S, 3600 * S

# parseDurationTests: (input, nanoseconds); the case id is the input, as Go's table has no names.
PARSE_DURATION_TESTS = [
    ("0", 0), ("5s", 5 * S), ("30s", 30 * S), ("1478s", 1478 * S),
    ("-5s", -5 * S), ("+5s", 5 * S), ("-0", 0), ("+0", 0),
    ("5.0s", 5 * S), ("5.6s", 5 * S + 600 * MS), ("5.s", 5 * S), (".5s", 500 * MS), ("1.0s", 1 * S),
    ("1.00s", 1 * S), ("1.004s", 1 * S + 4 * MS), ("1.0040s", 1 * S + 4 * MS),
    ("100.00100s", 100 * S + 1 * MS),
    ("10ns", 10 * NS), ("11us", 11 * US), ("12\u00b5s", 12 * US), ("12\u03bcs", 12 * US),
    ("13ms", 13 * MS), ("14s", 14 * S), ("15m", 15 * M), ("16h", 16 * H),
    ("3h30m", 3 * H + 30 * M), ("10.5s4m", 4 * M + 10 * S + 500 * MS),
    ("-2m3.4s", -(2 * M + 3 * S + 400 * MS)),
    ("1h2m3s4ms5us6ns", 1 * H + 2 * M + 3 * S + 4 * MS + 5 * US + 6 * NS),
    ("39h9m14.425s", 39 * H + 9 * M + 14 * S + 425 * MS),
    ("52763797000ns", 52763797000 * NS),
    ("0.3333333333333333333h", 20 * M),
    ("9007199254740993ns", (1 << 53) + 1),
    ("9223372036854775807ns", (1 << 63) - 1), ("9223372036854775.807us", (1 << 63) - 1),
    ("9223372036s854ms775us807ns", (1 << 63) - 1),
    ("-9223372036854775808ns", -(1 << 63)), ("-9223372036854775.808us", -(1 << 63)),
    ("-9223372036s854ms775us808ns", -(1 << 63)),
    ("-2562047h47m16.854775808s", -(1 << 63)),
    ("0.100000000000000000000h", 6 * M),
    ("0.830103483285477580700h", 49 * M + 48 * S + 372539827 * NS),
]  # fmt: skip

# parseDurationErrorTests: inputs Go refuses.
PARSE_DURATION_ERROR_TESTS = [
    "", "3", "-", "s", ".", "-.", ".s", "+.s", "1d",
    "\x85\x85", "\xffff", "hello \xffff world", "\ufffd", "\ufffd hello \ufffd world",
    "9223372036854775810ns", "9223372036854775808ns", "-9223372036854775809ns", "9223372036854776us",
    "3000000h", "9223372036854775.808us", "9223372036854ms775us808ns",
]  # fmt: skip


@pytest.mark.parametrize(("text", "nanos"), PARSE_DURATION_TESTS, ids=[t for t, _ in PARSE_DURATION_TESTS])
def test_parse_duration(text: str, nanos: int) -> None:
    """TestParseDuration/<input>"""
    assert go_duration_nanos(text) == nanos
    assert go_duration(text) == nanos / 1e9


@pytest.mark.parametrize(
    "text", PARSE_DURATION_ERROR_TESTS, ids=[repr(t) for t in PARSE_DURATION_ERROR_TESTS]
)
def test_parse_duration_errors(text: str) -> None:
    """TestParseDurationErrors/<input>"""
    assert go_duration_nanos(text) is None and go_duration(text) is None


def test_a_queue_takes_every_go_spelling_and_refuses_a_negative_delay_by_name() -> None:
    warnings: list[tuple[str, str]] = []
    props = parse(
        {"preemption.delay": "1h2m3s4ms5us6ns", "quota.preemption.delay": "-2m3.4s"},
        is_leaf=True,
        is_root=False,
        warn=lambda key, message: warnings.append((key, message)),
    )
    assert props.preemption_delay == pytest.approx(3723.004005006)
    assert props.quota_preemption_delay == DEFAULT_QUOTA_PREEMPTION_DELAY
    assert [key for key, _ in warnings] == ["quota.preemption.delay"]
    assert "'-2m3.4s' must be a positive duration" in warnings[0][1]


def test_the_shim_reads_its_configmap_durations_with_the_same_sign_rule() -> None:
    assert service_config.parse({"service.volumeBindTimeout": "+1.5s"}).config.volume_bind_timeout == 1.5
    refused = service_config.parse({"service.volumeBindTimeout": "-1s"})
    assert refused.config.volume_bind_timeout == service_config.ServiceConfig().volume_bind_timeout
    assert refused.warnings == ["service.volumeBindTimeout: '-1s' must be longer than 0; the default is kept"]
