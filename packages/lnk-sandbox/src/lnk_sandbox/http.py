"""Just enough HTTP/1.1 for the proxy: a message head read (by h11), judged, rewritten and passed on.

h11 reads each head and refuses what isn't HTTP (a NUL, a control or a space in the request
target, a bad header name or value, conflicting lengths, a transfer coding other than chunked,
an HTTP/1.1 request without a Host), so the proxy judges only what parsed. A request's head is
held to RFC 9112's own form, stricter than h11 reads it: every line ends in CRLF (never a bare
LF or CR) and no header is folded onto the next line; a request with both a length and a
transfer coding is refused. What goes on is the head as parsed, written again (one
Content-Length however many the same came), never the bytes that came, so the peer behind the
proxy can't read a head two ways. Bodies are never
read into memory: what follows a head passes through as bytes, as it comes. The proxy answers
one request per connection and says so (`Connection: close`), so a second request never rides
on a connection judged for the first.
"""

from __future__ import annotations

import asyncio
from dataclasses import dataclass, field

import h11

MAX_HEAD = 256 * 1024
"""The longest head the proxy reads, which is also each stream's buffer limit."""
READ = 64 * 1024
HOP_BY_HOP = ("connection", "keep-alive", "proxy-connection", "proxy-authorization", "proxy-authenticate", "te")


class BadMessage(Exception):
    """A head that isn't HTTP: a request's is answered 400, an upstream's 502."""


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


@dataclass
class Message:
    """A head, and what the connection carried after it in the same read: its body's first bytes."""

    head: Head
    rest: bytes = b""


def _text(data: bytes) -> str:
    return data.decode("latin-1")


def _headers(event: h11.Request | h11.Response | h11.InformationalResponse) -> list[tuple[str, str]]:
    return [(_text(name), _text(value)) for name, value in event.headers.raw_items()]


async def _next(reader: asyncio.StreamReader, connection: h11.Connection, read: bytearray | None = None) -> object:
    """h11's next event, reading only as much as it needs for a head (the rest stays unread);
    what was read is added to `read` when given."""
    while True:
        try:
            event = connection.next_event()
        except h11.RemoteProtocolError as exc:
            raise BadMessage(str(exc)) from None
        if event is not h11.NEED_DATA:
            return event
        data = await reader.read(READ)
        if read is not None:
            read += data
        connection.receive_data(data)


def _strict(head: bytes) -> None:
    """The parts of RFC 9112 a head must keep beyond what h11 insists on: h11 also takes a bare
    LF for a line's end and unfolds a header continued on the next line (obs-fold)."""
    ends = head.count(b"\r\n")
    if head.count(b"\n") != ends or head.count(b"\r") != ends:
        raise BadMessage("a line of the head doesn't end in CRLF")
    if b"\r\n " in head or b"\r\n\t" in head:
        raise BadMessage("a header is folded onto the next line (obs-fold)")


async def read_request(reader: asyncio.StreamReader) -> Message | None:
    """The next request on a connection, or None when it closed before one began."""
    connection = h11.Connection(h11.SERVER, max_incomplete_event_size=MAX_HEAD)
    read = bytearray()
    event = await _next(reader, connection, read)
    if isinstance(event, h11.ConnectionClosed):
        return None
    if not isinstance(event, h11.Request):  # pragma: no cover - a server's first event is a request
        raise BadMessage(f"not a request ({type(event).__name__})")
    rest = connection.trailing_data[0]
    _strict(bytes(read[: len(read) - len(rest)]))
    head = Head((_text(event.method), _text(event.target), f"HTTP/{_text(event.http_version)}"), _headers(event))
    if head.get("Content-Length") is not None and head.get("Transfer-Encoding") is not None:
        # Two framings: whichever the next server believes, it may not be the one judged here.
        raise BadMessage("a request with both Content-Length and Transfer-Encoding")
    return Message(head, rest)


class Responses:
    """The response heads an upstream sends for one request: 1xx heads, then the final one."""

    def __init__(self, reader: asyncio.StreamReader, request: Head) -> None:
        self.reader = reader
        self.connection = h11.Connection(h11.CLIENT, max_incomplete_event_size=MAX_HEAD)
        # h11 reads a response only after a request: this one says its method (a HEAD's has no body).
        self.connection.send(h11.Request(method=request.method, target=request.target, headers=[("Host", "-")]))

    async def next(self) -> Message | None:
        """The next head (an informational one, or the final one with its body's first bytes), or
        None when the upstream closed without answering."""
        event = await _next(self.reader, self.connection)
        if isinstance(event, h11.ConnectionClosed):
            return None
        if not isinstance(event, h11.InformationalResponse | h11.Response):  # pragma: no cover
            raise BadMessage(f"not a response ({type(event).__name__})")
        head = Head((f"HTTP/{_text(event.http_version)}", str(event.status_code), _text(event.reason)), _headers(event))
        final = isinstance(event, h11.Response)
        return Message(head, self.connection.trailing_data[0] if final else b"")


def answer(status: int, reason: str, text: str) -> bytes:
    """A whole plain-text response from the proxy itself."""
    body = text.encode()
    head = Head(
        ("HTTP/1.1", str(status), reason),
        [("Content-Type", "text/plain; charset=utf-8"), ("Content-Length", str(len(body))), ("Connection", "close")],
    )
    return head.encode() + body
