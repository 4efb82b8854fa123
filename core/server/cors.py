"""CORS as YuniKorn's web service sends it, so its web UI can be served from another origin: every
answer allows any origin, and a preflight (OPTIONS) is answered at once, before any token check (a
browser sends no credentials with it)."""

from __future__ import annotations

from collections.abc import Awaitable, Callable

from aiohttp import web

ALLOW_HEADERS = "X-Requested-With,Content-Type,Accept,Origin"
Handler = Callable[[web.Request], Awaitable[web.StreamResponse]]


def cors_headers(method: str) -> dict[str, str]:
    return {
        "Access-Control-Allow-Origin": "*",
        "Access-Control-Allow-Methods": "OPTIONS, POST" if method == "POST" else "GET, OPTIONS",
        "Access-Control-Allow-Headers": ALLOW_HEADERS,
    }


@web.middleware
async def cors(request: web.Request, handler: Handler) -> web.StreamResponse:
    if request.method == "OPTIONS":
        wanted = request.headers.get("Access-Control-Request-Method", "GET").upper()
        return web.Response(status=200, headers=cors_headers(wanted))
    try:
        response = await handler(request)
    except web.HTTPException as exc:
        exc.headers.update(cors_headers(request.method))
        raise
    if not response.prepared:  # a stream already sent its headers (set before it started)
        response.headers.update(cors_headers(request.method))
    return response
