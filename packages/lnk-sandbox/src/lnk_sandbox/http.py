"""Just enough HTTP/1.1 for the proxy: a message head read, judged, rewritten and passed on.

The proxy reads only the head of each request and response; bodies pass through as bytes. It
answers one request per connection and says so (`Connection: close`), so a second request never
rides on a connection judged for the first.
"""

from __future__ import annotations

import asyncio
from dataclasses import dataclass, field

MAX_HEAD = 256 * 1024
"""The longest head the proxy reads, which is also each stream's buffer limit."""
HOP_BY_HOP = ("connection", "keep-alive", "proxy-connection", "proxy-authorization", "proxy-authenticate", "te")


class BadMessage(Exception):
    """A head the proxy can't read: answered 400 and closed."""


@dataclass
class Head:
    """A request line or status line with its headers, in the order they came."""

    start: tuple[str, str, str]
    headers: list[tuple[str, str]] = field(default_factory=list)

    @property
    def method(self) -> str:
        return self.start[0]

    @property
    def target(self) -> str:
        return self.start[1]

    @property
    def status(self) -> int:
        return int(self.start[1])

    def get(self, name: str) -> str | None:
        lower = name.lower()
        return next((value for key, value in self.headers if key.lower() == lower), None)

    def without(self, *names: str) -> Head:
        drop = {name.lower() for name in names}
        return Head(self.start, [(k, v) for k, v in self.headers if k.lower() not in drop])

    def with_header(self, name: str, value: str) -> Head:
        return Head(self.start, [*self.without(name).headers, (name, value)])

    def closing(self) -> Head:
        """The same message for one exchange: hop-by-hop headers dropped, `Connection: close` said."""
        return self.without(*HOP_BY_HOP).with_header("Connection", "close")

    def encode(self) -> bytes:
        lines = [" ".join(self.start), *(f"{key}: {value}" for key, value in self.headers)]
        return ("\r\n".join(lines) + "\r\n\r\n").encode("latin-1")


def parse(data: bytes) -> Head:
    try:
        text = data.decode("latin-1")
    except UnicodeDecodeError as exc:  # pragma: no cover - latin-1 decodes every byte
        raise BadMessage("not text") from exc
    lines = text.removesuffix("\r\n\r\n").split("\r\n")
    parts = lines[0].split(" ", 2)
    if len(parts) != 3 or not parts[0] or not parts[1]:
        raise BadMessage(f"a malformed first line: {lines[0][:80]!r}")
    headers = []
    for line in lines[1:]:
        name, sep, value = line.partition(":")
        if not sep or not name or name != name.strip() or line[0] in " \t":
            raise BadMessage(f"a malformed header line: {line[:80]!r}")
        headers.append((name, value.strip()))
    return Head((parts[0], parts[1], parts[2]), headers)


async def read_head(reader: asyncio.StreamReader) -> Head | None:
    """The next head on a connection, or None when it closed before one began."""
    try:
        data = await reader.readuntil(b"\r\n\r\n")
    except asyncio.IncompleteReadError as exc:
        if not exc.partial.strip():
            return None
        raise BadMessage("the connection closed in the middle of a head") from exc
    except asyncio.LimitOverrunError as exc:
        raise BadMessage(f"a head longer than {MAX_HEAD} bytes") from exc
    return parse(data)


def answer(status: int, reason: str, text: str) -> bytes:
    """A whole plain-text response from the proxy itself."""
    body = text.encode()
    head = Head(
        ("HTTP/1.1", str(status), reason),
        [("Content-Type", "text/plain; charset=utf-8"), ("Content-Length", str(len(body))), ("Connection", "close")],
    )
    return head.encode() + body
