"""`lnk-discord connect`: take the bot token, check it, and pair the owner by a one-time code.

The token is checked by logging in (`GET /users/@me`), and refused when another agent here has
the bot: Discord sends a bot's messages to every connection it has, so two agents would both
answer. Then the bot connects to the Gateway with only the intents the bridge needs, since a bot
can't list its direct messages over HTTP, and only once it's connected is the code printed, so a
code sent at once can't go unseen. Whoever sends it to the bot in a direct message becomes the
owner, and the terminal says so. A code that comes after it expired pairs nobody, and its sender
is told so.
"""

from __future__ import annotations

import asyncio
import time
from collections.abc import Callable
from functools import partial

import aiohttp
import discord

from link_plugin.bridge.pairing import EXPIRES, Pairing, PairingCode
from link_plugin.bridge.tokens import read_tokens
from link_plugin.channel import Connected
from link_plugin.errors import LinkError
from link_plugin.plugin import say
from link_plugin.waits import within
from lnk_discord.api import Gateway, find_gateway
from lnk_discord.messages import read
from lnk_discord.section import BOT_TOKEN, SECRET, Section, identity

LISTEN = 10.0
"""Seconds between looks at the clock while waiting for the code."""
PERMISSIONS = 1024 + 2048 + 64 + 65536
"""What the bot needs in a server: view channels, send messages, add reactions, read message history."""


class _Pairing(Gateway):
    """The Gateway while the code is shown: direct messages to a queue, once it listens."""

    def __init__(self) -> None:
        super().__init__()
        self.ready = asyncio.Event()
        self.heard: asyncio.Queue[discord.Message] = asyncio.Queue()
        self.listening = False

    async def on_connect(self) -> None:
        self.ready.set()

    async def on_message(self, message: discord.Message) -> None:
        if self.listening:
            self.heard.put_nowait(message)


async def connect(
    token: str,
    taken: frozenset[str],
    *,
    expires: float = EXPIRES,
    clock: Callable[[], float] = time.monotonic,
) -> Connected:
    client = _Pairing()
    gateway: asyncio.Task[None] | None = None
    try:
        me = await _log_in(client, token)
        if identity(me.id) in taken:
            raise LinkError(
                f"another agent here has @{me.name}: Discord sends a bot's messages to every connection it has",
                "Make a bot for this agent in the Discord Developer Portal, or disconnect it from the other "
                "agent first.",
            )
        gateway = asyncio.create_task(client.connect(reconnect=False))
        await _connected(client, gateway)
        code = PairingCode(expires=expires, clock=clock)
        pairing = Pairing(code, "discord")
        client.listening = True
        say(
            f"Invite @{me.name} to a server you're in, so you can write to it: "
            f"https://discord.com/oauth2/authorize?client_id={client.application_id}&scope=bot&permissions={PERMISSIONS}\n"
            f"To pair, send this code to @{me.name} in a direct message on Discord: {code.shown}\n"
            f"It works once, for {expires / 60:g} minutes."
        )
        while not code.expired:
            try:
                message = await within(client.heard.get(), min(LISTEN, max(0.1, code.remaining)))
            except TimeoutError:
                continue
            heard = read(message, me.id)
            if heard is None or not heard.incoming.direct or not heard.text:
                continue
            if await pairing.take(heard.incoming.sender, heard.text, partial(_reply, message)):
                author = message.author
                say(f"Paired: @{me.name} answers {author.name}, Discord user {author.id}, and nobody else.")
                section = Section(
                    owner=str(author.id), owner_name=author.name, dm=heard.chat, bot=me.name, bot_id=str(me.id)
                )
                return Connected(identity=identity(me.id), section=section.model_dump(), secrets={SECRET: token})
        raise pairing.expired(f"@{me.name}", expires)
    finally:
        await client.close()
        if gateway is not None:
            gateway.cancel()


async def _log_in(client: Gateway, token: str) -> discord.ClientUser:
    try:
        await client.login(token)
        await find_gateway(client)
    except discord.LoginFailure:
        raise LinkError(
            "Discord refused the bot token: it was reset, or mistyped",
            "Copy it again (Discord Developer Portal, your application, Bot, Reset Token), then connect again.",
        ) from None
    except (TimeoutError, aiohttp.ClientError, OSError, discord.DiscordServerError) as exc:
        raise LinkError(
            f"Discord can't be reached ({type(exc).__name__})", "Check the network, then connect again."
        ) from None
    assert client.user is not None
    return client.user


async def _connected(client: _Pairing, gateway: asyncio.Task[None]) -> None:
    """Connected to the Gateway (READY), or why not."""
    ready = asyncio.create_task(client.ready.wait())
    await asyncio.wait([gateway, ready], return_when=asyncio.FIRST_COMPLETED)
    ready.cancel()
    if not client.ready.is_set():
        try:
            await gateway
        except discord.ConnectionClosed as exc:
            raise LinkError(
                f"Discord's Gateway closed the connection ({exc.code}: {exc.reason})",
                "Check the bot's token, then connect again.",
            ) from None
        raise LinkError("Discord's Gateway closed the connection", "Check the network, then connect again.")


async def _reply(message: discord.Message, text: str) -> None:
    """Tell the sender how it went; a reply lost to the network doesn't stop pairing."""
    try:
        await message.channel.send(text)
    except (discord.HTTPException, aiohttp.ClientError) as exc:
        say(f"(couldn't answer on Discord: {type(exc).__name__})")


def run(token_stdin: bool, taken: frozenset[str]) -> Connected:
    return asyncio.run(connect(read_tokens([BOT_TOKEN], token_stdin)[SECRET], taken))
