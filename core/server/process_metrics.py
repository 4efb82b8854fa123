"""The process's own metrics (`process_*`: CPU, resident memory, open files, start time; `python_info`;
`python_gc_*`), as every Prometheus client library exports them, from prometheus_client's collectors.

The core appends them to /ws/v1/metrics (the shim keeps a registry of its own: it imports nothing of
the core). They are read at scrape time from /proc and the interpreter: nothing on the scheduling path.
"""

from __future__ import annotations

from prometheus_client import (
    CollectorRegistry,
    GCCollector,
    PlatformCollector,
    ProcessCollector,
    generate_latest,
)

_REGISTRY = CollectorRegistry(auto_describe=False)
ProcessCollector(registry=_REGISTRY)
PlatformCollector(registry=_REGISTRY)
GCCollector(registry=_REGISTRY)


def process_families() -> str:
    """The families in Prometheus' text format, each line ending in a newline."""
    return generate_latest(_REGISTRY).decode()
