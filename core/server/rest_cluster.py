"""The cluster-wide REST endpoints of YuniKorn's routes.go beyond the partition ones in
core.server.rest: clusters, history, node utilisation, placement rules, the queue-scoped
application reads, the full state dump and the stack, and what Go's pprof paths answer here."""

from __future__ import annotations

import time
from collections.abc import Callable
from typing import Any

from aiohttp import web

from core.config.as_json import config_json
from core.scheduler.cluster import ClusterContext
from core.server.event_json import event_record
from core.server.rest_errors import error_response
from core.views import app_views, cluster_views, dao

Handler = Callable[[web.Request], Any]
JSON_DUMPS_INDENT = 2


class ClusterAPI:
    def __init__(self, context: ClusterContext, config_text: Callable[[str], str]) -> None:
        """`config_text(rmID)`: the queues.yaml in force for an RM (as /ws/v1/config serves it)."""
        self.context = context
        self.config_text = config_text

    def routes(self, wrap: Callable[[Handler], Any]) -> list[web.RouteDef]:
        get = web.get
        return [
            get("/ws/v1/clusters", wrap(lambda r: cluster_views.clusters(self.context))),
            get("/ws/v1/history/apps", wrap(lambda r: cluster_views.application_history(self.context))),
            get("/ws/v1/history/containers", wrap(lambda r: cluster_views.container_history(self.context))),
            get(
                "/ws/v1/scheduler/node-utilizations",
                wrap(lambda r: cluster_views.node_utilizations(self.context)),
            ),
            get("/ws/v1/scheduler/node-utilization", wrap(self.node_utilization)),
            get("/ws/v1/partition/{p}/placementrules", wrap(self.placement_rules)),
            get("/ws/v1/partition/{p}/queue/{q}/application/{a}", wrap(self.queue_application)),
            get("/ws/v1/partition/{p}/queue/{q}/applications/{s}", wrap(self.queue_applications_in_state)),
            get("/debug/fullstatedump", self.full_state_dump),
            get("/debug/stack", self.stack),
            get("/ws/v1/fullstatedump", self.to_debug),
            get("/ws/v1/stack", self.to_debug),
            get("/debug/pprof/{tail:.*}", self.pprof),
        ]

    def _part(self, request: web.Request) -> Any:
        return dao.find_partition(self.context, request.match_info["p"])

    def placement_rules(self, request: web.Request) -> Any:
        return cluster_views.placement_rules(self._part(request))

    def queue_application(self, request: web.Request) -> Any:
        part = self._part(request)
        queue = dao.find_queue(part, request.match_info["q"])
        return app_views.queue_application(part, queue, request.match_info["a"])

    def queue_applications_in_state(self, request: web.Request) -> Any:
        part = self._part(request)
        queue = dao.find_queue(part, request.match_info["q"])
        status = request.query.get("status", "")
        return app_views.queue_applications_in_state(part, queue, request.match_info["s"], status)

    def node_utilization(self, request: web.Request) -> Any:
        """Deprecated upstream: the default partition's nodes bucketed by its dominant resource."""
        part = next((p for p in self.context.partitions.values() if p.name == "default"), None)
        if part is None:
            raise dao.NotFound("partition 'default' not found")
        return cluster_views.dominant_node_utilization(part)

    async def to_debug(self, request: web.Request) -> web.Response:
        """As upstream: /ws/v1/stack and /ws/v1/fullstatedump moved to /debug."""
        target = request.path_qs.replace("/ws/v1", "/debug", 1)
        body = f'<a href="{target}">Moved Permanently</a>.\n'
        return web.Response(status=301, text=body, content_type="text/html", headers={"Location": target})

    async def stack(self, request: web.Request) -> web.Response:
        return web.Response(text=cluster_views.stack(), content_type="text/plain")

    async def full_state_dump(self, request: web.Request) -> web.Response:
        context = self.context
        events = [event_record(i, e) for i, e in context.events.since(context.events.lowest_id, 10_000)]
        dump = cluster_views.full_state_dump(context, time.time(), self._configs(), events)
        return web.json_response(dump, dumps=_pretty)

    def _configs(self) -> dict[str, Any]:
        return {rm_id: config_json(self.config_text(rm_id)) for rm_id in sorted(self.context.configs)}

    async def pprof(self, request: web.Request) -> web.Response:
        message = "Go's pprof profiles do not exist in pykorn (a Python process)"
        description = "use /debug/stack for every thread's stack, or a Python profiler (py-spy) on the core"
        return error_response(501, message, description)


def _pretty(value: Any) -> str:
    import json

    return json.dumps(value, indent=JSON_DUMPS_INDENT)
