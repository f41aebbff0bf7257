"""`lnk-discord bridge`: carry the owner's Discord messages to the agent's endpoint and back.

One Gateway connection per bot (discord.py's client, which resumes by itself when Discord asks it
to or the connection drops), with only the intents the bridge needs (`api.intents`). Each event
is handled on its own, so a long answer never holds up the next message. The owner's direct
messages, and their mentions of the bot in a server's channel, are carried, each with its key (the
message's id, the same when the Gateway replays it: it is carried once); a channel is a
conversation of its own (`discord:<channel id>`), answered there as a reply. Nobody else's message
is carried, a channel message that doesn't mention the bot neither (a reply to it included), and
a stranger gets no answer at all. "Typing" shows while an answer is written.

Given the agent's control socket (`BridgeSpec.approvals`), tool calls waiting for the owner are
asked in the owner's direct message with Allow and Deny buttons; the owner's press, or their
"yes" or "no" while a question is shown, answers it and is never carried. What every channel
shares is `link_plugin.bridge.base.Bridge`; this is Discord's connection.
"""

from __future__ import annotations

import asyncio
from contextlib import suppress
from typing import Unpack

import aiohttp
import discord

from link_plugin.backoff import Backoff
from link_plugin.bridge.base import Bridge, Timing, secret
from link_plugin.bridge.pairing import paired
from link_plugin.channel import BridgeSpec
from link_plugin.errors import LinkError
from link_plugin.plugin import say
from lnk_discord.api import LIMIT, Gateway, find_gateway
from lnk_discord.chat import DiscordChat
from lnk_discord.messages import pressed, read
from lnk_discord.section import SECRET, TITLE, Section

CHANNEL = "discord"
REVOKED = 4004
"""The Gateway's close code for a token it doesn't take."""

_REVOKED = LinkError(
    "Discord refused the bot token: it was reset, or the bot was deleted",
    "Run `lnk agent connect discord` again with the bot's current token.",
)


class _Listening(Gateway):
    """The Gateway's events, handed to the bridge."""

    def __init__(self, bridge: DiscordBridge) -> None:
        super().__init__()
        self._bridge = bridge

    async def on_connect(self) -> None:
        self._bridge.connected.set()

    async def on_message(self, message: discord.Message) -> None:
        self._bridge.spawn(f"message {message.id}", self._bridge.message(message))

    async def on_raw_message_edit(self, payload: discord.RawMessageUpdateEvent) -> None:
        if payload.data.get("edited_timestamp"):  # not an embed's unfurling
            self._bridge.spawn(f"edit {payload.message_id}", self._bridge.message(payload.message, edited=True))

    async def on_interaction(self, interaction: discord.Interaction) -> None:
        self._bridge.spawn(f"interaction {interaction.id}", self._bridge.interaction(interaction))


class DiscordBridge(Bridge):
    def __init__(self, spec: BridgeSpec, **timing: Unpack[Timing]) -> None:
        self._section = paired(Section, spec.section, TITLE, CHANNEL)
        super().__init__(spec, CHANNEL, self._section.owner, limit=LIMIT, **timing)
        self._token = secret(spec, SECRET, CHANNEL)
        self._client: _Listening | None = None
        self._gateway: asyncio.Task[None] | None = None
        self.connected = asyncio.Event()

    @property
    def client(self) -> _Listening:
        assert self._client is not None, "reached first"
        return self._client

    async def reach(self) -> str:
        backoff = Backoff(0.5, 30.0)
        while True:
            client = _Listening(self)
            try:
                await client.login(self._token)
                await find_gateway(client)
                break
            except discord.LoginFailure:
                await client.close()
                raise _REVOKED from None
            except (TimeoutError, aiohttp.ClientError, OSError, discord.DiscordServerError) as exc:
                await client.close()
                if backoff.delay == 0.5:
                    say(f"Discord can't be reached ({type(exc).__name__}); trying again")
            await backoff.wait()
        self._client = client
        self._gateway = asyncio.create_task(client.connect(reconnect=True))
        connected = asyncio.create_task(self.connected.wait())
        await asyncio.wait([self._gateway, connected], return_when=asyncio.FIRST_COMPLETED)
        connected.cancel()
        if self._gateway.done():
            await self.listen()
        assert client.user is not None
        return f"@{client.user.name}"

    async def listen(self) -> None:
        """discord.py reads the Gateway on its own task, handing events to `_Listening`: wait on it."""
        assert self._gateway is not None
        try:
            await self._gateway
        except discord.ConnectionClosed as exc:
            if exc.code == REVOKED:
                raise _REVOKED from None
            raise

    async def close(self) -> None:
        if self._client is not None:
            await self._client.close()
        if self._gateway is not None:
            self._gateway.cancel()
            with suppress(asyncio.CancelledError, discord.ConnectionClosed):
                await self._gateway

    def place(self, chat: str) -> DiscordChat:
        return DiscordChat(self.client, int(chat))

    def owner_chat(self) -> DiscordChat:
        return DiscordChat(self.client, int(self._section.dm))

    async def message(self, message: discord.Message, *, edited: bool = False) -> None:
        assert self.client.user is not None
        heard = read(message, self.client.user.id, edited=edited)
        if heard is not None:
            direct = heard.incoming.direct
            await self.heard(heard, DiscordChat(self.client, message.channel.id, message.id, reply=not direct))

    async def interaction(self, interaction: discord.Interaction) -> None:
        """A press of a question's button. Only the owner's counts; a stranger's gets no answer at all."""
        press = pressed(interaction)
        if press is None:
            return
        said = await self.press(press.incoming, press.message, press.value)
        if said is not None:
            # One try: the press is answered already; this only tells whoever pressed it, privately.
            with suppress(discord.HTTPException, aiohttp.ClientError):
                await interaction.response.send_message(said.value, ephemeral=True)
