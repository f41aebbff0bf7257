"""Someone's Telegram, talking to the agent's bot through the fake Bot API (lnk_testing.telegram)."""

from __future__ import annotations

from dataclasses import dataclass

from lnk_e2e.waiting import wait_for
from lnk_testing.telegram import FakeTelegram, Sent, User


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
