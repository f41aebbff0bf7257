"""Someone's Telegram, talking to the agent's bot through the fake Bot API (lnk_testing.telegram)."""

from __future__ import annotations

import json
from dataclasses import dataclass
from typing import Any

from link_conformance.provider import Recorded
from lnk_e2e.model import Model
from lnk_e2e.waiting import wait_for
from lnk_testing.telegram import FakeTelegram, Sent, User


@dataclass(frozen=True)
class Exchange:
    """One message and its answer: what the model was asked, what it answered, the message showing it."""

    asked: list[Recorded]
    answer: str
    shown: Sent

    @property
    def tool_call(self) -> tuple[str, dict[str, Any]]:
        """The tool the model called (its name and arguments), as the last request carries it back."""
        call = self.asked[-1].json["messages"][-2]["tool_calls"][0]["function"]
        return call["name"], json.loads(call["arguments"])

    @property
    def tool_result(self) -> Any:
        """What the tool answered, as the model was given it (memory's tools answer JSON)."""
        return json.loads(self.asked[-1].json["messages"][-1]["content"])


@dataclass
class Phone:
    telegram: FakeTelegram
    user: User
    group: int | None = None
    """A group chat with the bot in it, where this person mentions the bot."""

    @property
    def chat(self) -> int:
        return self.group if self.group is not None else self.user.id

    def send(self, text: str) -> int:
        if self.group is not None:
            return self.telegram.group(self.group, self.user, text, mention=True)
        return self.telegram.private(self.user, text)

    def in_group(self, group: int) -> Phone:
        return Phone(self.telegram, self.user, group)

    def messages(self) -> list[Sent]:
        """What the bot sent in this chat, in order."""
        return self.telegram.messages(self.chat)

    def showing(self, text: str) -> list[Sent]:
        """The bot's messages in this chat whose text is now `text`."""
        return [sent for sent in self.messages() if sent.text == text]

    def wait_for_message(self, text: str, timeout: float = 60) -> Sent:
        """The bot's message once it shows `text` whole (an answer streams in first)."""
        found = wait_for(lambda: self.showing(text), timeout, f"the message {text!r} in chat {self.chat}")
        return found[0]

    def ask(self, model: Model, text: str, calls: int, timeout: float = 60) -> Exchange:
        """Send `text`, the model answering in `calls` requests (a tool call, then the answer); wait
        until the phone shows the answer whole. `timeout`: how long the model may take to be asked."""
        first, answers = len(model.requests), len(model.answers)
        model.expect(calls)
        self.send(text)
        answer = model.answer(answers, timeout)
        shown = self.wait_for_message(answer)
        return Exchange(model.requests[first : first + calls], answer, shown)
