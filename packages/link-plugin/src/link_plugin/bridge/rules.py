"""Who a bridge answers: its owner, in a direct chat, or in a group when the owner mentions it.
Anyone else, and any group message that doesn't mention the bot (a reply to it included), get
nothing: in a group the agent speaks only when its owner calls it by name.

A channel reads its service's message into an `Incoming` (who sent it, whether the chat is
direct, whether the message mentions the bot, as the service marks mentions) and carries it only
when `answered` says so.
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
