"""The model's window: a conversation in OpenAI's message shape, as far back as the model is shown.

The model gets the running turn whole and, before it, the newest `HISTORY_CHARS` characters
(about 25,000 tokens), from a message on; what's older is in conversation.md, which memory
searches. A message takes its place where the model first saw it (the output that `took` it),
so a message that arrived mid-turn never lands between a tool call and its result.

A `Window` keeps those messages for one conversation as its events come, each with its size,
and lets go of what can never be shown again. What lies before the newest user message only
grows, so a message that fell past the budget from there stays past it. A window is built from
the tail: from the newest event back until the budget is passed, never from the first event.

Each message joins a window as `Said`: with its JSON, encoded once as it joins, which is both what
it weighs against the budget and what the model is sent of it at every step after (`encoded`), so
no step encodes the whole window again (100 KB of it, a few milliseconds on a loaded machine, before
every first token of a long conversation).
"""

from __future__ import annotations

import json
from collections.abc import Callable
from typing import Any

from lnk_harness.events import Event, EventLog, MessageIn, Output, Result

HISTORY_CHARS = 100_000
"""How much of a conversation's past goes to the model (about 25,000 tokens)."""

Message = dict[str, Any]


def speaker_line(message: MessageIn) -> str:
    """How the model is told who speaks, when it isn't the owner."""
    sender = message.sender
    if sender is None:
        return message.text
    hops = f", {sender.hops} hop{'s' if sender.hops != 1 else ''} away" if sender.hops else ""
    return f"[A message from {sender.who}, not your owner{hops}]\n{message.text}"


def user(message: MessageIn) -> Message:
    return {"role": "user", "content": speaker_line(message)}


def told(event: Event, message: Callable[[int], MessageIn]) -> list[Message]:
    """What `event` puts in the conversation the model reads (`message` gives the messages it took)."""
    if isinstance(event, Output):
        out = [user(message(number)) for number in event.took]
        if not event.text and not event.calls:
            return out  # a step cut before it said anything says nothing to the model either
        said: Message = {"role": "assistant", "content": event.text or None}
        if event.calls:
            said["tool_calls"] = [
                {"id": c.id, "type": "function", "function": {"name": c.name, "arguments": c.arguments}}
                for c in event.calls
            ]
        return [*out, said]
    if isinstance(event, Result):
        return [{"role": "tool", "tool_call_id": event.call, "content": event.content}]
    return []


class Said(dict[str, Any]):
    """A message as a window keeps it, with its JSON; never changed after it joins."""

    __slots__ = ("json",)
    json: str

    @classmethod
    def of(cls, message: Message) -> Said:
        said = cls(message)
        said.json = json.dumps(message, ensure_ascii=False)
        return said


def encoded(message: Message) -> str:
    """A message's JSON: as kept, for a window's."""
    return message.json if isinstance(message, Said) else json.dumps(message, ensure_ascii=False)


class Window:
    """One conversation's messages, from as far back as `budget` can ever reach again."""

    def __init__(self, budget: int = HISTORY_CHARS) -> None:
        self.budget = budget
        self._messages: list[Message] = []
        self._sizes: list[int] = []
        self._start = 0
        """The first message kept: everything before it is past the budget for good."""
        self._user = -1
        """The newest user message, where the running turn starts."""
        self._before = 0
        """The size of what is kept before the newest user message."""
        self._since = 0
        """The size of the newest user message and what follows it."""

    def add(self, message: Message) -> None:
        said = message if isinstance(message, Said) else Said.of(message)
        length = len(said.json)
        self._messages.append(said)
        self._sizes.append(length)
        if said["role"] != "user":
            self._since += length
            return
        self._before += self._since
        self._since = length
        self._user = len(self._messages) - 1
        while self._before > self.budget and self._start < self._user:
            self._before -= self._sizes[self._start]
            self._start += 1
        if self._start > 1024 and self._start * 2 > len(self._messages):
            del self._messages[: self._start], self._sizes[: self._start]
            self._user -= self._start
            self._start = 0

    def fold(self, event: Event, message: Callable[[int], MessageIn]) -> None:
        for said in told(event, message):
            self.add(said)

    def messages(self, budget: int = HISTORY_CHARS) -> list[Message]:
        """The newest messages within `budget` characters (at most the window's), starting at a
        user's message; the running turn's (from its last user message on) whatever their size."""
        budget = min(budget, self.budget)
        if self._user < 0:
            return self._messages[self._start :]
        start, used = self._user, 0
        for index in range(self._user - 1, self._start - 1, -1):
            used += self._sizes[index]
            if used > budget:
                break
            if self._messages[index]["role"] == "user":
                start = index
        return self._messages[start:]

    @classmethod
    def from_tail(cls, events: EventLog, through: int, budget: int = HISTORY_CHARS) -> Window:
        """The window of the events up to `through`, read from the newest back, as far as it reaches."""
        walked: list[Said] = []
        found_user, before = False, 0
        for number in range(through, 0, -1):
            event = events.get(number)
            if event is None:
                continue  # a number missing by hand: passed over, as a rebuild passes it
            for message in reversed(told(event, events.message)):
                said = Said.of(message)
                walked.append(said)
                if found_user:
                    before += len(said.json)
                elif said["role"] == "user":
                    found_user = True
            if before > budget:
                break
        window = cls(budget)
        for said in reversed(walked):
            window.add(said)
        return window
