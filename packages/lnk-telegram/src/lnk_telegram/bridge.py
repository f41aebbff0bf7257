"""`lnk-telegram bridge`: carry the owner's Telegram messages to the agent's endpoint and back.

One long poll (getUpdates) per bot. Each update is confirmed by the next poll's offset as soon
as it is read, and handled on its own, so a long answer never holds up the next message. The
owner's private messages, and their mentions of the bot in a group, are carried, each with its
key (`<chat id>:<message id>`, the same when Telegram hands an update over again); a group is a
conversation of its own (`telegram:<group id>`), answered there as a reply. Nobody else's
message is carried, a group message that doesn't mention the bot neither (a reply to it
included), and a stranger gets no answer at all. Recovery starts before Telegram is reached, so
an answer that finished unseen is asked for even while Telegram is away; the answers shown are
noted in the channel's folder (`BridgeSpec.folder`), so none is shown twice.

Given the agent's control socket (`BridgeSpec.approvals`), tool calls waiting for the owner are
asked in the owner's private chat with Allow and Deny buttons (`link_plugin.bridge.asking`); the
owner's press, or their "yes" or "no" while a question is shown, answers it and is never carried.
What every channel shares is `link_plugin.bridge.base.Bridge`; this is Telegram's connection.
"""

from __future__ import annotations

import asyncio
from contextlib import suppress
from typing import Unpack

from telegram import CallbackQuery, Update, User
from telegram.error import Conflict, InvalidToken, NetworkError, RetryAfter, TelegramError

from link_plugin.backoff import Backoff
from link_plugin.bridge.base import Bridge, Timing, secret
from link_plugin.bridge.pairing import paired
from link_plugin.bridge.split import utf16_length
from link_plugin.channel import BridgeSpec
from link_plugin.errors import LinkError
from link_plugin.plugin import say
from lnk_telegram.api import LIMIT, TIMEOUT, make_bot, seconds
from lnk_telegram.chat import TelegramChat
from lnk_telegram.messages import pressed, read
from lnk_telegram.section import SECRET, TITLE, Section

CHANNEL = "telegram"
POLL = 25
"""Seconds a getUpdates waits for news."""
UPDATES = ["message", "edited_message", "callback_query"]

_REVOKED = LinkError(
    "Telegram refused the bot token: it was revoked or replaced",
    "Run `lnk agent connect telegram` again with the bot's current token.",
)


class TelegramBridge(Bridge):
    def __init__(
        self, spec: BridgeSpec, *, poll: int = POLL, timeout: float = TIMEOUT, **timing: Unpack[Timing]
    ) -> None:
        owner = paired(Section, spec.section, TITLE, CHANNEL).owner
        super().__init__(spec, CHANNEL, str(owner), limit=LIMIT, measure=utf16_length, **timing)
        self._bot = make_bot(secret(spec, SECRET, CHANNEL), timeout=timeout)
        self._poll = poll

    async def reach(self) -> str:
        backoff = Backoff(0.5, 30.0)
        while True:
            try:
                await self._bot.initialize()
                return f"@{self._bot.bot.username}"
            except InvalidToken:
                raise _REVOKED from None
            except NetworkError as exc:
                if backoff.delay == 0.5:
                    say(f"Telegram can't be reached ({exc.message}); trying again")
            await backoff.wait()

    async def close(self) -> None:
        await self._bot.shutdown()

    def place(self, chat: str) -> TelegramChat:
        return TelegramChat(self._bot, int(chat))

    def owner_chat(self) -> TelegramChat:
        return TelegramChat(self._bot, int(self.owner))  # a private chat's id is its user's

    async def listen(self) -> None:
        me = self._bot.bot
        offset: int | None = None
        backoff = Backoff(0.5, 30.0)
        conflicted = False
        while True:
            try:
                updates = await self._bot.get_updates(offset=offset, timeout=self._poll, allowed_updates=UPDATES)
            except InvalidToken:
                raise _REVOKED from None
            except Conflict as exc:
                if not conflicted:
                    say(f"another program reads this bot's messages ({exc.message}); Telegram gives them to one")
                    conflicted = True
                await backoff.wait()
                continue
            except RetryAfter as exc:
                await asyncio.sleep(seconds(exc.retry_after))
                continue
            except NetworkError:
                await backoff.wait()
                continue
            backoff.reset()
            conflicted = False
            for update in updates:
                offset = update.update_id + 1
                self.spawn(f"update {update.update_id}", self._handle(update, me))

    async def _handle(self, update: Update, me: User) -> None:
        if update.callback_query is not None:
            await self._press(update.callback_query)
            return
        message = update.message or update.edited_message
        if message is None:
            return
        heard = read(message, me, edited=update.edited_message is not None)
        if heard is not None:
            chat = TelegramChat(self._bot, int(heard.chat), message.message_id, reply=not heard.incoming.direct)
            await self.heard(heard, chat)

    async def _press(self, query: CallbackQuery) -> None:
        """A press of a question's button. Only the owner's counts; a stranger's gets no answer at all."""
        press = pressed(query)
        if press is None:
            return
        said = await self.press(press.incoming, press.message, press.value)
        if said is not None:
            # One try: the press is answered already; this only stops the spinner with a word.
            with suppress(TelegramError):
                await self._bot.answer_callback_query(query.id, said.value)
