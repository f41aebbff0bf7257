"""The channel's section in the agent's settings: the paired owner and the bot, no secrets."""

from __future__ import annotations

from pydantic import BaseModel

SECRET = "bot-token"
TITLE = "Discord"


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
