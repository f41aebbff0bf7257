"""Reading a Telegram message (who sent it, where, whether it mentions the bot, its text, its key,
the bot's message it replies to) and a press of an inline button (who pressed it, under which
message).

A message's key (`Link-Message-Id`) is `<chat id>:<message id>`. Telegram numbers messages within
a chat and hands an update it didn't see confirmed over again with the same message in it, so the
key is the same when the bridge died before it moved past the update, and never names another
message. (An `update_id` would do the first, but Telegram starts update ids again at a random
number after a week without updates, so an old one can come back.)"""

from __future__ import annotations

import re

from telegram import CallbackQuery, Message, MessageEntity, User
from telegram.constants import ChatType

from link_plugin.bridge.rules import Heard, Incoming, Press
from link_plugin.endpoint import message_id


def read(message: Message, me: User, *, edited: bool = False) -> Heard | None:
    """The message as the bridge's rules see it; None for one no person sent (a channel post)."""
    sender = message.from_user
    if sender is None or sender.is_bot:
        return None
    direct = message.chat.type == ChatType.PRIVATE
    incoming = Incoming(sender=str(sender.id), direct=direct, mentioned=not direct and _mentions(message, me))
    text = message.text
    if text is not None and not direct:
        text = _without_mention(message, me)
    return Heard(
        incoming=incoming,
        chat=str(message.chat.id),
        text=text,
        key=message_id(message.chat.id, message.message_id),
        replied=_replied_to(message, me),
        edited=edited,
    )


def pressed(query: CallbackQuery) -> Press | None:
    """A button press as the bridge's rules see it; None for one under no message of a chat (inline mode)."""
    if query.message is None or query.data is None:
        return None
    direct = query.message.chat.type == ChatType.PRIVATE
    incoming = Incoming(sender=str(query.from_user.id), direct=direct)
    return Press(incoming=incoming, message=str(query.message.message_id), value=query.data)


def _replied_to(message: Message, me: User) -> str | None:
    """The bot's message this one replies to, if any."""
    replied = message.reply_to_message
    if replied is None or replied.from_user is None or replied.from_user.id != me.id:
        return None
    return str(replied.message_id)


def _handle(me: User) -> str:
    return f"@{me.username}".lower() if me.username else ""


def _mentions(message: Message, me: User) -> bool:
    """Whether Telegram marks a mention of the bot in the message: its @username, a mention of it
    without one (text_mention), or a command addressed to it by name (/ask@bot). A reply to the bot
    alone is no mention."""
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
