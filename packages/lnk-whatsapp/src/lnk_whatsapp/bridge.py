"""`lnk-whatsapp bridge`: carry the owner's WhatsApp messages to the agent's endpoint and back.

The bridge never speaks WhatsApp itself: it runs `lnk-whatsapp engine` on the linked device in
the channel's folder and drives it over JSON lines (`protocol`). An engine that ends is started
again, after a wait that doubles while it keeps ending before it is ready (up to 30 s); a call
made meanwhile fails as interrupted and is tried again once the new engine runs, a send under the
same ref, so nothing is sent twice; a message WhatsApp delivers again to the new engine is carried
once (by its key).

The owner (the number typed at `connect`) is carried in their direct chat with the account, and
in a group when they mention it, answered there quoting their message; nobody else is carried,
and a stranger gets no answer at all. WhatsApp caps how often a message can be edited, so typing
shows while the agent writes and the answer is sent whole, split past 65,536 characters. Tool
calls waiting for the owner are asked in their chat and answered by their reply of yes or no.
What every channel shares is `link_plugin.bridge.base.Bridge`; this is WhatsApp's connection.
"""

from __future__ import annotations

import asyncio
import os
import time
from pathlib import Path
from typing import Unpack

from link_plugin.backoff import Backoff
from link_plugin.bridge.base import Bridge, Timing
from link_plugin.bridge.pairing import paired
from link_plugin.channel import ENV_CHANNEL_DIR, BridgeSpec
from link_plugin.errors import LinkError
from link_plugin.plugin import say
from lnk_whatsapp.chat import LIMIT, WhatsAppChat
from lnk_whatsapp.messages import read
from lnk_whatsapp.process import EngineProcess
from lnk_whatsapp.protocol import Event
from lnk_whatsapp.section import TITLE, Section

CHANNEL = "whatsapp"
STEADY = 30.0
"""Seconds an engine must have run for its end to start the waits before a restart over."""

_UNLINKED = LinkError(
    "WhatsApp logged the agent's device out: it was removed in Linked devices, or unused too long",
    "Run `lnk agent connect whatsapp` again to link it.",
)


def _folder(spec: BridgeSpec) -> Path:
    """Where the linked device is: the spec's folder, or `LNK_CHANNEL_DIR` as at connect."""
    folder = spec.folder or os.environ.get(ENV_CHANNEL_DIR)
    if not folder:
        raise LinkError(
            "the bridge got no channel folder, where the linked device is kept",
            "Start it with `lnk agent start`: Link hands a WhatsApp bridge the channel's folder.",
        )
    return Path(folder)


class WhatsAppBridge(Bridge):
    def __init__(
        self, spec: BridgeSpec, *, restarts: tuple[float, float] = (0.5, 30.0), **timing: Unpack[Timing]
    ) -> None:
        self._section = paired(Section, spec.section, TITLE, CHANNEL)
        super().__init__(spec, CHANNEL, self._section.owner, limit=LIMIT, whole=True, **timing)
        self.engine = EngineProcess(_folder(spec))
        self._backoff = Backoff(*restarts)
        self._me: list[str] = []
        self._started = 0.0

    async def reach(self) -> str:
        await self._start()
        while not await self._until_ready():
            await self._restart()
        return f"+{self._me[0]}"

    async def _start(self) -> None:
        await self.engine.start()
        self._started = time.monotonic()

    async def _restart(self) -> None:
        """Start the engine again, after a wait that grows while it keeps ending early."""
        if time.monotonic() - self._started >= STEADY:
            self._backoff.reset()
        wait = self._backoff.next()
        say(f"the WhatsApp engine ended (exit {self.engine.returncode}); starting it again in {wait:g} s")
        await asyncio.sleep(wait)
        await self._start()

    async def _until_ready(self) -> bool:
        """Events until the engine is connected (True), or it ended (False)."""
        while (event := await self.engine.events.get()) is not None:
            if event.event == "ready":
                self._me = event.me
                return True
            self._other(event)
        return False

    def _other(self, event: Event) -> None:
        if event.event == "logged_out":
            raise _UNLINKED
        if event.event == "qr":
            raise LinkError(
                "the agent's WhatsApp device isn't linked",
                "Run `lnk agent connect whatsapp` to link it, then start the agent again.",
            )
        if event.event == "disconnected":
            say(f"WhatsApp can't be reached ({event.why or 'the connection dropped'}); the engine connects again")
        elif event.event == "message" and event.message is not None:
            self._heard(event)

    async def listen(self) -> None:
        while True:
            event = await self.engine.events.get()
            if event is not None:
                self._other(event)
                continue
            await self._restart()
            while not await self._until_ready():
                await self._restart()

    def _heard(self, event: Event) -> None:
        message = event.message
        assert message is not None
        heard = read(message, self._me)
        place = WhatsAppChat(self.engine, message.chat, message.id, message.sender, quote=message.group)
        self.spawn(f"message {message.id}", self.heard(heard, place))

    async def close(self) -> None:
        await self.engine.stop()

    def place(self, chat: str) -> WhatsAppChat:
        return WhatsAppChat(self.engine, chat)

    def owner_chat(self) -> WhatsAppChat:
        return WhatsAppChat(self.engine, self._section.owner_chat)
