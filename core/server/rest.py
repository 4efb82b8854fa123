"""The read-only REST state API on YuniKorn's ws/v1 paths, served in the core's event loop.

Handlers are synchronous readers between engine steps (see core.state), so every answer is one
consistent snapshot. Unknown objects answer 404 with {"status_code", "message", "description"}, the
shape YuniKorn's web service uses for errors.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

import structlog
from aiohttp import web

from core import state
from core.cluster import ClusterContext

log = structlog.get_logger("pykorn.rest")

Handler = Callable[[web.Request], Any]


def _error(status: int, message: str) -> web.Response:
    body = {"status_code": status, "message": message, "description": message}
    return web.json_response(body, status=status)


class StateAPI:
    def __init__(self, context: ClusterContext) -> None:
        self.context = context

    def routes(self) -> list[web.RouteDef]:
        get = web.get
        return [
            get("/ws/v1/partitions", self._wrap(self.partitions)),
            get("/ws/v1/partition/{p}/queues", self._wrap(self.queues)),
            get("/ws/v1/partition/{p}/queue/{q}", self._wrap(self.queue)),
            get("/ws/v1/partition/{p}/queue/{q}/applications", self._wrap(self.queue_applications)),
            get("/ws/v1/partition/{p}/nodes", self._wrap(self.nodes)),
            get("/ws/v1/partition/{p}/node/{n}", self._wrap(self.node)),
            get("/ws/v1/partition/{p}/application/{a}", self._wrap(self.application)),
            get("/ws/v1/partition/{p}/applications/{s}", self._wrap(self.applications)),
            get("/ws/v1/scheduler/healthcheck", self._wrap(self.healthcheck)),
        ]

    def _wrap(self, read: Callable[[web.Request], Any]) -> Handler:
        async def handler(request: web.Request) -> web.Response:
            try:
                return web.json_response(read(request))
            except state.NotFound as exc:
                return _error(404, str(exc))

        return handler

    def _part(self, request: web.Request) -> Any:
        return state.find_partition(self.context, request.match_info["p"])

    def partitions(self, request: web.Request) -> Any:
        return state.partitions(self.context)

    def queues(self, request: web.Request) -> Any:
        return state.queue_tree(self._part(request))

    def queue(self, request: web.Request) -> Any:
        part = self._part(request)
        return state.queue_info(part, state.find_queue(part, request.match_info["q"]), recurse=True)

    def queue_applications(self, request: web.Request) -> Any:
        part = self._part(request)
        return state.queue_applications(part, state.find_queue(part, request.match_info["q"]))

    def nodes(self, request: web.Request) -> Any:
        return state.nodes(self._part(request))

    def node(self, request: web.Request) -> Any:
        part = self._part(request)
        return state.node_info(part, state.find_node(part, request.match_info["n"]))

    def application(self, request: web.Request) -> Any:
        part = self._part(request)
        return state.application_info(part, state.find_application(part, request.match_info["a"]))

    def applications(self, request: web.Request) -> Any:
        return state.applications_in_state(self._part(request), request.match_info["s"])

    def healthcheck(self, request: web.Request) -> Any:
        # What the engine can vouch for cheaply: every partition's books balance against its nodes.
        checks = []
        for part in self.context.partitions.values():
            over = [n.node_id for n in part.nodes.values() if not n.fits_capacity(n.allocated)]
            checks.append(
                {
                    "Name": f"Nodes within capacity ({part.display_name})",
                    "Succeeded": not over,
                    "Description": "no node holds more than its capacity",
                    "DiagnosisMessage": f"over capacity: {over}" if over else "",
                }
            )
        return {"Healthy": all(c["Succeeded"] for c in checks), "HealthChecks": checks}


class RestServer:
    def __init__(self, context: ClusterContext, listen: str) -> None:
        self.listen = listen
        self.app = web.Application()
        self.app.router.add_routes(StateAPI(context).routes())
        self.app.router.add_route("*", "/{tail:.*}", self._unknown)
        self._runner = web.AppRunner(self.app, access_log=None)
        self.port = 0

    async def _unknown(self, request: web.Request) -> web.Response:
        return _error(404, f"no such endpoint: {request.method} {request.path}")

    async def start(self) -> int:
        host, port = self.listen.rsplit(":", 1)
        await self._runner.setup()
        site = web.TCPSite(self._runner, host, int(port))
        await site.start()
        self.port = site._server.sockets[0].getsockname()[1]  # type: ignore[union-attr]
        log.info("rest api listening", address=f"{host}:{self.port}")
        return self.port

    async def stop(self) -> None:
        await self._runner.cleanup()
