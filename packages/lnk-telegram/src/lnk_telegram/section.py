"""The channel's section in the agent's settings: the paired owner and the bot, no secrets."""

from __future__ import annotations

from pydantic import BaseModel

SECRET = "bot-token"
TITLE = "Telegram"


class Section(BaseModel):
    owner: int
    """The paired owner's Telegram user id: nobody else is answered."""
    owner_name: str = ""
    bot: str = ""
    """The bot's username."""
    bot_id: int = 0


def identity(bot_id: int) -> str:
    """What makes a bot one agent's alone (LNK_CHANNEL_TAKEN)."""
    return f"telegram-bot:{bot_id}"
