"""YuniKorn's periodic health check: the checks run every `health.checkInterval` (30 s unless an RM's
extraConfig says otherwise; 0 turns it off), a failed one logged as a warning with its diagnosis, the
last result kept (`last`)."""

from __future__ import annotations

import asyncio
import contextlib
from typing import Any

import structlog

from core.config.extra_config import DEFAULT_HEALTH_CHECK_INTERVAL
from core.scheduler.cluster import ClusterContext
from core.views.health_view import scheduler_health

log = structlog.get_logger("pykorn.daemon")


class HealthLoop:
    def __init__(self, context: ClusterContext, interval: float = DEFAULT_HEALTH_CHECK_INTERVAL) -> None:
        self.context = context
        self.interval = interval
        self.last: dict[str, Any] | None = None  # the last periodic result (None while it is off)
        self._task: asyncio.Task[None] | None = None
        self._closed = False  # the core is stopping: no new loop, whatever an RM sends meanwhile

    def start(self) -> None:
        """Check once now, then every interval (if any)."""
        self.run_once()
        if self.interval > 0:
            self._task = asyncio.create_task(self._run())
            log.info("periodic health checker started", intervalSeconds=self.interval)
        else:
            log.info("periodic health checker disabled (health.checkInterval)")

    def set_interval(self, interval: float) -> None:
        """A new health.checkInterval: the loop starts again at it, as YuniKorn restarts its checker."""
        if interval == self.interval or self._closed:
            return
        self.stop()
        self.interval = interval
        if interval > 0:
            self._task = asyncio.create_task(self._run())
            log.info("periodic health checker restarted", intervalSeconds=interval)
        else:
            self.last = None  # no periodic result to go stale: the REST healthcheck checks when asked
            log.info("periodic health checker disabled (health.checkInterval)")

    def close(self) -> None:
        """The core is stopping: the loop ends for good."""
        self._closed = True
        self.stop()

    def stop(self) -> None:
        if self._task is not None:
            self._task.cancel()
            self._task = None

    def run_once(self) -> None:
        result = scheduler_health(self.context)
        self.last = result
        metrics = self.context.metrics
        metrics.health_checks = len(result["HealthChecks"])
        metrics.health_failed = [
            (c["Name"], c["Description"]) for c in result["HealthChecks"] if not c["Succeeded"]
        ]
        for check in result["HealthChecks"]:
            if not check["Succeeded"]:
                log.warning(
                    "scheduler is not healthy", name=check["Name"], description=check["Description"],
                    message=check["DiagnosisMessage"],
                )  # fmt: skip

    async def _run(self) -> None:
        with contextlib.suppress(asyncio.CancelledError):
            while True:
                await asyncio.sleep(self.interval)
                try:
                    self.run_once()
                except Exception:
                    log.exception("health check failed")
