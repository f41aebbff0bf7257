"""`lnk-telegram connect`: take the bot token, check it, and pair the owner by a one-time code.

The token is checked with getMe, refused when another agent here has the bot, and refused when
another program reads the bot's messages (Telegram answers getUpdates with 409 Conflict, whether
that program long-polls or set a webhook). Then the code is printed in the terminal; whoever
sends it to the bot in a private chat becomes the owner, and the terminal says so. A code that
comes after it expired pairs nobody, and its sender is told so.
"""

from __future__ import annotations

import asyncio
import re
import time
from collections.abc import Callable
from functools import partial

from telegram import Bot, Message, Update
from telegram.constants import ChatType
from telegram.error import Conflict, InvalidToken, NetworkError, TelegramError

from link_plugin.bridge.pairing import EXPIRES, Pairing, PairingCode
from link_plugin.bridge.tokens import Token, read_tokens
from link_plugin.channel import Connected
from link_plugin.errors import LinkError
from link_plugin.plugin import say
from lnk_telegram.api import make_bot
from lnk_telegram.section import SECRET, Section, identity

PROBE = 3
"""Seconds of listening before the code is shown, long enough for another poller to show itself."""
POLL = 10

START = "Send the pairing code shown in the terminal where you ran `lnk agent connect telegram`."
BOT_TOKEN = Token(
    SECRET,
    "Bot token (from @BotFather)",
    re.compile(r"\d{5,}:[A-Za-z0-9_-]{30,}"),
    LinkError(
        "that doesn't look like a Telegram bot token (it's digits, a colon, then about 35 letters)",
        "Copy it again from @BotFather's message: /mybots, your bot, API Token.",
    ),
)


async def connect(
    token: str,
    taken: frozenset[str],
    *,
    expires: float = EXPIRES,
    probe: int = PROBE,
    clock: Callable[[], float] = time.monotonic,
) -> Connected:
    bot = make_bot(token)
    try:
        async with bot:
            return await _pair(bot, token, taken, expires, probe, clock)
    except InvalidToken:
        raise LinkError(
            "Telegram refused the bot token: it was revoked, or mistyped",
            "Copy it again from @BotFather (/mybots, your bot, API Token), then connect again.",
        ) from None
    except Conflict as exc:
        raise LinkError(
            f"another program reads this bot's messages (Telegram said: {exc.message})",
            "Telegram lets one program read a bot. Stop the other program (or delete its webhook), "
            "or make a bot for this agent with @BotFather.",
        ) from None
    except NetworkError as exc:
        raise LinkError(
            f"Telegram can't be reached ({exc.message})",
            "Check the network, then connect again.",
        ) from None


async def _pair(
    bot: Bot, token: str, taken: frozenset[str], expires: float, probe: int, clock: Callable[[], float]
) -> Connected:
    me = bot.bot
    if identity(me.id) in taken:
        raise LinkError(
            f"another agent here has @{me.username}: Telegram lets one program read a bot",
            "Make a bot for this agent with @BotFather, or disconnect it from the other agent first.",
        )
    offset = await _skip_backlog(bot)
    heard = await bot.get_updates(offset=offset, timeout=probe)
    if heard:
        offset = heard[-1].update_id + 1
    code = PairingCode(expires=expires, clock=clock)
    pairing = Pairing(code, "telegram")
    say(
        f"To pair, send this code to @{me.username} in a private chat on Telegram: {code.shown}\n"
        f"It works once, for {expires / 60:g} minutes."
    )
    while not code.expired:
        updates = await bot.get_updates(
            offset=offset, timeout=min(POLL, max(1, int(code.remaining))), allowed_updates=["message"]
        )
        for update in updates:
            offset = update.update_id + 1
            message = _private_text(update)
            if message is None or message.from_user is None:
                continue
            sender = message.from_user
            text = message.text or ""
            if text.strip().lower() == "/start":
                await _reply(message, START)
                continue
            if await pairing.take(str(sender.id), text.removeprefix("/start "), partial(_reply, message)):
                await bot.get_updates(offset=offset, timeout=0)  # confirmed, so the bridge never reads the code
                name = sender.full_name + (f" (@{sender.username})" if sender.username else "")
                say(f"Paired: @{me.username} answers {name}, Telegram user {sender.id}, and nobody else.")
                section = Section(owner=sender.id, owner_name=sender.full_name, bot=me.username or "", bot_id=me.id)
                return Connected(identity=identity(me.id), section=section.model_dump(), secrets={SECRET: token})
    await bot.get_updates(offset=offset, timeout=0)
    raise pairing.expired(f"@{me.username}", expires)


async def _skip_backlog(bot: Bot) -> int | None:
    """Messages sent to the bot before this connect pair nobody: confirm them unread."""
    last = await bot.get_updates(offset=-1, timeout=0)
    if not last:
        return None
    offset = last[-1].update_id + 1
    await bot.get_updates(offset=offset, timeout=0)
    return offset


def _private_text(update: Update) -> Message | None:
    message = update.message
    if message is None or message.chat.type != ChatType.PRIVATE or message.text is None:
        return None
    return message


async def _reply(message: Message, text: str) -> None:
    """Tell the sender how it went; a reply lost to the network doesn't stop pairing."""
    try:
        await message.reply_text(text)
    except TelegramError as exc:
        say(f"(couldn't answer on Telegram: {exc.message})")


def run(token_stdin: bool, taken: frozenset[str]) -> Connected:
    return asyncio.run(connect(read_tokens([BOT_TOKEN], token_stdin)[SECRET], taken))
