"""The channel's section in the agent's settings: the paired owner and the bot, no secrets."""

from __future__ import annotations

from typing import Any

from pydantic import BaseModel, ValidationError

from link_plugin.errors import LinkError

SECRET = "bot-token"


class Section(BaseModel):
    owner: int
    """The paired owner's Telegram user id: nobody else is answered."""
    owner_name: str = ""
    bot: str = ""
    """The bot's username."""
    bot_id: int = 0

    @classmethod
    def read(cls, section: dict[str, Any]) -> Section:
        try:
            return cls.model_validate(section)
        except ValidationError as exc:
            raise LinkError(
                "Telegram isn't paired for this agent: its settings name no owner",
                "Run `lnk agent connect telegram` to pair the bot with your Telegram account.",
            ) from exc


def identity(bot_id: int) -> str:
    """What makes a bot one agent's alone (LNK_CHANNEL_TAKEN)."""
    return f"telegram-bot:{bot_id}"
