"""Who a bridge answers: its owner, in a direct chat, or in a group when the owner addresses it
(a mention, or a reply to it). Anyone else, and a group message not addressed to it, get nothing.
"""

from __future__ import annotations

from dataclasses import dataclass


@dataclass(frozen=True)
class Incoming:
    sender: str
    """The sender's id on the channel."""
    direct: bool
    """A private chat or direct message, rather than a group."""
    addressed: bool = False
    """In a group: it mentions the bot or replies to it."""


def answered(incoming: Incoming, owner: str | None) -> bool:
    """Whether the message is carried: only the paired owner's, directly or by addressing the bot."""
    if owner is None or incoming.sender != owner:
        return False
    return incoming.direct or incoming.addressed
