"""Who a bridge answers: its owner, in a direct chat, or in a group when the owner mentions it.
Anyone else, and any group message that doesn't mention the bot (a reply to it included), get
nothing: in a group the agent speaks only when its owner calls it by name.

A channel reads its service's message into a `Heard`: an `Incoming` (who sent it, whether the
chat is direct, whether the message mentions the bot, as the service marks mentions), the chat,
its text and its key. It is carried only when `answered` says so.
"""

from __future__ import annotations

from dataclasses import dataclass


@dataclass(frozen=True)
class Incoming:
    sender: str
    """The sender's id on the channel."""
    direct: bool
    """A private chat or direct message, rather than a group."""
    mentioned: bool = False
    """The message mentions the bot, as its service marks a mention (by name, or a link to it)."""


def answered(incoming: Incoming, owner: str | None) -> bool:
    """Whether the message is carried: only the paired owner's, in a direct chat or mentioning the bot."""
    if owner is None or incoming.sender != owner:
        return False
    return incoming.direct or incoming.mentioned


@dataclass(frozen=True)
class Heard:
    """A message as a bridge read it from its service."""

    incoming: Incoming
    chat: str
    """The conversation's id on the channel: its thread is `<channel>:<chat>`."""
    text: str | None
    """What goes to the agent, the bot's mention taken out; None for a message with no text (a
    photo, a file)."""
    key: str
    """Its `Link-Message-Id`, from the service's own ids: the same whenever the service hands the
    same message over again (`endpoint.message_id`)."""
    replied: str | None = None
    """The bot's message it replies to, if any."""
    edited: bool = False
    """An edit of a message sent before, not a new one."""


@dataclass(frozen=True)
class Press:
    """A press of a button under one of the bot's messages (a question to the owner)."""

    incoming: Incoming
    message: str
    """The message whose button was pressed."""
    value: str
