"""Bounds on what an HTTP request may bring, for every service's API (ASGI middleware).

A body over the limit is answered 413 with one line before anything parses it, so a huge
or endless request never reaches a handler (nor, in a coordinator, the leader's loop).
"""

from __future__ import annotations

from typing import Any

from fastapi.responses import JSONResponse

MAX_BODY_BYTES = 1024 * 1024
# A refused body is read (not kept) up to this much, so that a client that sends all of
# it before reading gets the 413 rather than a reset connection.
DRAIN_BYTES = 8 * MAX_BODY_BYTES

ASGIApp = Any  # the ASGI callables, untyped in starlette
Message = dict[str, Any]


class BodyLimit:
    """ASGI middleware: a request body over ``limit`` bytes is answered 413 with one line
    before anything parses it: at once when ``Content-Length`` says so, else as soon as
    the streamed body passes the limit. A body within it is read here and handed on."""

    def __init__(self, app: ASGIApp, limit: int = MAX_BODY_BYTES) -> None:
        self.app = app
        self.limit = limit

    async def __call__(self, scope: Message, receive: ASGIApp, send: ASGIApp) -> None:
        if scope["type"] != "http":
            await self.app(scope, receive, send)
            return
        declared = dict(scope["headers"]).get(b"content-length")
        if declared is not None and (not declared.isdigit() or int(declared) > self.limit):
            if not declared.isdigit():
                await _answer(send, 400, f"bad request: Content-Length {declared[:20]!r}")
                return
            await self._too_large(receive, send, int(declared), more=True)
            return
        chunks: list[bytes] = []
        size = 0
        while True:
            message = await receive()
            if message["type"] == "http.disconnect":
                return
            chunk: bytes = message.get("body", b"")
            size += len(chunk)
            if size > self.limit:
                await self._too_large(receive, send, None, more=bool(message.get("more_body")))
                return
            chunks.append(chunk)
            if not message.get("more_body"):
                break
        body = b"".join(chunks)
        handed = False

        async def replay() -> Message:
            nonlocal handed
            if handed:
                return await receive()
            handed = True
            return {"type": "http.request", "body": body, "more_body": False}

        await self.app(scope, replay, send)

    async def _too_large(
        self, receive: ASGIApp, send: ASGIApp, declared: int | None, *, more: bool
    ) -> None:
        if more and (declared is None or declared <= DRAIN_BYTES):
            drained = 0
            while drained <= DRAIN_BYTES:
                message = await receive()
                drained += len(message.get("body", b""))
                if message["type"] == "http.disconnect" or not message.get("more_body"):
                    break
        size = f" of {declared} bytes" if declared is not None else ""
        await _answer(
            send,
            413,
            f"request body{size} too large: at most {self.limit} bytes (1 MiB);"
            " nothing was applied",
        )


async def _answer(send: ASGIApp, status: int, error: str) -> None:
    response = JSONResponse({"error": error, "outcome": "not applied"}, status_code=status)
    await send({"type": "http.response.start", "status": status, "headers": response.raw_headers})
    await send({"type": "http.response.body", "body": response.body})
