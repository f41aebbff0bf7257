"""A Telegram chat as the bridge shows things there: an answer (send, edit, typing, the steered
mark) and, in the owner's private chat, a tool call's question with inline Allow and Deny buttons."""

from __future__ import annotations

from telegram import Bot, InlineKeyboardButton, InlineKeyboardMarkup, ReactionTypeEmoji, ReplyParameters
from telegram.constants import ChatAction
from telegram.error import BadRequest

from link_plugin.approvals import Question
from link_plugin.bridge.asking import BUTTONS
from lnk_telegram.api import translated

KEYBOARD = InlineKeyboardMarkup([[InlineKeyboardButton(label, callback_data=value) for label, value in BUTTONS]])


class TelegramChat:
    """One chat; in a group, answers reply to the owner's message so it's clear whom they answer."""

    def __init__(self, bot: Bot, chat: int, message: int | None = None, *, reply: bool = False) -> None:
        self._bot = bot
        self._chat = chat
        self._message = message
        self._reply = reply

    async def send(self, text: str) -> str:
        reply = None
        if self._reply and self._message is not None:
            reply = ReplyParameters(self._message, allow_sending_without_reply=True)
        with translated():
            sent = await self._bot.send_message(self._chat, text, reply_parameters=reply)
        return str(sent.message_id)

    async def edit(self, message: str, text: str) -> None:
        with translated():
            await self._bot.edit_message_text(text, chat_id=self._chat, message_id=int(message))

    async def ask(self, question: Question) -> str:
        with translated():
            sent = await self._bot.send_message(self._chat, question.wording(), reply_markup=KEYBOARD)
        return str(sent.message_id)

    async def settle(self, message: str, text: str) -> None:
        """An edit with no keyboard takes the buttons away, as Telegram does."""
        await self.edit(message, text)

    async def typing(self) -> None:
        with translated():
            await self._bot.send_chat_action(self._chat, ChatAction.TYPING)

    async def mark(self, mark: str) -> None:
        """A reaction with the mark; a mark Telegram takes no reaction for is sent as a reply instead."""
        if self._message is None:
            return
        try:
            with translated():
                await self._bot.set_message_reaction(self._chat, self._message, ReactionTypeEmoji(mark))
        except BadRequest:
            with translated():
                await self._bot.send_message(self._chat, mark, reply_parameters=ReplyParameters(self._message))
