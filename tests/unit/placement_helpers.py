"""Shared setup for the PlacementManager tests: a queue tree, rules from YAML, requests, refusals."""

from __future__ import annotations

import textwrap

import pytest

from core.config import load_config
from core.objects.queue_tree import QueueTree
from core.placement import PlacementManager, PlacementRequest
from core.placement.manager import PlacementRefused

QUEUES = """
- name: root
  submitacl: "*"
  queues:
    - name: a
    - name: b
    - name: users
      parent: true
    - name: team
      queues:
        - name: web
"""


def _config(rules: str, queues: str = QUEUES) -> str:
    return (
        "partitions:\n"
        "  - name: default\n"
        "    placementrules:\n"
        f"{textwrap.indent(textwrap.dedent(rules).strip(), ' ' * 6)}\n"
        "    queues:\n"
        f"{textwrap.indent(textwrap.dedent(queues).strip(), ' ' * 6)}\n"
    )


def _setup(rules: str, queues: str = QUEUES) -> tuple[PlacementManager, QueueTree]:
    part = load_config(_config(rules, queues)).config.partitions[0]
    return PlacementManager(part.placement_rules), QueueTree(part.root)


def _req(
    queue: str = "",
    user: str = "alice",
    groups: tuple[str, ...] = (),
    tags: dict[str, str] | None = None,
    app_id: str = "app-1",
) -> PlacementRequest:
    return PlacementRequest(app_id, queue, user, groups, tags or {})


def _refusal(manager: PlacementManager, tree: QueueTree, req: PlacementRequest) -> str:
    with pytest.raises(PlacementRefused) as info:
        manager.place(req, tree)
    return str(info.value)
