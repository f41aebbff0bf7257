"""`lnk-slack bridge`: carry the owner's Slack messages to the agent's endpoint and back.

One Socket Mode connection per app (slack-sdk's aiohttp client, which connects again by itself
when Slack asks it to or the connection goes stale). Each envelope is acknowledged the moment it
arrives, before anything else, so Slack doesn't send it again, and handled on its own, so a long
answer never holds up the next message. The owner's direct messages, and their mentions of the
app in a channel (`app_mention`), are carried, each with its key (`<channel id>:<ts>`, the same
when Slack sends an event again: it is carried once); a channel is a conversation of its own
(`slack:<channel id>`), answered there. Nobody else's message is carried, a channel message that
doesn't mention the app neither, and a stranger gets no answer at all. While a message is
answered 👀 is on it (Slack shows no bot typing), taken away once the answer is whole.

Given the agent's control socket (`BridgeSpec.approvals`), tool calls waiting for the owner are
asked in the owner's direct message with Allow and Deny buttons; the owner's press, or their
"yes" or "no" while a question is shown, answers it and is never carried. What every channel
shares is `link_plugin.bridge.base.Bridge`; this is Slack's connection.
"""

from __future__ import annotations

import asyncio
from collections.abc import AsyncIterator
from contextlib import asynccontextmanager, suppress
from typing import Unpack

from slack_sdk.errors import SlackApiError
from slack_sdk.socket_mode.aiohttp import SocketModeClient
from slack_sdk.socket_mode.async_client import AsyncBaseSocketModeClient
from slack_sdk.socket_mode.request import SocketModeRequest
from slack_sdk.socket_mode.response import SocketModeResponse
from slack_sdk.web.async_client import AsyncWebClient

from link_plugin.backoff import Backoff
from link_plugin.bridge.asking import Said
from link_plugin.bridge.base import Bridge, Timing, secret
from link_plugin.bridge.carry import Place
from link_plugin.bridge.pairing import paired
from link_plugin.bridge.retry import Interrupted, RetryLater, retrying
from link_plugin.channel import BridgeSpec
from link_plugin.errors import LinkError
from link_plugin.plugin import say
from lnk_slack.api import LIMIT, REVOKED, TIMEOUT, error, socket_client, translated, web_client
from lnk_slack.chat import SlackChat
from lnk_slack.messages import pressed, read, thread_of
from lnk_slack.section import APP_SECRET, BOT_SECRET, TITLE, Section

CHANNEL = "slack"

_REVOKED = LinkError(
    "Slack refused the app's tokens: they were revoked, or the app was uninstalled",
    "Run `lnk agent connect slack` again with the app's current tokens.",
)


class SlackBridge(Bridge):
    def __init__(self, spec: BridgeSpec, *, timeout: int = TIMEOUT, **timing: Unpack[Timing]) -> None:
        self._section = paired(Section, spec.section, TITLE, CHANNEL)
        super().__init__(spec, CHANNEL, self._section.owner, limit=LIMIT, **timing)
        self._app_token = secret(spec, APP_SECRET, CHANNEL)
        self._web: AsyncWebClient = web_client(secret(spec, BOT_SECRET, CHANNEL), timeout=timeout)
        self._me = self._section.bot_user
        self._socket: SocketModeClient | None = None

    async def reach(self) -> str:
        backoff = Backoff(0.5, 30.0)
        while True:
            try:
                me = await self._who_am_i()
                break
            except RetryLater as exc:
                await asyncio.sleep(exc.after)
            except Interrupted as exc:
                if backoff.delay == 0.5:
                    say(f"Slack can't be reached ({exc}); trying again")
                await backoff.wait()
        self._socket = socket_client(self._app_token, self._web)
        self._socket.socket_mode_request_listeners.append(self._envelope)
        await self._socket.connect()  # type: ignore[no-untyped-call]  # slack-sdk's, untyped
        return f"the Slack app of <@{me}> in {self._section.team or 'its workspace'}"

    async def _who_am_i(self) -> str:
        """Both tokens checked with Slack: the bot's (`auth.test`) and the app's (`apps.connections.open`)."""
        try:
            with translated():
                me = await self._web.auth_test()
                await self._web.apps_connections_open(app_token=self._app_token)
        except SlackApiError as exc:
            if error(exc) in REVOKED:
                raise _REVOKED from None
            raise
        self._me = str(me["user_id"])
        return self._me

    async def listen(self) -> None:
        """Slack's envelopes come to `_envelope` on the client's own tasks: wait until cancelled."""
        await asyncio.Event().wait()

    async def close(self) -> None:
        if self._socket is not None:
            await self._socket.close()  # type: ignore[no-untyped-call]

    def place(self, chat: str) -> SlackChat:
        return SlackChat(self._web, chat)

    def owner_chat(self) -> SlackChat:
        return SlackChat(self._web, self._section.dm)

    async def _envelope(self, client: AsyncBaseSocketModeClient, request: SocketModeRequest) -> None:
        """Acknowledged at once, before anything else: Slack sends an envelope again after 3 s without."""
        await client.send_socket_mode_response(SocketModeResponse(envelope_id=request.envelope_id))
        self.spawn(f"envelope {request.envelope_id}", self._handle(request))

    async def _handle(self, request: SocketModeRequest) -> None:
        if request.type == "interactive":
            await self._press(request)
            return
        if request.type != "events_api":
            return
        event = request.payload.get("event") or {}
        heard = read(event, self._me)
        if heard is not None:
            direct = heard.incoming.direct
            chat = SlackChat(self._web, heard.chat, str(event.get("ts")), thread=None if direct else thread_of(event))
            await self.heard(heard, chat)

    @asynccontextmanager
    async def answering(self, place: Place) -> AsyncIterator[None]:
        """👀 on the owner's message while it's answered: Slack shows no bot typing."""
        if not isinstance(place, SlackChat):
            yield
            return
        with suppress(RetryLater, Interrupted):
            await place.look()
        try:
            yield
        finally:
            # 👀 left behind would say the message is still being answered: retried through flood control.
            with suppress(TimeoutError, SlackApiError):
                await retrying(place.unlook, give_up=60)

    async def _press(self, request: SocketModeRequest) -> None:
        """A press of a question's button. Only the owner's counts; a stranger's gets no answer at all."""
        press = pressed(request.payload)
        if press is None:
            return
        said = await self.press(press.incoming, press.message, press.value)
        if said in (Said.GONE, Said.UNREACHABLE):
            # What the owner pressed no longer waits, or can't be answered now: say so where they pressed.
            with suppress(RetryLater, Interrupted, SlackApiError):
                await self.owner_chat().send(said.value)
