"""`pykorn status` draws a bar for every resource type a queue uses or is limited in, in the units a
person reads (pykorn_cli/status.py `render`, from the REST API's JSON as YuniKorn's dao writes it)."""

from __future__ import annotations

import io

from pykorn_cli.status import render

GI = 2**30


def test_every_resource_has_its_bar_in_human_units() -> None:
    queue = {
        "queuename": "root.team",
        "isPriorityFence": False,
        "allocatedResource": {"memory": 4 * GI, "vcore": 8000},
        "guaranteedResource": {"memory": 8 * GI},
        "maxResource": {"memory": 8 * GI, "vcore": 8000},
        "pendingResource": {"vcore": 2500},
    }
    root = {"queuename": "root", "isPriorityFence": False, "children": [queue]}
    out = io.StringIO()
    render([{
        "partition": {"name": "default", "clusterId": "rm", "totalNodes": 1},
        "queues": root, "nodes": [], "applications": [],
    }], out)  # fmt: skip
    lines = out.getvalue().splitlines()
    at = next(i for i, line in enumerate(lines) if line.strip().startswith("team"))
    memory, vcore = lines[at], lines[at + 1]
    # memory at half of both; vcore full against its max (no guarantee: no bar there)
    half = "[##########..........]  50%"
    assert memory == f"    team                   memory        4.0Gi {half} | {half}  pending {{vcore: 2.5}}"
    assert vcore == " " * 27 + "vcore             8" + " " * 29 + "| [####################] 100%"
    assert lines[at + 2] == ""  # nodes follow: the queue has no third type
