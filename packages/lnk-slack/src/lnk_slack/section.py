"""The channel's section in the agent's settings: the paired owner and the app, no secrets."""

from __future__ import annotations

from pydantic import BaseModel

APP_SECRET = "app-token"
BOT_SECRET = "bot-token"
TITLE = "Slack"


class Section(BaseModel):
    owner: str
    """The paired owner's Slack member id (U...): nobody else is answered."""
    dm: str = ""
    """The owner's direct message channel with the app (D...), where questions are asked."""
    team: str = ""
    team_id: str = ""
    app_id: str = ""
    bot_user: str = ""
    """The app's bot user (U...), as mentions name it."""


def identity(app_id: str) -> str:
    """What makes an app one agent's alone (LNK_CHANNEL_TAKEN)."""
    return f"slack-app:{app_id}"
