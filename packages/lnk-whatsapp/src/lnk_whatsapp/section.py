"""The channel's section in the agent's settings: the owner's number and the linked account, no
secrets (the device's keys are in the channel's folder), and how a typed number is read."""

from __future__ import annotations

import re

from pydantic import BaseModel

from link_plugin.errors import LinkError

TITLE = "WhatsApp"
SERVER = "s.whatsapp.net"
"""Where a phone number's chat is: `<number>@s.whatsapp.net`."""
DEVICE = "device.sqlite3"
"""The linked device's keys and sessions, in the channel's folder (the engine's, and what a move carries)."""


class Section(BaseModel):
    owner: str
    """The owner's number, digits only with its country code: nobody else is answered."""
    account: str = ""
    """The linked account's number."""

    @property
    def owner_chat(self) -> str:
        """The owner's direct chat with the account (their chat with themselves, when it is theirs)."""
        return f"{self.owner}@{SERVER}"


def identity(account: str) -> str:
    """What makes a linked account one agent's alone (LNK_CHANNEL_TAKEN)."""
    return f"whatsapp:{account}"


_NUMBER = re.compile(r"\+?[0-9][0-9 ().-]{6,}")


def number(typed: str) -> str:
    """A phone number as typed (`+1 555 123 0001`, `0044…`), as WhatsApp names it: digits only,
    with the country code; a LinkError saying what a number looks like otherwise."""
    typed = typed.strip()
    digits = re.sub(r"[^0-9]", "", typed)
    if typed.startswith("00"):
        digits = digits[2:]
    if not _NUMBER.fullmatch(typed) or not 8 <= len(digits) <= 15:
        raise LinkError(
            f"{typed[:32]!r} isn't a phone number with its country code",
            "Type it as WhatsApp shows it in Settings, your profile: +, the country code, then the number "
            "(e.g. +44 7700 900123).",
        )
    return digits
