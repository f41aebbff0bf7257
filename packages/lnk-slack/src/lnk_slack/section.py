"""The channel's section in the agent's settings: the paired owner and the app, no secrets; and the
two tokens `connect` asks for, which `describe` names without Slack's library loaded."""

from __future__ import annotations

import re

from pydantic import BaseModel

from link_plugin.bridge.tokens import Token
from link_plugin.errors import LinkError

APP_SECRET = "app-token"
BOT_SECRET = "bot-token"
TITLE = "Slack"

APP_TOKEN = Token(
    APP_SECRET,
    "App-level token (xapp-..., with connections:write)",
    re.compile(r"xapp-[0-9A-Za-z-]{10,}"),
    LinkError(
        "that doesn't look like a Slack app-level token (it starts with xapp-)",
        "In the app's Basic Information, App-Level Tokens, generate one with the scope connections:write.",
    ),
)
BOT_TOKEN = Token(
    BOT_SECRET,
    "Bot token (xoxb-..., Bot User OAuth Token)",
    re.compile(r"xoxb-[0-9A-Za-z-]{10,}"),
    LinkError(
        "that doesn't look like a Slack bot token (it starts with xoxb-)",
        "Install the app to your workspace, then copy OAuth & Permissions, Bot User OAuth Token.",
    ),
)


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
