"""Reading a Telegram message: who sent it, where, whether it addresses the bot, and its text."""

from __future__ import annotations

import re
from dataclasses import dataclass

from telegram import Message, MessageEntity, User
from telegram.constants import ChatType

from link_plugin.bridge.rules import Incoming

UNSUPPORTED = "(I can read text messages only: send this as text.)"
EDITED = "(Edits aren't passed on to the agent: send the change as a new message.)"


@dataclass(frozen=True)
class Read:
    incoming: Incoming
    chat: int
    text: str | None
    """What goes to the agent, the bot's mention taken out; None for a message with no text."""


def read(message: Message, me: User) -> Read | None:
    """The message as the bridge's rules see it; None for one no person sent (a channel post)."""
    sender = message.from_user
    if sender is None or sender.is_bot:
        return None
    direct = message.chat.type == ChatType.PRIVATE
    incoming = Incoming(sender=str(sender.id), direct=direct, addressed=not direct and _addresses(message, me))
    text = message.text
    if text is not None and not direct:
        text = _without_mention(message, me)
    return Read(incoming=incoming, chat=message.chat.id, text=text)


def _handle(me: User) -> str:
    return f"@{me.username}".lower() if me.username else ""


def _addresses(message: Message, me: User) -> bool:
    replied = message.reply_to_message
    if replied is not None and replied.from_user is not None and replied.from_user.id == me.id:
        return True
    for entity, value in message.parse_entities().items():
        if entity.type == MessageEntity.MENTION and value.lower() == _handle(me):
            return True
        if entity.type == MessageEntity.TEXT_MENTION and entity.user is not None and entity.user.id == me.id:
            return True
        if entity.type == MessageEntity.BOT_COMMAND and _handle(me) and value.lower().endswith(_handle(me)):
            return True
    return False


def _without_mention(message: Message, me: User) -> str:
    """The text with the bot's @mention taken out, so the agent reads what was said to it."""
    text = message.text or ""
    handle = _handle(me)
    if handle:
        text = re.sub(rf"(?i){re.escape(handle)}\b", " ", text)
    return " ".join(text.split())
