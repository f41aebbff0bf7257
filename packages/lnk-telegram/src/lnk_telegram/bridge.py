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
"""

from __future__ import annotations

import asyncio
import traceback
from contextlib import AbstractContextManager, nullcontext, suppress

from telegram import CallbackQuery, Update, User
from telegram.error import Conflict, InvalidToken, NetworkError, RetryAfter, TelegramError

from link_plugin.approvals import ApprovalsClient
from link_plugin.bridge.asking import BUSY, IDLE, Asking
from link_plugin.bridge.carry import PACE, Carrier, Pace
from link_plugin.bridge.recovery import PROBE, QUICK, Recovery
from link_plugin.bridge.retry import Backoff
from link_plugin.bridge.rules import Incoming, answered
from link_plugin.bridge.shown import ShownAnswers
from link_plugin.bridge.split import utf16_length
from link_plugin.bridge.tasks import Tasks
from link_plugin.channel import BridgeSpec
from link_plugin.endpoint import EndpointClient
from link_plugin.errors import LinkError
from link_plugin.plugin import say
from lnk_telegram.api import LIMIT, TIMEOUT, make_bot, seconds
from lnk_telegram.chat import TelegramChat
from lnk_telegram.messages import EDITED, UNSUPPORTED, pressed, read, replied_to
from lnk_telegram.section import SECRET, Section

CHANNEL = "telegram"
POLL = 25
"""Seconds a getUpdates waits for news."""
UPDATES = ["message", "edited_message", "callback_query"]

_REVOKED = LinkError(
    "Telegram refused the bot token: it was revoked or replaced",
    "Run `lnk agent connect telegram` again with the bot's current token.",
)


class TelegramBridge:
    def __init__(
        self,
        spec: BridgeSpec,
        *,
        pace: Pace = PACE,
        poll: int = POLL,
        probe: float = PROBE,
        quick: float = QUICK,
        timeout: float = TIMEOUT,
        busy: float = BUSY,
        idle: float = IDLE,
    ) -> None:
        token = spec.secrets.get(SECRET)
        if not token:
            raise LinkError(
                f"the bridge got no {SECRET}",
                "Run `lnk agent connect telegram`: Link keeps the token and hands it to the bridge.",
            )
        self._owner = str(Section.read(spec.section).owner)
        self._bot = make_bot(token, timeout=timeout)
        self._poll = poll
        client = EndpointClient(spec.endpoint, spec.agent)
        shown = ShownAnswers.in_folder(spec.folder, say)
        self._recovery = Recovery(client, CHANNEL, self._deliver, say, shown=shown, probe=probe, quick=quick)
        self._carrier = Carrier(
            client, self._recovery, CHANNEL, say, limit=LIMIT, measure=utf16_length, steered=spec.steered, pace=pace
        )
        self._asking: Asking | None = None
        if spec.approvals:
            owner_chat = TelegramChat(self._bot, int(self._owner))  # a private chat's id is its user's
            control = ApprovalsClient(spec.approvals)
            self._asking = Asking(control, owner_chat, self._owner, say, busy=busy, idle=idle, give_up=pace.give_up)
        self._ready = asyncio.Event()
        self._tasks = Tasks()

    async def run(self) -> None:
        """Carry until cancelled; ends with a LinkError when Telegram refuses the token."""
        self._tasks.spawn(self._recovery.run())
        try:
            me = await self._reach_telegram()
            self._ready.set()
            say(f"carrying @{me.username} for the agent")
            if self._asking is not None:
                self._tasks.spawn(self._asking.run())
            await self._read_updates(me)
        finally:
            await self._tasks.stop()
            await self._bot.shutdown()

    async def _reach_telegram(self) -> User:
        backoff = Backoff(0.5, 30.0)
        while True:
            try:
                await self._bot.initialize()
                return self._bot.bot
            except InvalidToken:
                raise _REVOKED from None
            except NetworkError as exc:
                if backoff.delay == 0.5:
                    say(f"Telegram can't be reached ({exc.message}); trying again")
            await backoff.wait()

    async def _read_updates(self, me: User) -> None:
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
                self._tasks.spawn(self._handle(update, me))

    async def _handle(self, update: Update, me: User) -> None:
        """One update; whatever goes wrong is logged and never stops the bridge."""
        try:
            if update.callback_query is not None:
                await self._press(update.callback_query)
                return
            message = update.message or update.edited_message
            if message is None:
                return
            seen = read(message, me)
            if seen is None or not answered(seen.incoming, self._owner):
                return
            chat = TelegramChat(self._bot, seen.chat, message.message_id, reply=not seen.incoming.direct)
            if update.edited_message is not None:
                await self._carrier.deliver(chat, EDITED)
            elif seen.text is None:
                await self._carrier.deliver(chat, UNSUPPORTED)
            elif seen.text and not await self._answers_a_question(seen.incoming, seen.text, replied_to(message, me)):
                with self._carrying():
                    await self._carrier.carry(str(seen.chat), seen.text, chat, key=seen.key)
        except Exception:
            say(f"update {update.update_id} failed:\n{traceback.format_exc()}")

    async def _answers_a_question(self, incoming: Incoming, text: str, replied: str | None) -> bool:
        """The owner's yes or no to a question shown: Link's answer, never carried to the harness."""
        return self._asking is not None and await self._asking.reply(incoming, text, replied)

    def _carrying(self) -> AbstractContextManager[None]:
        """While an answer is carried a tool call may wait for the owner: look for one often."""
        return self._asking.busy() if self._asking is not None else nullcontext()

    async def _press(self, query: CallbackQuery) -> None:
        """A press of a question's button. Only the owner's counts; a stranger's gets no answer at all."""
        press = pressed(query)
        if press is None or self._asking is None:
            return
        said = await self._asking.press(press.incoming, press.message, press.value)
        if said is not None:
            # One try: the press is answered already; this only stops the spinner with a word.
            with suppress(TelegramError):
                await self._bot.answer_callback_query(query.id, said.value)

    async def _deliver(self, chat: str, text: str) -> None:
        """A recovered answer, once Telegram is reached."""
        await self._ready.wait()
        await self._carrier.deliver(TelegramChat(self._bot, int(chat)), text)
