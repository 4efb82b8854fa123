"""Shared text and checks for the scenario loader tests.

The invalid scenarios are written inline; the line numbers expected are counted by hand from the text
(line 1 is the first line after the opening quotes). HEADER, shared by many of them, is 12 lines.
"""

from __future__ import annotations

from pathlib import Path

import pytest

from shim_fake.scenario import ScenarioError
from shim_fake.scenario.core_formats import Problem
from tests.fake_scenarios import parse_scenario

GI = 2**30

# 12 lines: leaves root.a and root.p.c, parent root.p; one node n1 of 4Gi and 4 cores.
HEADER = """\
queues:
  partitions:
    - name: default
      queues:
        - name: root
          queues:
            - name: a
            - name: p
              queues:
                - name: c
nodes:
  - {id: n1, resources: {memory: 4Gi, vcore: 4}}
"""
assert len(HEADER.splitlines()) == 12

# 10 lines: the same queues, for scenarios that write their own nodes.
QUEUES = "\n".join(HEADER.splitlines()[:10]) + "\n"


def _after_header(body: str) -> str:
    return HEADER + body


def _after_queues(body: str) -> str:
    return QUEUES + body


def _problems(text: str, base_dir: Path | None = None) -> list[Problem]:
    with pytest.raises(ScenarioError) as info:
        parse_scenario(text, base_dir=base_dir)
    assert info.value.problems, "a ScenarioError always lists its problems"
    return info.value.problems


def _at(problems: list[Problem], path: str, line: int) -> Problem:
    """The problem whose path contains `path` and that is on `line`; fails listing them all if none is."""
    matches = [p for p in problems if path in p.path and p.line == line]
    assert matches, f"no problem at {path!r} line {line}; got:\n" + "\n".join(str(p) for p in problems)
    return matches[0]
