"""A body is read up to its cap and no further: refused with 413 the moment it passes it."""

from __future__ import annotations

import asyncio
import json
from collections.abc import Iterator
from typing import Any

from link_plugin.bodies import CappedBodies

CAP = 1000
Message = dict[str, Any]


class Seen:
    """What the app behind the cap was given."""

    def __init__(self) -> None:
        self.bodies: list[bytes] = []
        self.after: list[str] = []

    async def app(self, scope: Any, receive: Any, send: Any) -> None:
        message = await receive()
        self.bodies.append(message.get("body", b""))
        self.after.append((await receive())["type"])
        await send({"type": "http.response.start", "status": 200, "headers": []})
        await send({"type": "http.response.body", "body": b"ok"})


def run(pieces: list[bytes], *, declared: int | None = None, path: str = "/x") -> tuple[Seen, list[Message], int]:
    """The cap in front of Seen, given a body in `pieces`; what the app saw, what went out, how
    many pieces were read."""
    seen = Seen()
    sent: list[Message] = []
    read = 0
    messages: Iterator[Message] = iter(
        [{"type": "http.request", "body": p, "more_body": i < len(pieces) - 1} for i, p in enumerate(pieces)]
        + [{"type": "http.disconnect"}]
    )

    async def receive() -> Message:
        nonlocal read
        read += 1
        return next(messages)

    async def send(message: Message) -> None:
        sent.append(message)

    headers = [(b"content-length", str(declared).encode())] if declared is not None else []
    scope = {"type": "http", "path": path, "headers": headers}
    capped = CappedBodies(seen.app, lambda p: CAP if p == "/x" else 10)
    asyncio.run(capped(scope, receive, send))
    return seen, sent, read


def test_a_body_within_the_cap_reaches_the_app_whole_then_the_server_speaks() -> None:
    seen, sent, _ = run([b"a" * 400, b"b" * 400, b"c" * 200])
    assert seen.bodies == [b"a" * 400 + b"b" * 400 + b"c" * 200]
    assert seen.after == ["http.disconnect"], "after the body, what the server says comes through"
    assert sent[0]["status"] == 200


def test_a_body_without_a_length_is_refused_the_moment_it_passes_the_cap() -> None:
    seen, sent, read = run([b"x" * 600, b"x" * 600, b"x" * 600, b"x" * 600])
    assert seen.bodies == [], "the app never sees it"
    assert read == 2, "reading stopped at the piece that passed the cap"
    assert sent[0]["status"] == 413 and (b"connection", b"close") in sent[0]["headers"]
    error = json.loads(sent[1]["body"])["error"]
    assert error["code"] == 413 and "1000 bytes" in error["message"]


def test_a_body_that_says_it_is_too_large_is_refused_unread() -> None:
    seen, sent, read = run([b"x" * 10], declared=5000)
    assert (seen.bodies, read, sent[0]["status"]) == ([], 0, 413)
    _, sent, _ = run([b"x" * 20], path="/small")
    assert sent[0]["status"] == 413, "each path its own cap"
