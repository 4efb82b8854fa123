"""Shared builders for the priority scheduling tests (test_priority_*.py)."""

from __future__ import annotations

from core.objects import priority
from core.objects.application import Application
from core.objects.queue import Queue
from tests.unit.domain_helpers import Cluster


def _config(queues: str, root_properties: str = "") -> str:
    """A one-partition configuration; `queues` is the YAML of root's children, indented 8 spaces."""
    props = f"        properties:\n{root_properties}" if root_properties else ""
    return f"""
partitions:
  - name: default
    queues:
      - name: root
        submitacl: "*"
{props}        queues:
{queues}"""


def _q(c: Cluster, name: str) -> Queue:
    queue = c.partition.find_queue(name)
    assert queue is not None, name
    return queue


def _a(c: Cluster, app_id: str) -> Application:
    return c.partition.applications[app_id]


def _apps(c: Cluster, *placements: tuple[str, str]) -> None:
    for app_id, queue in placements:
        c.app(app_id, queue)
        assert app_id in c.partition.applications, f"{app_id} was rejected"


def _check_caches(c: Cluster) -> None:
    """Every cached value agrees with a computation from the asks themselves."""
    for queue in c.partition.queues.values():
        assert queue.current_priority == priority.from_scratch(queue), queue.full_name


def _names(queues: list[Queue]) -> list[str]:
    return [q.name for q in queues]
