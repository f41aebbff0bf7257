"""Server-sent events, as chat completions and Anthropic's Messages stream them: one writer, one reader.

An event is a few `field: value` lines ended by a blank line; a streamed answer is events whose
`data` is one JSON object each, ended (in OpenAI's shape) by `data: [DONE]`:

    yield sse.event({"choices": [{"delta": {"content": "Hel"}}]})   # b'data: {...}\\n\\n'
    yield sse.event({"type": "ping"}, name="ping")                  # b'event: ping\\ndata: ...'
    yield sse.DONE

    reader = sse.Reader()
    for event in reader.feed(chunk):   # any bytes as they came: events split anywhere are whole here
        if event.done: ...
        chunk = event.json()

The reader follows the HTML standard's rules: lines end in CRLF, LF or CR; `data` lines of one
event are joined by newlines; a line starting with `:` is a comment; one space after the colon
is not part of the value. A harness writing its answer, a bridge reading it, a harness reading
its model and the conformance kit's stand-ins all go through here.
"""

from __future__ import annotations

import json
import re
from collections.abc import AsyncIterable, AsyncIterator, Iterable, Iterator
from dataclasses import dataclass
from typing import Any

CONTENT_TYPE = "text/event-stream"
DONE = b"data: [DONE]\n\n"
"""The end of an OpenAI-shaped stream."""
KEEPALIVE = b": waiting\n\n"
"""A comment: no event, only a sign the stream is alive while an answer is awaited."""

_ENDING = re.compile(rb"\r\n|\r|\n")
_TEXT_ENDING = re.compile(r"\r\n|\r|\n")


def event(data: Any, *, name: str | None = None) -> bytes:
    """One event whose data is `data` as JSON (or a string as it is), named when `name` is given."""
    text = data if isinstance(data, str) else json.dumps(data, ensure_ascii=False)
    lines = [f"event: {name}"] if name is not None else []
    # Only CR and LF end a line here (str.splitlines would also split at U+2028, which JSON keeps).
    lines += [f"data: {line}" for line in _TEXT_ENDING.split(text)]
    return ("\n".join(lines) + "\n\n").encode()


@dataclass(frozen=True)
class Event:
    """One event as read: its name (`event:`, None when it gave none) and its data."""

    data: str
    name: str | None = None

    @property
    def done(self) -> bool:
        return self.data == "[DONE]"

    def json(self) -> Any:
        """The data read as JSON; ValueError when it isn't."""
        return json.loads(self.data)


class Reader:
    """Reads events from bytes fed in any pieces."""

    def __init__(self) -> None:
        self._pending = b""
        self._data: list[str] = []
        self._name: str | None = None

    def feed(self, chunk: bytes) -> list[Event]:
        """The events `chunk` completes, in order."""
        buffer = self._pending + chunk
        found: list[Event] = []
        start = 0
        for ending in _ENDING.finditer(buffer):
            if ending.group() == b"\r" and ending.end() == len(buffer):
                break  # a CR last: the LF of a CRLF may come in the next piece
            read = self._line(buffer[start : ending.start()].decode("utf-8", errors="replace"))
            if read is not None:
                found.append(read)
            start = ending.end()
        self._pending = buffer[start:]
        return found

    def end(self) -> list[Event]:
        """The stream ended: a CR held back for the LF that might have followed it ends its line."""
        if not self._pending.endswith(b"\r"):
            return []
        return self.feed(b"\n")

    def _line(self, line: str) -> Event | None:
        if not line:
            if not self._data:
                self._name = None
                return None
            read = Event("\n".join(self._data), self._name)
            self._data, self._name = [], None
            return read
        if line.startswith(":"):
            return None
        field, _, value = line.partition(":")
        value = value.removeprefix(" ")
        if field == "data":
            self._data.append(value)
        elif field == "event":
            self._name = value
        return None


def events(chunks: Iterable[bytes]) -> Iterator[Event]:
    """The events of a stream read whole, as its pieces come."""
    reader = Reader()
    for chunk in chunks:
        yield from reader.feed(chunk)
    yield from reader.end()


async def aevents(chunks: AsyncIterable[bytes]) -> AsyncIterator[Event]:
    """The events of a stream read as its pieces come, in asyncio."""
    reader = Reader()
    async for chunk in chunks:
        for read in reader.feed(chunk):
            yield read
    for read in reader.end():
        yield read
