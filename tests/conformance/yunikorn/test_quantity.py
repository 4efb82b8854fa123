"""yunikorn-core's quantity parsing tables, run as quantities a user writes in queues.yaml.

Upstream: pkg/common/resources/quantity_test.go at YUNIKORN_CORE_COMMIT (tests/conformance/upstream.py),
testing quantity.go's ParseQuantity and ParseVCore. YuniKorn reads every configured resource map with
NewResourceFromConf (resources.go), which parses `vcore` with ParseVCore (milli-cores: "1" is 1000,
"500m" is 500) and every other type with ParseQuantity. So a TestParseQuantity row is written as
`memory`, a TestParseVCore row as `vcore`.

Each case writes the row's input in the three places a configuration holds a resource map, one update
each: a queue's `resources.max`, a queue's `resources.guaranteed`, and a limit's `maxresources`. Upstream
refuses the configuration where the row expects an error and accepts it otherwise; when accepted, the
queue's maxResource / guaranteedResource on REST (/ws/v1/partition/{p}/queues, YuniKorn's dao: DAOMap,
int64 per type: memory in bytes, vcore in milli-cores) holds the row's quantity. Every map also holds
`pods: 1`: YuniKorn keeps a configured max or guaranteed only when some quantity in it is above zero
(queue.go setResources, StrictlyGreaterThanZero) and refuses a limit whose maxresources are all zero
(configvalidator.go checkLimit), so the companion keeps the "0" rows about parsing alone. (The zero
rules themselves are ported in test_resources.py, TestStrictlyGreaterThanZero.)

Ported: TestParseQuantity 22 of 22 rows; TestParseVCore 22 of 22 rows.
Not ported: none.
"""

from __future__ import annotations

import json
from typing import Any

import pytest

from tests.conformance.core_probe import CoreProbe
from tests.conformance.upstream import YUNIKORN_CORE_COMMIT, yunikorn_case

assert YUNIKORN_CORE_COMMIT  # the commit the tables below were read at

COMPANION = "pods"

# (row name, input, quantity or None when upstream refuses it)
PARSE_QUANTITY: list[tuple[str, str, int | None]] = [
    ("0", "0", 0),
    ("1", "1", 1),
    ("spaces", " 25k ", 25 * 1000),
    ("spaces2", " 25  k ", 25 * 1000),
    ("max", "9223372036854775807", 9223372036854775807),
    ("overflow", "9223372036854775808", None),
    ("overflow2", "1000E", None),
    ("wrong unit", "5X", None),
    ("milli", "500m", None),
    ("negative", "-1", None),
    ("2k", "2k", 2 * 1000),
    ("3M", "3M", 3 * 1000**2),
    ("4G", "4G", 4 * 1000**3),
    ("5T", "5T", 5 * 1000**4),
    ("6P", "6P", 6 * 1000**5),
    ("7E", "7E", 7 * 1000**6),
    ("2Ki", "2Ki", 2 * 1024),
    ("3Mi", "3Mi", 3 * 1024**2),
    ("4Gi", "4Gi", 4 * 1024**3),
    ("5Ti", "5Ti", 5 * 1024**4),
    ("6Pi", "6Pi", 6 * 1024**5),
    ("7Ei", "7Ei", 7 * 1024**6),
]

PARSE_VCORE: list[tuple[str, str, int | None]] = [
    ("0", "0", 0),
    ("1", "1", 1000),
    ("spaces", " 25k ", 25 * 1000 * 1000),
    ("spaces2", " 25  k ", 25 * 1000 * 1000),
    ("max", "9223372036854775", 9223372036854775000),
    ("overflow", "9223372036854776", None),
    ("overflow2", "1000P", None),
    ("wrong unit", "5X", None),
    ("500m", "500m", 500),
    ("negative", "-1", None),
    ("2k", "2k", 2 * 1000 * 1000),
    ("3M", "3M", 3 * 1000 * 1000**2),
    ("4G", "4G", 4 * 1000 * 1000**3),
    ("5T", "5T", 5 * 1000 * 1000**4),
    ("6P", "6P", 6 * 1000 * 1000**5),
    ("7E", "7E", None),
    ("2Ki", "2Ki", 2 * 1000 * 1024),
    ("3Mi", "3Mi", 3 * 1000 * 1024**2),
    ("4Gi", "4Gi", 4 * 1000 * 1024**3),
    ("5Ti", "5Ti", 5 * 1000 * 1024**4),
    ("6Pi", "6Pi", 6 * 1000 * 1024**5),
    ("7Ei", "7Ei", None),
]


def _cases() -> list[Any]:
    out = []
    for test, resource_type, rows in (
        ("TestParseQuantity", "memory", PARSE_QUANTITY),
        ("TestParseVCore", "vcore", PARSE_VCORE),
    ):
        for name, text, quantity in rows:
            out.append(pytest.param(resource_type, text, quantity, id=yunikorn_case(test, name)))
    return out


def _map(resource_type: str, text: str) -> str:
    # JSON strings are YAML double-quoted scalars: the input reaches the parser byte for byte.
    return "{" + f'{resource_type}: {json.dumps(text)}, {COMPANION}: "1"' + "}"


def _queue_config(resources: str) -> str:
    return f"""
partitions:
  - name: default
    queues:
      - name: root
        submitacl: "*"
        queues:
          - name: a
            resources:
              {resources}
"""


def _limit_config(maxresources: str) -> str:
    return f"""
partitions:
  - name: default
    queues:
      - name: root
        submitacl: "*"
        queues:
          - name: a
            limits:
              - limit: user limit
                users: [alice]
                maxresources: {maxresources}
"""


@pytest.mark.parametrize(("resource_type", "text", "quantity"), _cases())
async def test_quantity(probe: CoreProbe, resource_type: str, text: str, quantity: int | None) -> None:
    accepted = quantity is not None
    expected = {resource_type: quantity, COMPANION: 1}
    written = _map(resource_type, text)
    for field, dao_field in (("max", "maxResource"), ("guaranteed", "guaranteedResource")):
        verdict = await probe.update(_queue_config(f"{field}: {written}"))
        assert verdict.accepted == accepted, (field, text, verdict)
        if accepted:
            queue = (await probe.queues())["root.a"]
            assert queue.get(dao_field) == expected, (field, text, queue.get(dao_field))
    verdict = await probe.update(_limit_config(written))
    assert verdict.accepted == accepted, ("limit maxresources", text, verdict)
