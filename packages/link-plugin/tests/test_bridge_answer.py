"""The streamed answer against a chat that keeps every call, with flood control and breaks on demand."""

from __future__ import annotations

import asyncio
import time
from dataclasses import dataclass, field

from link_plugin.bridge.answer import StreamedAnswer
from link_plugin.bridge.retry import Interrupted, RetryLater


@dataclass
class Chat:
    """What a channel shows: messages by id, each call timed; troubles queued per call kind."""

    messages: dict[str, list[str]] = field(default_factory=dict)
    calls: list[tuple[str, float]] = field(default_factory=list)
    troubles: dict[str, list[Exception]] = field(default_factory=dict)

    def _call(self, kind: str) -> None:
        self.calls.append((kind, time.monotonic()))
        queued = self.troubles.get(kind)
        if queued:
            raise queued.pop(0)

    async def send(self, text: str) -> str:
        self._call("send")
        message = str(len(self.messages) + 1)
        self.messages[message] = [text]
        return message

    async def edit(self, message: str, text: str) -> None:
        self._call("edit")
        if self.messages[message][-1] != text:
            self.messages[message].append(text)

    @property
    def finals(self) -> list[str]:
        return [texts[-1] for texts in self.messages.values()]


async def _stream(answer: StreamedAnswer, pieces: list[str], delay: float) -> None:
    for piece in pieces:
        answer.add(piece)
        await asyncio.sleep(delay)


def test_first_words_show_at_once_then_at_the_pace() -> None:
    chat = Chat()

    async def go() -> float:
        answer = StreamedAnswer(chat, limit=100, interval=0.2)
        started = time.monotonic()
        answer.add("Hello")
        await asyncio.sleep(0.01)
        first = chat.calls[0][1] - started
        await _stream(answer, [f" {i}" for i in range(20)], 0.02)
        await answer.finish()
        return first

    assert asyncio.run(go()) < 0.05
    times = [at for _, at in chat.calls]
    assert all(b - a >= 0.19 for a, b in zip(times, times[1:], strict=False))
    assert chat.finals == ["Hello " + " ".join(str(i) for i in range(20))]


def test_split_boundaries_never_move_and_every_message_ends_whole() -> None:
    chat = Chat()
    text = "\n\n".join((f"paragraph {i} " + "w " * 20).strip() for i in range(6))

    async def go() -> None:
        answer = StreamedAnswer(chat, limit=80, interval=0.01)
        await _stream(answer, [text[i : i + 7] for i in range(0, len(text), 7)], 0.001)
        await answer.finish()

    asyncio.run(go())
    assert all(len(final) <= 80 for final in chat.finals)
    assert "\n\n".join(chat.finals) == text.strip()
    for texts in chat.messages.values():
        final = texts[-1]
        assert all(final.startswith(shown) or shown.startswith(final) for shown in texts), "a message only grows"


def test_flood_control_and_breaks_are_retried_without_a_duplicate() -> None:
    chat = Chat(
        troubles={
            "send": [RetryLater(0.05), Interrupted("reset"), RetryLater(0.05)],
            "edit": [RetryLater(0.1), Interrupted("reset"), RetryLater(0.05)],
        }
    )

    async def go() -> None:
        answer = StreamedAnswer(chat, limit=50, interval=0.01)
        await _stream(answer, ["a" * 10 for _ in range(12)], 0.01)
        await answer.finish()

    asyncio.run(go())
    assert chat.finals == ["a" * 50, "a" * 50, "a" * 20]
    assert len(chat.messages) == 3, "no message sent twice"


def test_a_note_ends_the_last_message() -> None:
    chat = Chat()

    async def go() -> None:
        answer = StreamedAnswer(chat, limit=100, interval=0.01)
        answer.add("partial")
        await answer.finish("(stopped)")

    asyncio.run(go())
    assert chat.finals == ["partial\n\n(stopped)"]


def test_nothing_said_shows_nothing() -> None:
    chat = Chat()
    asyncio.run(StreamedAnswer(chat, limit=100).finish())
    assert chat.messages == {}


def test_a_whole_answer_is_sent_once_written_split_and_never_edited() -> None:
    chat = Chat()

    async def go() -> None:
        answer = StreamedAnswer(chat, limit=30, interval=0.01, whole=True)
        await _stream(answer, ["First part of it. ", "Second part of it. ", "Third."], 0.05)
        assert chat.calls == [], "nothing shown while it is written"
        await answer.finish()

    asyncio.run(go())
    assert chat.finals == ["First part of it.", "Second part of it. Third."]
    assert [kind for kind, _ in chat.calls] == ["send", "send"], "each message sent once, with its final text"
