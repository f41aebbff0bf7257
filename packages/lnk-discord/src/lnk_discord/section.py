"""The channel's section in the agent's settings: the paired owner and the bot, no secrets; and the
token `connect` asks for, which `describe` names without discord.py loaded."""

from __future__ import annotations

import re

from pydantic import BaseModel

from link_plugin.bridge.tokens import Token
from link_plugin.errors import LinkError

SECRET = "bot-token"
TITLE = "Discord"

BOT_TOKEN = Token(
    SECRET,
    "Bot token (from the Discord Developer Portal)",
    re.compile(r"[A-Za-z0-9_-]{20,}\.[A-Za-z0-9_-]{4,}\.[A-Za-z0-9_-]{20,}"),
    LinkError(
        "that doesn't look like a Discord bot token (three parts, joined by dots)",
        "Copy it again: Discord Developer Portal, your application, Bot, Reset Token.",
    ),
)


class Section(BaseModel):
    owner: str
    """The paired owner's Discord user id: nobody else is answered."""
    owner_name: str = ""
    dm: str = ""
    """The owner's direct message channel with the bot, where questions are asked."""
    bot: str = ""
    """The bot's username."""
    bot_id: str = ""


def identity(bot_id: int | str) -> str:
    """What makes a bot one agent's alone (LNK_CHANNEL_TAKEN)."""
    return f"discord-bot:{bot_id}"
