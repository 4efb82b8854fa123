"""The REST API's error answer, as YuniKorn's: {"status_code", "message", "description"}."""

from __future__ import annotations

from aiohttp import web


def error_response(
    status: int, message: str, description: str | None = None, headers: dict[str, str] | None = None
) -> web.Response:
    body = {"status_code": status, "message": message, "description": description or message}
    return web.json_response(body, status=status, headers=headers)
