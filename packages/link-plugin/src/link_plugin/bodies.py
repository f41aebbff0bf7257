"""Request bodies read with a cap, for every server Link runs on ASGI (the harness, lnk's sockets).

A body is read before the app sees it, and reading stops at the cap: a body that says it is
larger (`Content-Length`) is refused before a byte of it is read, and one without a length
(chunked) is refused the moment it passes the cap. Either way the answer is 413 with
`Connection: close`, and the connection closes with the rest unread, so a server never holds
more of a body than its cap, whatever the client sends.

    app = CappedBodies(app, lambda path: 1024 * 1024 if path == "/v1/chat/completions" else 64 * 1024)

A body within the cap reaches the app whole, as one message; what the app receives after it
(the client going away) comes straight from the server.
"""

from __future__ import annotations

import json
from collections.abc import Awaitable, Callable, MutableMapping
from typing import Any

Scope = MutableMapping[str, Any]
Message = MutableMapping[str, Any]
Receive = Callable[[], Awaitable[Message]]
Send = Callable[[Message], Awaitable[None]]
App = Callable[[Scope, Receive, Send], Awaitable[None]]

SMALL = 64 * 1024
"""A cap for what takes a small JSON body, or none."""


def _declared(scope: Scope) -> int | None:
    for name, value in scope.get("headers", []):
        if name.lower() == b"content-length":
            return int(value) if value.isdigit() else None
    return None


def size(count: int) -> str:
    """`count` bytes for a person: 1 MiB, 64 KiB, 12 bytes."""
    for unit, scale in (("MiB", 1024 * 1024), ("KiB", 1024)):
        if count >= scale and count % scale == 0:
            return f"{count // scale} {unit}"
    return f"{count} bytes"


class CappedBodies:
    """ASGI middleware: each request's body read up to `cap(path)` bytes, or refused with 413."""

    def __init__(self, app: App, cap: Callable[[str], int]) -> None:
        self.app = app
        self.cap = cap

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        if scope["type"] != "http":
            await self.app(scope, receive, send)
            return
        cap = self.cap(scope["path"])
        declared = _declared(scope)
        if declared is not None and declared > cap:
            await self._refuse(send, cap)
            return
        pieces: list[bytes] = []
        read = 0
        first: Message
        while True:
            message = await receive()
            if message["type"] != "http.request":
                first = message  # gone before its body was whole: the app is told so
                break
            piece = message.get("body", b"")
            read += len(piece)
            if read > cap:
                await self._refuse(send, cap)
                return
            pieces.append(piece)
            if not message.get("more_body", False):
                first = {"type": "http.request", "body": b"".join(pieces), "more_body": False}
                break
        pieces.clear()
        given = False

        async def replay() -> Message:
            nonlocal given
            if not given:
                given = True
                return first
            return await receive()

        await self.app(scope, replay, send)

    @staticmethod
    async def _refuse(send: Send, cap: int) -> None:
        message = f"the request's body is larger than this address takes ({size(cap)}): nothing of it was kept"
        body = json.dumps({"error": {"message": message, "type": "invalid_request_error", "code": 413}}).encode()
        headers = [
            (b"content-type", b"application/json"),
            (b"content-length", str(len(body)).encode()),
            (b"connection", b"close"),
        ]
        await send({"type": "http.response.start", "status": 413, "headers": headers})
        await send({"type": "http.response.body", "body": body, "more_body": False})
