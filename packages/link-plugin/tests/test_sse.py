"""Server-sent events: what the writer writes, the reader reads back, however the bytes are cut."""

from __future__ import annotations

import asyncio
from collections.abc import AsyncIterator

import pytest

from link_plugin import sse

ANSWER = (
    sse.event({"choices": [{"delta": {"content": "Hel"}}]})
    + sse.event({"type": "ping"}, name="ping")
    + sse.event({"choices": [{"delta": {"content": "lo \u2028 wörld\n"}}]})
    + sse.DONE
)


def read(data: bytes, cuts: list[int]) -> list[sse.Event]:
    pieces = [data[start:end] for start, end in zip([0, *cuts], [*cuts, len(data)], strict=True)]
    return list(sse.events(pieces))


def test_what_is_written_reads_back_whole() -> None:
    events = read(ANSWER, [])
    assert [event.name for event in events] == [None, "ping", None, None]
    assert events[0].json() == {"choices": [{"delta": {"content": "Hel"}}]}
    assert events[1].json() == {"type": "ping"}
    assert events[2].json()["choices"][0]["delta"]["content"] == "lo \u2028 wörld\n", "U+2028 ends no line"
    assert events[3].done and not events[0].done


def test_the_same_events_however_the_bytes_are_cut() -> None:
    whole = read(ANSWER, [])
    for cut in range(1, len(ANSWER)):
        assert read(ANSWER, [cut]) == whole, f"cut at {cut}"
    assert read(ANSWER, list(range(1, len(ANSWER)))) == whole, "a byte at a time"


@pytest.mark.parametrize("ending", [b"\r\n", b"\n", b"\r"], ids=["crlf", "lf", "cr"])
def test_every_line_ending_the_standard_allows(ending: bytes) -> None:
    data = ending.join([b": a comment", b"event: delta", b"data: one", b"data:two", b"", b"data: [DONE]", b"", b""])
    events = read(data, [])
    assert events == [sse.Event("one\ntwo", "delta"), sse.Event("[DONE]")]
    for cut in range(1, len(data)):
        assert read(data, [cut]) == events, f"cut at {cut}"


def test_an_event_not_yet_ended_is_not_read() -> None:
    assert read(b'data: {"a": 1}\n', []) == []
    assert read(b"\n\n\n", []) == [], "blank lines alone are no event"


def test_a_string_of_lines_goes_as_data_lines() -> None:
    assert sse.event("one\ntwo", name="note") == b"event: note\ndata: one\ndata: two\n\n"
    assert read(sse.event("one\r\ntwo"), []) == [sse.Event("one\ntwo")]


def test_a_stream_read_in_asyncio() -> None:
    async def pieces() -> AsyncIterator[bytes]:
        for index in range(0, len(ANSWER), 7):
            yield ANSWER[index : index + 7]

    async def every() -> list[sse.Event]:
        return [event async for event in sse.aevents(pieces())]

    assert asyncio.run(every()) == list(sse.events([ANSWER]))
